import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

/// `earshot trackers --capture` on the shared captures: the trackers each
/// one holds with a handle (docs/trackers.md's conformance table), the
/// frames without one counted, and nothing following in a few minutes at
/// one place.
final class TrackersCommandTests: XCTestCase {
  func testSharedCapturesListTheirTrackersAndNoneFollows() throws {
    // capture: (reports, trackers kept, frames without a handle)
    let expected: [String: (Int, Int, Int)] = [
      "ashmartian_happyleaf.btsnoop": (9, 1, 0),
      "blakete_boston-mesh.hackrf-20ch.le-ll-phdr.pcap": (1_939, 2, 22),
      "blakete_boston-mesh.take3-adv38.le-ll-phdr.pcap": (5_783, 0, 149),
      "csacca_horizon-74-at-ble.btsnoop": (412, 2, 0),
      "dandwhelan_fossibot-bluetooth.btsnoop": (7_426, 1, 282),
      "nick0451_dsp408-tuner.btsnoop": (154, 1, 9),
      "whoisbe_pongbot-mcp.btsnoop": (460, 0, 2),
    ]
    for (name, (reports, kept, unnamed)) in expected {
      let path = try SharedData.url("ble/captures/" + name).path
      for level in ["high", "medium"] {
        let r = try runEarshot(["trackers", "--capture", path, "--sensitivity", level])
        XCTAssertEqual(r.status, 0, "\(name): \(r.err)")
        let lines = r.out.split(separator: "\n").map(String.init)
        XCTAssertEqual(
          lines.first,
          "\(reports) reports; \(kept) tracker(s) kept, \(unnamed) frame(s) of trackers without a handle; sensitivity \(level)",
          name)
        XCTAssertEqual(lines.count, kept + 2, "\(name): \(r.out)")
        XCTAssertEqual(lines.last, "following: 0", name)
        XCTAssertFalse(r.out.contains("FOLLOWING"), name)
      }
    }
    // nick0451's one separated AirTag, as the decoder reads it.
    let nick = try runEarshot([
      "trackers", "--capture",
      try SharedData.url("ble/captures/nick0451_dsp408-tuner.btsnoop").path,
    ])
    XCTAssertTrue(
      nick.out.contains(
        "1: Find My (separated): airtag separated battery medium address CF:23:79:7A:AE:9B, first 23:30:57, last 23:30:57, 1 sighting(s), -88 dBm, 0 place(s)"
      ), nick.out)
  }

  func testAnEnrolledAddressIsShownTrustedAndABadLevelIsRefused() throws {
    let dir = try makeTempDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let conf = dir + "/earshot.conf"
    try "[trackers]\ntrusted = CF:23:79:7A:AE:9B\n".write(
      toFile: conf, atomically: true, encoding: .utf8)
    let path = try SharedData.url("ble/captures/nick0451_dsp408-tuner.btsnoop").path
    let r = try runEarshot(["trackers", "--capture", path, "--config", conf])
    XCTAssertEqual(r.status, 0, r.err)
    XCTAssertTrue(r.out.contains("0 place(s), trusted\n"), r.out)
    let bad = try runEarshot(["trackers", "--capture", path, "--sensitivity", "extreme"])
    XCTAssertNotEqual(bad.status, 0)
    XCTAssertTrue(bad.err.contains("--sensitivity expects high, medium or low"), bad.err)
    let none = try runEarshot(["trackers"])
    XCTAssertNotEqual(none.status, 0)
    XCTAssertTrue(none.err.contains("--capture FILE"), none.err)
  }

  /// `earshot run --input` with [trackers] enabled: the capture's reports
  /// reach the watch through the agent's monitor, and `status` lists them.
  func testTheAgentWatchesAReplayedCapture() throws {
    let dir = try makeTempDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    var config = Config()
    config.trackers.enabled = true
    let path = try SharedData.url("ble/captures/blakete_boston-mesh.hackrf-20ch.le-ll-phdr.pcap")
      .path
    let agent = try Agent(
      config: config.inTest(dir),
      surroundings: .test(directory: dir, reports: CaptureReports(path: path)))
    try agent.start()
    let rows = try XCTUnwrap(agent.trackers).watch.rows
    XCTAssertEqual(rows.map(\.frame.kind), [.findMyAccessory, .appleDevice])
    XCTAssertEqual(rows.map(\.sightings), [5, 3])
    guard case .array(let shown) = agent.daemon.statusJSON()["trackers"] ?? .null else {
      return XCTFail("no trackers section in status")
    }
    XCTAssertEqual(shown.count, 2)
    XCTAssertEqual(shown.first?["protocol"], .string("Find My (separated)"))
    XCTAssertEqual(shown.first?["following"], .bool(false))
  }
}
