import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// `--pace`: replays at N times capture time, for agents and the
/// aggregator in step. Loose bounds on time (a loaded machine runs late,
/// never early); exact checks on what comes out and in what order.
final class PacedReplayTests: XCTestCase {
  var dir = ""

  override func setUpWithError() throws { dir = try makeTempDirectory() }
  override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

  let regions = """
    [region "tag"]
    uuid = 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182
    major = 1
    exit_after = 1

    """

  /// A 3 s capture: a 100 ms tag present 0-1.5 s and 2.5-3 s.
  func threeSecondCapture() throws -> String {
    let spec = dir + "/three.scenario"
    try """
    [scenario]
    duration = 3
    seed = 4
    [beacon "tag"]
    uuid = 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182
    major = 1
    minor = 1
    interval = 0.1
    present = 0-1.5, 2.5-3

    """.write(toFile: spec, atomically: true, encoding: .utf8)
    try regions.write(toFile: dir + "/regions.conf", atomically: true, encoding: .utf8)
    let capture = dir + "/three.btsnoop"
    let r = try runEarshot(["simulate", "scenario", "--spec", spec, "--write", capture])
    XCTAssertEqual(r.status, 0, r.err)
    return capture
  }

  func monitor(_ capture: String, _ extra: [String]) throws -> (out: String, seconds: Double) {
    let started = Date()
    let r = try runEarshot(
      ["monitor", "--config", dir + "/regions.conf", "--input", capture, "--no-range"] + extra)
    XCTAssertEqual(r.status, 0, r.err)
    return (r.out, Date().timeIntervalSince(started))
  }

  func testMonitorAtPaceTenTakesATenthOfTheCaptureAndSaysTheSame() throws {
    let capture = try threeSecondCapture()
    let fast = try monitor(capture, [])
    let paced = try monitor(capture, ["--pace", "10"])
    // The same events at the same capture times, in the same order.
    XCTAssertEqual(paced.out, fast.out)
    let events = paced.out.split(separator: "\n").map {
      try? JSONParser.parse(String($0))["event"]?.string
    }
    XCTAssertEqual(events, ["state", "state", "exit", "enter"])
    // 3 s of capture at 10x: 0.3 s at least (less the first record's
    // few ms), and well short of real time.
    XCTAssertGreaterThan(paced.seconds, 0.28)
    XCTAssertLessThan(paced.seconds, 2.5)
    XCTAssertLessThan(fast.seconds, paced.seconds)
  }

  func testStartAtWaitsForItsMoment() throws {
    let capture = try threeSecondCapture()
    let at = Date().timeIntervalSince1970 + 1
    let paced = try monitor(capture, ["--pace", "10", "--start-at", String(format: "%.3f", at)])
    XCTAssertGreaterThan(Date().timeIntervalSince1970, at + 0.28)
    XCTAssertEqual(paced.out.split(separator: "\n").count, 4)
  }

  func testBadPaceIsAUsageError() throws {
    let capture = try threeSecondCapture()
    for args in [["--pace", "0"], ["--pace", "fast"], ["--start-at", "5"]] {
      let r = try runEarshot(
        ["monitor", "--config", dir + "/regions.conf", "--input", capture] + args)
      XCTAssertEqual(r.status, 2, "\(args): \(r.err)")
    }
    let r = try runEarshot(["run", "--pace", "2", "--no-audio"])
    XCTAssertEqual(r.status, 2, r.err)
    XCTAssertTrue(r.err.contains("--pace needs --input"), r.err)
  }

  func testAgentServesWhileItReplaysAtPace() throws {
    let capture = try threeSecondCapture()
    let started = Date()
    let agent = try AgentProcess(config: regions, arguments: ["--input", capture, "--pace", "2"])
    // The socket answers while the replay is under way (1.5 s at 2x).
    let status = try agent.client().ok(.status)
    XCTAssertEqual(status["monitoring"], .bool(true))
    XCTAssertFalse(agent.log.contains("replayed"), agent.log)
    XCTAssertTrue(agent.waitForLog("replayed \(capture)"), agent.log)
    XCTAssertGreaterThan(Date().timeIntervalSince(started), 1.45)
    // It ends as the unpaced replay does: the tag came back at 2.5 s.
    let states = try XCTUnwrap(try agent.client().ok(.status)["regions"]?.array)
    XCTAssertEqual(states.first?["state"], .string("inside"))
    XCTAssertEqual(agent.stop(), 0, agent.log)
  }
}
