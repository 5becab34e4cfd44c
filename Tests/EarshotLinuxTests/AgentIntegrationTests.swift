import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// `earshot run` with its parts wired: the office scenario capture replayed
/// through the agent's monitor (`--input`), against a real mosquitto on
/// 127.0.0.1 and an unused port.
final class AgentIntegrationTests: XCTestCase {
  var dir = ""
  let host = MQTTBridge.Options.hostname()
  var base: String { "earshot/\(host)" }
  var node: String { "earshot_" + MQTTTopics.slug(host) }

  override func setUpWithError() throws {
    dir = try makeTempDirectory()
  }

  override func tearDown() {
    try? FileManager.default.removeItem(atPath: dir)
  }

  /// The office scenario as a capture, and its regions as config text.
  func officeCapture() throws -> (capture: String, config: String) {
    let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
    let spec = repo.appendingPathComponent("scenarios/office.scenario").path
    let capture = dir + "/office.btsnoop"
    let sim = try Earshot.run([
      "simulate", "scenario", "--spec", spec, "--write", capture, "--truth", dir + "/truth",
    ])
    XCTAssertEqual(sim.status, 0, sim.stderr)
    return (
      capture,
      try String(contentsOf: repo.appendingPathComponent("scenarios/office.conf"), encoding: .utf8)
    )
  }

  func mqttSection(_ broker: Broker) -> String {
    "\n[mqtt]\nhost = 127.0.0.1\nport = \(broker.port)\n"
  }

  /// Polls `condition` (every 50 ms, at most `limit` s so a broken agent
  /// fails instead of hanging); true once it holds.
  @discardableResult
  func eventually(_ limit: Double = 20, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(limit)
    while Date() < deadline {
      if try condition() { return true }
      usleep(50_000)
    }
    return try condition()
  }

  func findState(_ agent: AgentProcess) throws -> JSONValue {
    try XCTUnwrap(try agent.client().ok(.findStatus)["find"])
  }

  // MARK: Tests

  func testReplayedScenarioGivesRetainedStatesAndDiscoveryAndStatus() throws {
    let broker = try Broker()
    let (capture, regions) = try officeCapture()
    let agent = try AgentProcess(
      config: regions + mqttSection(broker), arguments: ["--input", capture])
    var r: [String: String] = [:]
    XCTAssertTrue(
      try eventually {
        r = try broker.retained()
        return r["\(base)/region/lab/state"] != nil && r["\(base)/status"] == "online"
      }, agent.log)
    // The scenario ends with the desk beacon present and the tag gone.
    XCTAssertEqual(r["\(base)/status"], "online")
    XCTAssertEqual(r["\(base)/region/desk/state"], "inside")
    XCTAssertEqual(r["\(base)/region/desk/available"], "online")
    XCTAssertEqual(r["\(base)/region/lab/state"], "outside")
    XCTAssertEqual(r["\(base)/find/state"], "idle")
    for region in ["desk", "lab"] {
      let payload = try XCTUnwrap(r["homeassistant/binary_sensor/\(node)/region_\(region)/config"])
      let config = try XCTUnwrap(
        JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])
      XCTAssertEqual(config["device_class"] as? String, "occupancy")
      XCTAssertEqual(config["state_topic"] as? String, "\(base)/region/\(region)/state")
      XCTAssertEqual(config["payload_on"] as? String, "inside")
      XCTAssertEqual(config["payload_off"] as? String, "outside")
    }
    let deskBeacon = "8f2c1a3e-5b7d-4e90-a1c2-3d4e5f607182-1-10"
    XCTAssertNotNil(r["homeassistant/sensor/\(node)/beacon_\(deskBeacon)/config"])
    let beacon = try XCTUnwrap(r["\(base)/beacon/\(deskBeacon)/state"])
    XCTAssertTrue(beacon.contains("\"proximity\":\"near\""), beacon)
    for object in ["button/\(node)/ring", "button/\(node)/found", "number/\(node)/volume"] {
      XCTAssertNotNil(r["homeassistant/\(object)/config"], object)
    }

    // The control socket says the same.
    let status = try agent.client().ok(.status)
    XCTAssertEqual(status["monitoring"], .bool(true))
    let states = try XCTUnwrap(status["regions"]?.array).map {
      "\($0["region"]!.string!)=\($0["state"]!.string!)"
    }
    XCTAssertEqual(states, ["desk=inside", "lab=outside"])
    let beacons = try XCTUnwrap(status["beacons"]?.array)
    XCTAssertEqual(beacons.first?["region"], .string("desk"))
    XCTAssertEqual(beacons.first?["minor"]?.integer, 10)
    let distances = beacons.compactMap { $0["accuracy"]?.number }
    XCTAssertEqual(distances, distances.sorted(), "nearest first")

