import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// The find-phone flow through `earshot run` (a subprocess) over its socket.
/// Audio is measured end to end once the ALSA player is wired in; here the
/// agent has no alert output and rings silently, and the tests check the
/// protocol: who gets a notice, when, and that nothing rings again.
final class FindPhoneProcessTests: XCTestCase {
  func testDeviceStartRingsAndFoundSendsTheNotice() throws {
    let agent = try AgentProcess()
    let buds = try ControlClient.device("buds", at: agent.socket)
    let watcher = try agent.client()
    _ = try watcher.ok(.subscribe([.find]))
    XCTAssertEqual(try buds.ok(.findStart)["result"], .string("ringing"))

    let status = try agent.client().ok(.status)
    XCTAssertEqual(status["find"]?["state"], .string("ringing"))
    XCTAssertEqual(status["find"]?["requesters"], .array([.string("socket:buds")]))

    let found = try runEarshot(["found", "--socket", agent.socket])
    XCTAssertEqual(found.status, 0, found.err)
    XCTAssertTrue(found.out.contains("\"notify\":[\"socket:buds\"]"), found.out)

    let notice = try XCTUnwrap(try buds.waitFor(event: "notice"))
    XCTAssertEqual(notice["kind"], .string("phone_found"))
    let id = try XCTUnwrap(notice["notice"]?.integer)
    _ = try buds.ok(.noticeAck(NoticeID(id)))
    let result = try XCTUnwrap(try watcher.waitFor(event: "notice_result"))
    XCTAssertEqual(result["result"], .string("accepted"))
    XCTAssertEqual(result["device"], .string("socket:buds"))

    let after = try agent.client().ok(.findStatus)["find"]
    XCTAssertEqual(after?["state"], .string("idle"))
    XCTAssertEqual(after?["last_end"], .string("found"))
    XCTAssertEqual(after?["outstanding_notices"], .int(0))
    XCTAssertEqual(
      try buds.call(.noticeAck(NoticeID(id)))["error"]?["code"], .string("unknown_notice"),
      "answered once")
  }

  func testDeviceStopSendsNoNotice() throws {
    let agent = try AgentProcess()
    let buds = try ControlClient.device("buds", at: agent.socket)
    XCTAssertEqual(try buds.ok(.findStart)["result"], .string("ringing"))
    XCTAssertEqual(try buds.ok(.findStop)["result"], .string("stopped"))
    let f = try agent.client().ok(.findStatus)["find"]
    XCTAssertEqual(f?["state"], .string("idle"))
    XCTAssertEqual(f?["last_end"], .string("device_stop"))
    XCTAssertEqual(try agent.client().call(.found)["error"]?["code"], .string("not_ringing"))
    let events = try buds.eventsSoFar()
    XCTAssertFalse(events.contains { $0["event"] == .string("notice") }, "\(events)")
    XCTAssertFalse(events.isEmpty, "the find events did arrive")
  }

  func testTwoDevicesOneAlertOwnNoticesAndOneStopDoesNotSilenceTheOther() throws {
    let agent = try AgentProcess()
    let a = try ControlClient.device("a", at: agent.socket)
    let b = try ControlClient.device("b", at: agent.socket)
    XCTAssertEqual(try a.ok(.findStart)["result"], .string("ringing"))
    XCTAssertEqual(try b.ok(.findStart)["result"], .string("joined"))
    XCTAssertEqual(try a.ok(.findStart)["result"], .string("already_requested"))

    // A withdraws: B's request still rings.
    XCTAssertEqual(try a.ok(.findStop)["result"], .string("withdrawn"))
    var f = try agent.client().ok(.findStatus)["find"]
    XCTAssertEqual(f?["state"], .string("ringing"))
    XCTAssertEqual(f?["requesters"], .array([.string("socket:b")]))

    // A asks again; found answers both, each with its own notice.
    XCTAssertEqual(try a.ok(.findStart)["result"], .string("joined"))
    let found = try agent.client().ok(.found)
    XCTAssertEqual(found["notify"], .array([.string("socket:b"), .string("socket:a")]))
    let na = try XCTUnwrap(try a.waitFor(event: "notice"))
    let nb = try XCTUnwrap(try b.waitFor(event: "notice"))
    XCTAssertNotEqual(na["notice"], nb["notice"])
    XCTAssertEqual(na["device"], .string("a"))
    XCTAssertEqual(nb["device"], .string("b"))
    // A's notice fails; nothing rings again, B's still counts.
    _ = try a.ok(.noticeFail(NoticeID(na["notice"]!.integer!), reason: "screen off"))
    _ = try b.ok(.noticeAck(NoticeID(nb["notice"]!.integer!)))
    f = try agent.client().ok(.findStatus)["find"]
    XCTAssertEqual(f?["state"], .string("idle"))
    XCTAssertEqual(f?["outstanding_notices"], .int(0))
    XCTAssertFalse(
      try a.eventsSoFar().contains { $0["event"] == .string("notice") }, "one notice each")
    XCTAssertFalse(
      try b.eventsSoFar().contains { $0["event"] == .string("notice") }, "one notice each")
  }

  func testDeviceRequestsNeedARegisteredDevice() throws {
    let agent = try AgentProcess()
    let c = try agent.client()
    XCTAssertEqual(try c.call(.findStart)["error"]?["code"], .string("not_registered"))
    XCTAssertEqual(try c.call(.volumeGet)["error"]?["code"], .string("unavailable"))
  }

