import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// `mosquitto_sub` from before the agent starts: each line is "RETAINED
/// TOPIC PAYLOAD" (RETAINED 1 for what the broker held at subscribe time,
/// 0 for what arrived live).
final class BrokerStream {
  let process = Process()
  let path: String

  static func subscriber() throws -> String {
    guard let sub = Earshot.tool("mosquitto_sub") else {
      try requireResource("mosquitto_sub (package mosquitto-clients)")
    }
    return sub
  }

  init(_ broker: Broker, dir: String, topics: [String]) throws {
    let sub = try Self.subscriber()
    path = dir + "/stream-\(UUID().uuidString).txt"
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    process.executableURL = URL(fileURLWithPath: sub)
    process.arguments =
      ["-h", "127.0.0.1", "-p", "\(broker.port)", "-F", "%r %t %p"]
      + topics.flatMap { ["-t", $0] }
    process.standardOutput = FileHandle(forWritingAtPath: path)
    process.standardError = FileHandle.nullDevice
    try process.run()
  }

  var lines: [(retained: Bool, topic: String, payload: String)] {
    let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    return text.split(separator: "\n").compactMap { line in
      let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
      guard parts.count >= 2 else { return nil }
      return (parts[0] == "1", String(parts[1]), parts.count > 2 ? String(parts[2]) : "")
    }
  }

  deinit {
    process.terminate()
    process.waitUntilExit()
  }
}

/// What a subscriber (Home Assistant) sees of `earshot run` on a real
/// mosquitto across a restart, a reload and two agents on one host: the
/// order MQTTShownState promises, read off the broker's own stream.
extension AgentIntegrationTests {
  /// The second run of an agent must never let a subscriber take the first
  /// run's region states as current: replayed as Home Assistant evaluates
  /// availability (the agent's status and the region's own, mode "all"),
  /// every moment a region becomes available its state is the new run's.
  /// And the new run's first `state` events, raised before the broker
  /// connection is up, reach `…/events`.
  func testARestartNeverShowsThePreviousRunsStateAndKeepsItsFirstEvents() throws {
    let broker = try Broker()
    let (capture, regions) = try officeCapture()
    let config = regions + mqttSection(broker)
    let first = try AgentProcess(config: config, arguments: ["--input", capture])
    XCTAssertTrue(
      try eventually { try broker.retained("\(base)/region/+/state").count == 2 }, first.log)
    XCTAssertEqual(first.stop(), 0, first.log)
    XCTAssertEqual(try broker.retained("\(base)/status")["\(base)/status"], "offline")

    let stream = try BrokerStream(broker, dir: dir, topics: ["\(base)/#"])
    XCTAssertTrue(eventually { stream.lines.contains { $0.topic == "\(base)/status" } })
    let second = try AgentProcess(
      config: config, arguments: ["--input", capture], directory: first.directory)
    XCTAssertTrue(
      eventually {
        stream.lines.contains {
          !$0.retained && $0.topic == "\(base)/status" && $0.payload == "online"
        }
          && stream.lines.filter { $0.topic == "\(base)/events" }.count >= 4
      }, second.log)

    var held: [String: (payload: String, live: Bool)] = [:]
    var available: [String: Bool] = [:]
    var becameAvailable: [String: Int] = [:]
    for line in stream.lines {
      held[line.topic] = (line.payload, !line.retained)
      XCTAssertFalse(
        line.topic.hasSuffix("/state") && line.topic.contains("/region/")
          && line.payload == "unknown",
        "unknown is said by availability alone: \(line)")
      for region in ["desk", "lab"] {
        let now =
          held["\(base)/status"]?.payload == "online"
          && held["\(base)/region/\(region)/available"]?.payload == "online"
        if now && available[region] != true {
          becameAvailable[region, default: 0] += 1
          let state = held["\(base)/region/\(region)/state"]
          XCTAssertEqual(
            state?.live, true,
            "\(region) became available with the previous run's state \(state?.payload ?? "none")")
        }
        available[region] = now
      }
    }
    XCTAssertEqual(becameAvailable, ["desk": 1, "lab": 1], "\(stream.lines)")
    let events = stream.lines.filter { $0.topic == "\(base)/events" }.map(\.payload)
    for region in ["desk", "lab"] {
      XCTAssertTrue(
        events.contains { $0.contains("\"region\":\"\(region)\",\"state\":\"unknown\"") },
        "the first state event of \(region) reached …/events: \(events)")
    }
    XCTAssertEqual(second.stop(), 0, second.log)
  }