    XCTAssertEqual(agent.stop(), 0, agent.log)
    XCTAssertEqual(try broker.retained()["\(base)/status"], "offline", "a clean stop says offline")
  }

  func testLastWillSaysOfflineWhenTheAgentIsKilled() throws {
    let broker = try Broker()
    let (capture, regions) = try officeCapture()
    let agent = try AgentProcess(
      config: regions + mqttSection(broker), arguments: ["--input", capture])
    XCTAssertTrue(
      try eventually { try broker.retained("\(base)/status")["\(base)/status"] == "online" })
    kill(agent.process.processIdentifier, SIGKILL)
    agent.process.waitUntilExit()
    XCTAssertTrue(
      try eventually { try broker.retained("\(base)/status")["\(base)/status"] == "offline" },
      "the broker publishes the last will")
    XCTAssertEqual(
      try broker.retained()["\(base)/region/desk/state"], "inside", "states stay retained")
  }

  func testRingAndFoundButtonsDriveFindPhone() throws {
    let broker = try Broker()
    let (capture, regions) = try officeCapture()
    let agent = try AgentProcess(
      config: regions + mqttSection(broker), arguments: ["--input", capture])
    XCTAssertTrue(
      try eventually { try broker.retained("\(base)/status")["\(base)/status"] == "online" })
    // Pressing again until the agent's subscription is in place is harmless:
    // a second request from the same device stacks nothing.
    XCTAssertTrue(
      try eventually {
        try broker.publish("\(base)/command/ring", "PRESS")
        return try self.findState(agent)["state"]?.string == "ringing"
      }, agent.log)
    let ringing = try findState(agent)
    XCTAssertEqual(ringing["requesters"], .array([.string("mqtt:button")]))
    XCTAssertTrue(
      try eventually {
        try broker.retained("\(base)/find/state")["\(base)/find/state"] == "ringing"
      })
    // Home Assistant's "Find phone" sensor says for whom.
    XCTAssertEqual(
      try broker.retained("\(base)/find/attributes")["\(base)/find/attributes"],
      "{\"requesters\":[\"mqtt:button\"]}")

    try broker.publish("\(base)/command/found", "PRESS")
    XCTAssertTrue(
      try eventually { try self.findState(agent)["state"]?.string == "idle" }, agent.log)
    XCTAssertEqual(try findState(agent)["last_end"], .string("found"))
    XCTAssertTrue(
      try eventually { try broker.retained("\(base)/find/state")["\(base)/find/state"] == "idle" })

    // No mixer in this agent: a volume command is logged and ignored.
    try broker.publish("\(base)/command/volume", "42")
    XCTAssertTrue(
      eventually { agent.log.contains("mqtt: volume 42 ignored: no mixer") }, agent.log)
    try broker.publish("\(base)/command/volume", "loud")
    XCTAssertTrue(
      eventually { agent.log.contains("expected a number from 0 to 100") }, agent.log)
    XCTAssertEqual(try findState(agent)["state"], .string("idle"))
  }

  /// With the real mixer (the PulseAudio test server): the volume number
  /// and mute switch drive it, and a change made elsewhere is published.
  func testVolumeNumberAndMuteSwitchRoundTripWithTheMixer() throws {
    try PulseServer.require()
    try PulseServer.resetSink()
    defer { PulseServer.resetSinkQuietly() }
    let broker = try Broker()
    let agent = try AgentProcess(config: "[audio]\nramp = 0\n" + mqttSection(broker), audio: true)
    XCTAssertTrue(
      try eventually { try broker.retained("\(base)/status")["\(base)/status"] == "online" })
    func sinkPercent() throws -> String {
      let out = try PulseServer.pactl("get-sink-volume", PulseServer.sink)
      return out.split(separator: "/").dropFirst().first?.trimmingCharacters(in: .whitespaces) ?? ""
    }
    XCTAssertTrue(
      try eventually {
        try broker.publish("\(base)/command/volume", "42")
        return try sinkPercent() == "42%"
      }, agent.log)
    XCTAssertTrue(
      try eventually { try broker.retained("\(base)/volume/state")["\(base)/volume/state"] == "42" }
    )
    try broker.publish("\(base)/command/mute", "ON")
    XCTAssertTrue(
      try eventually { try PulseServer.pactl("get-sink-mute", PulseServer.sink).contains("yes") })
    XCTAssertTrue(
      try eventually { try broker.retained("\(base)/mute/state")["\(base)/mute/state"] == "ON" })
    // Someone else changes it: the agent sees the mixer event and publishes it.
    try PulseServer.pactl("set-sink-volume", PulseServer.sink, "60%")
    XCTAssertTrue(
      try eventually {
        try broker.retained("\(base)/volume/state")["\(base)/volume/state"] == "60"
      },
      agent.log)
    XCTAssertEqual(agent.stop(), 0)
  }

  func testBrokerRestartGetsTheStatesRepublished() throws {
    let broker = try Broker()
    let (capture, regions) = try officeCapture()
    let agent = try AgentProcess(
      config: regions + mqttSection(broker), arguments: ["--input", capture])
    XCTAssertTrue(
      try eventually { try broker.retained("\(base)/region/+/state").count == 2 }, agent.log)
    broker.stop()  // no persistence: the broker forgets every retained message
    try broker.start()
    var r: [String: String] = [:]
    XCTAssertTrue(
      try eventually(30) {
        r = try broker.retained()
        return r["\(base)/region/lab/state"] != nil
          && r["homeassistant/binary_sensor/\(node)/region_lab/config"] != nil
      }, agent.log)
    XCTAssertEqual(r["\(base)/status"], "online")
    XCTAssertEqual(r["\(base)/region/desk/state"], "inside")
    XCTAssertEqual(r["\(base)/region/lab/state"], "outside")
    XCTAssertNotNil(r["homeassistant/button/\(node)/ring/config"])
    XCTAssertTrue(agent.process.isRunning)
  }
}