  func testDeviceCommandPrintsAndAcknowledgesTheNotice() throws {
    let agent = try AgentProcess()
    let device = try startDevice(agent, ["--name", "buds"])
    try waitUntilRinging(agent, for: "socket:buds")
    XCTAssertEqual(try runEarshot(["found", "--socket", agent.socket]).status, 0)
    device.process.waitUntilExit()
    XCTAssertEqual(device.process.terminationStatus, 0)
    let lines = device.output().split(separator: "\n").map(String.init)
    XCTAssertEqual(lines.count, 3, "\(lines)")
    XCTAssertEqual(lines.first, #"{"device":"socket:buds","result":"ringing"}"#)
    XCTAssertTrue(lines[1].hasPrefix(#"{"event":"notice","notice":"#), lines[1])
    XCTAssertTrue(lines[2].hasSuffix(#""answered":"accepted"}"#), lines[2])
  }

  func testDeviceCommandCanFailTheNoticeAndNothingRingsAgain() throws {
    let agent = try AgentProcess()
    let watcher = try agent.client()
    _ = try watcher.ok(.subscribe([.find]))
    let device = try startDevice(agent, ["--name", "tag", "--fail-notice"])
    try waitUntilRinging(agent, for: "socket:tag")
    XCTAssertEqual(try runEarshot(["found", "--socket", agent.socket]).status, 0)
    device.process.waitUntilExit()
    XCTAssertTrue(device.output().contains(#""answered":"failed""#), device.output())
    let result = try XCTUnwrap(try watcher.waitFor(event: "notice_result"))
    XCTAssertEqual(result["result"], .string("failed"))
    XCTAssertEqual(try agent.client().ok(.findStatus)["find"]?["state"], .string("idle"))
  }

  func testDeviceCommandEndsWithoutANoticeWhenItsRequestIsStopped() throws {
    let agent = try AgentProcess()
    let device = try startDevice(agent, ["--name", "buds"])
    try waitUntilRinging(agent, for: "socket:buds")
    let stop = try runEarshot([
      "device", "--socket", agent.socket, "--name", "buds", "find", "stop",
    ])
    XCTAssertEqual(stop.out, "{\"device\":\"socket:buds\",\"result\":\"stopped\"}\n")
    device.process.waitUntilExit()
    let out = device.output()
    XCTAssertFalse(out.contains(#""event":"notice""#), out)
    XCTAssertTrue(out.contains(#""last_end":"device_stop""#), out)
  }

  func testStatusAndEventsCommands() throws {
    let agent = try AgentProcess()
    let status = try runEarshot(["status", "--socket", agent.socket])
    XCTAssertEqual(status.status, 0, status.err)
    let parsed = try JSONParser.parse(status.out.trimmingCharacters(in: .newlines))
    XCTAssertEqual(parsed["find"]?["state"], .string("idle"))
    XCTAssertEqual(parsed["regions"], .array([]))

    let events = Process()
    events.executableURL = URL(fileURLWithPath: try earshotBinary())
    events.arguments = ["events", "--socket", agent.socket, "--topics", "find"]
    let outPath = agent.directory + "/events.out"
    _ = FileManager.default.createFile(atPath: outPath, contents: nil)
    events.standardOutput = FileHandle(forWritingAtPath: outPath)
    try events.run()
    // Wait until the events client has subscribed.
    let c = try agent.client()
    while try c.ok(.status)["agent"]?["subscribers"]?.integer ?? 0 < 1 { usleep(10_000) }
    let buds = try ControlClient.device("buds", at: agent.socket)
    _ = try buds.ok(.findStart)
    _ = try c.ok(.found)
    _ = try XCTUnwrap(try buds.waitFor(event: "notice"))
    XCTAssertEqual(agent.stop(), 0)
    events.waitUntilExit()
    XCTAssertEqual(events.terminationStatus, 0)
    let lines = ((try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "").split(
      separator: "\n")
    let states = try lines.map { try JSONParser.parse(String($0))["find"]?["state"]?.string ?? "-" }
    XCTAssertTrue(states.contains("ringing"), "\(lines)")
    XCTAssertEqual(states.last, "idle", "\(lines)")
  }

  func testConfiguredTimeoutEndsTheRingWithoutNotice() throws {
    let agent = try AgentProcess(config: "[find-phone]\ntimeout = 1\n")
    let buds = try ControlClient.device("buds", at: agent.socket)
    XCTAssertEqual(try buds.ok(.findStart)["find"]?["seconds_left"]?.number ?? 99, 1, accuracy: 0.2)
    var lastEnd: JSONValue? = nil
    while lastEnd != .string("timeout") {
      guard let e = try buds.waitFor(event: "find") else { break }
      lastEnd = e["find"]?["last_end"]
    }
    XCTAssertEqual(lastEnd, .string("timeout"))
    XCTAssertFalse(try buds.eventsSoFar().contains { $0["event"] == .string("notice") })
  }

  // MARK: Helpers

  struct DeviceProcess {
    let process: Process
    let outPath: String
    func output() -> String { (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "" }
  }

  private func startDevice(_ agent: AgentProcess, _ args: [String]) throws -> DeviceProcess {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: try earshotBinary())
    p.arguments = ["device", "--socket", agent.socket] + args + ["find", "start"]
    let outPath = agent.directory + "/device-\(UUID().uuidString).out"
    _ = FileManager.default.createFile(atPath: outPath, contents: nil)
    p.standardOutput = FileHandle(forWritingAtPath: outPath)
    try p.run()
    return DeviceProcess(process: p, outPath: outPath)
  }

  /// Follows find events until `device` is listed as ringing.
  private func waitUntilRinging(_ agent: AgentProcess, for device: String) throws {
    let c = try agent.client()
    _ = try c.ok(.subscribe([.find]))
    var f = try c.ok(.findStatus)["find"]
    while f?["requesters"]?.array?.contains(.string(device)) != true {
      guard let e = try c.nextEvent() else { throw SystemError(errno: EPIPE, "agent went away") }
      f = e["find"] ?? f
    }
  }
}
