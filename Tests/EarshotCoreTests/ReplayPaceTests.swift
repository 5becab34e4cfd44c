import XCTest

@testable import EarshotCore

private func wall(_ micros: Int64) -> WallTime { WallTime(micros: micros) }
private func mono(_ nanos: UInt64) -> MonotonicTime { MonotonicTime(nanos: nanos) }

final class ReplayPaceTests: XCTestCase {
  func testRecordsAreDueAtPaceTimesCaptureTime() {
    let p = ReplayPace(
      pace: 10, captureOrigin: wall(1_000_000_000), clockOrigin: mono(5_000_000_000))
    XCTAssertEqual(p.due(wall(1_000_000_000)), mono(5_000_000_000))
    // 3 s of capture at 10x: 0.3 s.
    XCTAssertEqual(p.due(wall(1_003_000_000)), mono(5_300_000_000))
    // Before the anchor: at once.
    XCTAssertEqual(p.due(wall(999_000_000)), mono(5_000_000_000))
    XCTAssertEqual(p.captureTime(at: mono(5_300_000_000)), wall(1_003_000_000))
    XCTAssertEqual(p.captureTime(at: mono(4_900_000_000)), wall(999_000_000))
    let slow = ReplayPace(pace: 0.5, captureOrigin: wall(0), clockOrigin: mono(0))
    XCTAssertEqual(slow.due(wall(1_000_000)), mono(2_000_000_000))
  }

  func testWallTimeToMonotonic() {
    // Two seconds ahead of the wall clock is two seconds ahead on the monotonic one.
    XCTAssertEqual(
      ReplayPace.monotonic(
        forWall: wall(12_000_000), wallNow: wall(10_000_000), monotonicNow: mono(7_000_000_000)),
      mono(9_000_000_000))
    XCTAssertEqual(
      ReplayPace.monotonic(
        forWall: wall(9_000_000), wallNow: wall(10_000_000), monotonicNow: mono(7_000_000_000)),
      mono(6_000_000_000))
    // Far in the past: clamps at zero instead of wrapping.
    XCTAssertEqual(
      ReplayPace.monotonic(forWall: wall(0), wallNow: wall(10_000_000), monotonicNow: mono(1_000)),
      mono(0))
  }
}