/// The daemon with a monitor on a thread of this process: subscribers see
/// the events of a replay that starts after they subscribed.
final class DaemonMonitorTests: XCTestCase {
  func testSubscribersGetRegionAndRangingEventsAndStatusShowsTheStates() throws {
    let dir = try makeTempDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
    let capture = dir + "/office.btsnoop"
    let sim = try Earshot.run([
      "simulate", "scenario", "--spec",
      repo.appendingPathComponent("scenarios/office.scenario").path,
      "--write", capture,
    ])
    XCTAssertEqual(sim.status, 0, sim.stderr)
    let config = try Config.build(
      IniReader.parse(
        try String(
          contentsOf: repo.appendingPathComponent("scenarios/office.conf"), encoding: .utf8),
        file: "office.conf"))

    let socket = dir + "/control.sock"
    // The agent earshot run builds; the replay starts when the test writes to this pipe.
    var go: [Int32] = [-1, -1]
    XCTAssertEqual(pipe(&go), 0)
    defer {
      close(go[0])
      close(go[1])
    }
    let onGo = TestReports { monitor, agent in
      try agent.loop.watch(FileDescriptor(rawValue: go[0])) { _ in
        var b: UInt8 = 0
        _ = read(go[0], &b, 1)
        agent.loop.unwatch(FileDescriptor(rawValue: go[0]))
        try? monitor.replay(path: capture)
      }
    }
    let agent = try Agent(
      config: config.inTest(dir), surroundings: .test(directory: dir, reports: onGo))
    try agent.start()
    let finished = DispatchSemaphore(value: 0)
    let box = LoopThreadBox(agent)
    let thread = Thread {
      try? box.agent.run()
      finished.signal()
    }
    thread.start()
    defer {
      var b: UInt8 = 1
      _ = write(agent.daemon.stopDescriptor.rawValue, &b, 1)
      finished.wait()
    }

    var client: ControlClient?
    for _ in 0..<200 where client == nil {
      client = try? ControlClient(path: socket)
      if client == nil { usleep(10_000) }
    }
    let c = try XCTUnwrap(client)
    let before = try c.ok(.status)
    XCTAssertEqual(before["monitoring"], .bool(false), "nothing replayed yet")
    _ = try c.ok(.subscribe([.regions, .ranging]))
    var b: UInt8 = 1
    _ = write(go[1], &b, 1)

    var events: [JSONValue] = []
    while let e = try c.nextEvent(timeoutMillis: 30_000) {
      events.append(e)
      if e["event"]?.string == "exit" && e["region"]?.string == "lab" { break }
    }
    let transitions = events.filter { $0["event"]?.string != "range" }.map {
      "\($0["event"]!.string!) \($0["region"]!.string!) \($0["state"]!.string!)"
    }
    XCTAssertEqual(
      transitions,
      [
        "state desk unknown", "state lab unknown", "state desk inside", "state lab inside",
        "exit desk outside", "enter desk inside", "exit lab outside",
      ])
    let ranges = events.filter { $0["event"]?.string == "range" }
    XCTAssertGreaterThan(ranges.count, 100, "one range line per second per region inside")
    XCTAssertEqual(ranges.first?["beacons"]?.array?.first?["minor"]?.integer, 10)

    let status = try c.ok(.status)
    XCTAssertEqual(status["monitoring"], .bool(true))
    XCTAssertEqual(
      status["regions"]?.array?.map { $0["state"]?.string ?? "" }, ["inside", "outside"])
    XCTAssertEqual(status["beacons"]?.array?.count, 1, "the desk beacon is ranged")
  }
}

/// Hands the agent to the thread that runs its loop (and only that thread
/// touches it until it stops).
private final class LoopThreadBox: @unchecked Sendable {
  let agent: Agent
  init(_ agent: Agent) { self.agent = agent }
}