  /// A reload that removes a region takes its discovery config, state and
  /// availability off the broker (Home Assistant then removes the entity),
  /// and leaves the others.
  func testAReloadThatRemovesARegionClearsItFromTheBroker() throws {
    let broker = try Broker()
    let (capture, regions) = try officeCapture()
    let agent = try AgentProcess(
      config: regions + mqttSection(broker), arguments: ["--input", capture])
    let labConfig = "homeassistant/binary_sensor/\(node)/region_lab/config"
    XCTAssertTrue(
      try eventually { try broker.retained()[labConfig] != nil }, agent.log)
    // The same config without [region "lab"].
    let withoutLab = regions.components(separatedBy: "[region \"lab\"]")[0]
    XCTAssertNotEqual(withoutLab, regions)
    try (withoutLab + mqttSection(broker) + "\n[state]\npath = \(agent.directory)/state/regions\n")
      .write(toFile: agent.directory + "/earshot.conf", atomically: true, encoding: .utf8)
    kill(agent.process.processIdentifier, SIGHUP)
    XCTAssertTrue(agent.waitForLog("mqtt: region lab removed"), agent.log)
    var r: [String: String] = [:]
    XCTAssertTrue(
      try eventually {
        r = try broker.retained()
        return r[labConfig] == nil && r["\(base)/region/lab/state"] == nil
          && r["\(base)/region/lab/available"] == nil
      }, "\(r)")
    XCTAssertEqual(r["\(base)/region/desk/state"], "inside")
    XCTAssertNotNil(r["homeassistant/binary_sensor/\(node)/region_desk/config"])
    XCTAssertEqual(r["\(base)/status"], "online")
    XCTAssertEqual(agent.stop(), 0, agent.log)
  }

  /// Two agents on one host with the default client id (a system and a
  /// user agent): both stay connected; neither takes the other's session.
  func testTwoAgentsOnOneHostKeepTheirOwnSessions() throws {
    let broker = try Broker()
    let config = mqttSection(broker)
    let a = try AgentProcess(config: config)
    let b = try AgentProcess(config: config)
    let stream = try BrokerStream(broker, dir: dir, topics: ["\(base)/status"])
    XCTAssertTrue(
      eventually { stream.lines.contains { $0.payload == "online" } }, a.log + b.log)
    // Long enough for several takeovers (the reconnect backoff starts at 1 s).
    sleep(4)
    XCTAssertEqual(a.logCount("connection to"), 0, a.log)
    XCTAssertEqual(b.logCount("connection to"), 0, b.log)
    XCTAssertFalse(
      stream.lines.contains { $0.payload == "offline" && !$0.retained }, "\(stream.lines)")
    XCTAssertEqual(a.stop(), 0)
    XCTAssertEqual(b.stop(), 0)
  }

  /// Two agents forced onto one client id: the broker takes the session
  /// from one to the other, and the log says why and what to do.
  func testASharedClientIDIsNamedInTheLog() throws {
    let broker = try Broker()
    let config = mqttSection(broker) + "client_id = shared-id\n"
    let a = try AgentProcess(config: config)
    let b = try AgentProcess(config: config)
    let why = "another client is probably connected with the same client id 'shared-id'"
    XCTAssertTrue(
      eventually(30) { a.log.contains(why) || b.log.contains(why) }, a.log + "\n" + b.log)
    XCTAssertEqual(a.logCount(why) + b.logCount(why) >= 1, true)
    _ = a.stop()
    _ = b.stop()
  }
}
