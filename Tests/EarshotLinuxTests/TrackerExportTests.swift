import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// `earshot trackers --export` and `--plot` on the following capture (a
/// separated AirTag heard in three places over 90 minutes): from the
/// capture, and from the running agent replaying it (the same evidence:
/// its clock is the capture's).
final class TrackerExportTests: XCTestCase {
  var dir = ""
  var capture = ""

  override func setUpWithError() throws {
    dir = try makeTempDirectory()
    capture = dir + "/following.btsnoop"
    try writeFollowingCapture(capture)
  }
  override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

  /// The CSV of tracker 1 at medium: nine sightings kept (one per place per
  /// 15 min), places 1 to 3 and unknown while a place settles, the two
  /// moves, the alert on the sighting at 01:10.
  static let csv = """
    tracker,protocol,kind,address,time,unix_s,place,rssi,moved,alert
    1,find_my,airtag,C3:11:22:33:44:55,2026-01-01T00:00:00Z,1767225600.500,,-60,0,0
    1,find_my,airtag,C3:11:22:33:44:55,2026-01-01T00:10:00Z,1767226200.500,1,-60,0,0
    1,find_my,airtag,C3:11:22:33:44:55,2026-01-01T00:25:00Z,1767227100.500,1,-60,0,0
    1,find_my,airtag,C3:11:22:33:44:55,2026-01-01T00:35:00Z,1767227700.500,,-60,0,0
    1,find_my,airtag,C3:11:22:33:44:55,2026-01-01T00:40:00Z,1767228000.500,2,-60,1,0
    1,find_my,airtag,C3:11:22:33:44:55,2026-01-01T00:55:00Z,1767228900.500,2,-60,0,0
    1,find_my,airtag,C3:11:22:33:44:55,2026-01-01T01:05:00Z,1767229500.500,,-60,0,0
    1,find_my,airtag,C3:11:22:33:44:55,2026-01-01T01:10:00Z,1767229800.500,3,-60,1,1
    1,find_my,airtag,C3:11:22:33:44:55,2026-01-01T01:25:00Z,1767230700.500,3,-60,0,0

    """

  func testTheCaptureExportsAndDrawsItsEvidence() throws {
    let r = try runEarshot(["trackers", "--capture", capture, "--export", "1"])
    XCTAssertEqual(r.status, 0, r.err)
    XCTAssertEqual(r.out, Self.csv)
    let all = try runEarshot(["trackers", "--capture", capture, "--export", "all"])
    XCTAssertEqual(all.out, Self.csv, "one tracker kept: all is tracker 1")

    let json = try runEarshot(["trackers", "--capture", capture, "--export", "1", "--json"])
    XCTAssertEqual(json.status, 0, json.err)
    let e = try XCTUnwrap(TrackerEvidence(json: try JSONParser.parse(json.out)))
    XCTAssertEqual(e.places.map(\.number), [1, 2, 3])
    XCTAssertEqual(e.moves.count, 2)
    XCTAssertEqual(e.following, WallTime(micros: 1_767_229_800_500_000))
    XCTAssertEqual(
      [TrackerEvidence.csvHeader] + e.csvRows + [""],
      Self.csv.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))

    let svg = dir + "/tracker.svg"
    let plot = try runEarshot(["trackers", "--capture", capture, "--plot", "1", "--out", svg])
    XCTAssertEqual(plot.status, 0, plot.err)
    let text = try String(contentsOfFile: svg, encoding: .utf8)
    XCTAssertEqual(text.components(separatedBy: "class=\"sighting\"").count - 1, 9)
    XCTAssertEqual(text.components(separatedBy: "class=\"alert\"").count - 1, 1)
    for row in [">place 1<", ">place 2<", ">place 3<", ">unknown<"] {
      XCTAssertTrue(text.contains(row), row)
    }
  }

  /// Live, the watch's clock (CLOCK_BOOTTIME) becomes wall time by the
  /// time since: a sighting 10 minutes ago is the wall clock less 10 minutes.
  func testLiveTimesBecomeWallTime() {
    let boot = MonotonicTime.zero + .seconds(10_000)
    let driver = TrackerWatchDriver(config: TrackersConfig(), now: { boot }, log: { _ in })
    let before = Clock.wallNow()
    let shown = driver.wall(MonotonicTime.zero + .seconds(9_400))
    let after = Clock.wallNow()
    XCTAssertGreaterThanOrEqual(shown, before - .seconds(600))
    XCTAssertLessThanOrEqual(shown, after - .seconds(600))
    // A time after "now" (never given live) is now, not a time ahead.
    XCTAssertLessThanOrEqual(driver.wall(boot + .seconds(5)), Clock.wallNow())
  }

  func testMistakesAreClearErrors() throws {
    for (args, status, message) in [
      (["--export", "2"], 1 as Int32, "no tracker 2 is kept"),
      (["--plot", "1"], 2, "--plot needs --out FILE.svg"),
      (["--plot", "all", "--out", dir + "/x.svg"], 2, "--plot expects a tracker's number"),
      (["--export", "x"], 2, "--export expects a tracker's number or all"),
      (["--export", "1", "--plot", "1"], 2, "--export and --plot exclude each other"),
      (["--json"], 2, "--json goes with --export or --plot"),
      (["--export", "1", "--png", dir + "/x.png"], 2, "--png goes with --plot"),
    ] {
      let r = try runEarshot(["trackers", "--capture", capture] + args)
      XCTAssertEqual(r.status, status, "\(args): \(r.err)")
      XCTAssertTrue(r.err.contains(message), "\(args): \(r.err)")
    }
  }

  /// The running agent's evidence over the control socket
  /// (`tracker.evidence`) is the capture's, byte for byte; a cleared
  /// tracker has none.
  func testTheRunningAgentExportsTheSameEvidence() throws {
    let agent = try AgentProcess(
      config: "[trackers]\nenabled = true\n", arguments: ["--input", capture])
    XCTAssertTrue(agent.waitForLog("tracker following: tracker 1 "), agent.log)
    let r = try runEarshot(["trackers", "--socket", agent.socket, "--export", "1"])
    XCTAssertEqual(r.status, 0, r.err)
    XCTAssertEqual(r.out, Self.csv)
    let out = dir + "/live.json"
    let json = try runEarshot([
      "trackers", "--socket", agent.socket, "--export", "all", "--json", "--out", out,
    ])
    XCTAssertEqual(json.status, 0, json.err)
    guard case .array(let list) = try JSONParser.parse(String(contentsOfFile: out, encoding: .utf8))
    else { return XCTFail("--export all --json is not an array") }
    XCTAssertEqual(list.compactMap(TrackerEvidence.init(json:)).count, 1)
    let svg = dir + "/live.svg"
    let plot = try runEarshot(["trackers", "--socket", agent.socket, "--plot", "1", "--out", svg])
    XCTAssertEqual(plot.status, 0, plot.err)
    XCTAssertTrue(try String(contentsOfFile: svg, encoding: .utf8).contains("class=\"alert\""))

    _ = try runEarshot(["trackers", "--socket", agent.socket, "--clear", "1"])
    let gone = try runEarshot(["trackers", "--socket", agent.socket, "--export", "1"])
    XCTAssertNotEqual(gone.status, 0)
    XCTAssertTrue(gone.err.contains("no tracker 1 is kept"), gone.err)
    XCTAssertEqual(agent.stop(), 0, agent.log)
  }
}
