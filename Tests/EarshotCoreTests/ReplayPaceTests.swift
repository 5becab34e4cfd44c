import XCTest

@testable import EarshotCore

final class ReplayPaceTests: XCTestCase {
  func testRecordsAreDueAtPaceTimesCaptureTime() {
    let p = ReplayPace(pace: 10, captureOrigin: 1_000_000_000, clockOrigin: 5_000_000_000)
    XCTAssertEqual(p.due(1_000_000_000), 5_000_000_000)
    // 3 s of capture at 10x: 0.3 s.
    XCTAssertEqual(p.due(1_003_000_000), 5_300_000_000)
    // Before the anchor: at once.
    XCTAssertEqual(p.due(999_000_000), 5_000_000_000)
    XCTAssertEqual(p.captureTime(at: 5_300_000_000), 1_003_000_000)
    XCTAssertEqual(p.captureTime(at: 4_900_000_000), 999_000_000)
    let slow = ReplayPace(pace: 0.5, captureOrigin: 0, clockOrigin: 0)
    XCTAssertEqual(slow.due(1_000_000), 2_000_000_000)
  }

  func testWallTimeToMonotonic() {
    // Two seconds ahead of the wall clock is two seconds ahead on the monotonic one.
    XCTAssertEqual(
      ReplayPace.monotonic(forWall: 12_000_000, wallNow: 10_000_000, monotonicNow: 7_000_000_000),
      9_000_000_000)
    XCTAssertEqual(
      ReplayPace.monotonic(forWall: 9_000_000, wallNow: 10_000_000, monotonicNow: 7_000_000_000),
      6_000_000_000)
    // Far in the past: clamps at zero instead of wrapping.
    XCTAssertEqual(
      ReplayPace.monotonic(forWall: 0, wallNow: 10_000_000, monotonicNow: 1_000), 0)
  }
}
