import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// `[trackers] mqtt`: the following capture (a separated AirTag heard in
/// three places over 90 minutes) replayed through `earshot run` against a
/// real mosquitto, read off the broker's own stream.
final class TrackerMQTTTests: XCTestCase {
  var dir = ""
  let host = MQTTBridge.Options.hostname()
  var base: String { "earshot/\(host)" }
  var node: String { "earshot_" + MQTTTopics.slug(host) }

  override func setUpWithError() throws { dir = try makeTempDirectory() }
  override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

  func config(_ broker: Broker, mqtt: Bool?) -> String {
    var text = "[trackers]\nenabled = true\n"
    if let mqtt { text += "mqtt = \(mqtt)\n" }
    return text + "\n[mqtt]\nhost = 127.0.0.1\nport = \(broker.port)\n"
  }

  func eventually(_ limit: Double = 20, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(limit)
    while Date() < deadline {
      if try condition() { return true }
      usleep(50_000)
    }
    return try condition()
  }

  /// On: Home Assistant's sensor and event configs, the count and the
  /// tracker as attributes (capture time as UTC wall time, no address),
  /// one event not retained; a clear on the control socket takes the count
  /// back to 0 at once.
  func testAFollowingTrackerIsASensorAndOneEvent() throws {
    let broker = try Broker()
    let capture = dir + "/following.btsnoop"
    try writeFollowingCapture(capture)
    let stream = try BrokerStream(broker, dir: dir, topics: ["\(base)/#", "homeassistant/#"])
    let agent = try AgentProcess(
      config: config(broker, mqtt: true), arguments: ["--input", capture])
    XCTAssertTrue(
      eventually { stream.lines.contains { $0.topic == "\(base)/trackers/event" } }, agent.log)
    XCTAssertTrue(
      try eventually { try broker.retained("\(base)/trackers/following").values.first == "1" },
      agent.log)

    let events = stream.lines.filter { $0.topic == "\(base)/trackers/event" }
    XCTAssertEqual(events.count, 1, "one event per tracker that starts to follow")
    XCTAssertEqual(events.first?.retained, false)
    let event = try XCTUnwrap(events.first?.payload)
    // First heard at 00:00; it follows at medium once 60 min and 3 places hold.
    XCTAssertTrue(event.hasPrefix("{\"event_type\":\"following\",\"tracker\":1,"), event)
    XCTAssertTrue(event.contains("\"protocol\":\"find_my\",\"kind\":\"airtag\""), event)
    XCTAssertTrue(event.contains("\"first_seen\":\"2026-01-01T00:00:00Z\""), event)
    XCTAssertTrue(event.contains("\"places\":3"), event)
    XCTAssertFalse(event.contains("C3:11:22"), "no stranger's address leaves: \(event)")

    let retained = try broker.retained("#")
    let attributes = try XCTUnwrap(retained["\(base)/trackers/attributes"])
    XCTAssertTrue(attributes.hasPrefix("{\"trackers\":[{\"tracker\":1,"), attributes)
    XCTAssertTrue(attributes.contains("\"first_seen\":\"2026-01-01T00:00:00Z\""), attributes)
    XCTAssertFalse(attributes.contains("C3:11:22"), attributes)
    XCTAssertNil(retained["\(base)/trackers/event"], "the event is not retained")
    let sensor = try XCTUnwrap(retained["homeassistant/sensor/\(node)/trackers_following/config"])
    XCTAssertTrue(sensor.contains("\"state_topic\":\"\(base)/trackers/following\""), sensor)
    XCTAssertTrue(sensor.contains("\"default_entity_id\":\"sensor.\(node)_trackers_following\""))
    let eventConfig = try XCTUnwrap(
      retained["homeassistant/event/\(node)/tracker_following/config"])
    XCTAssertTrue(eventConfig.contains("\"event_types\":[\"following\"]"), eventConfig)
    XCTAssertTrue(eventConfig.contains("\"state_topic\":\"\(base)/trackers/event\""), eventConfig)

    let clear = try runEarshot(["trackers", "--socket", agent.socket, "--clear", "1"])
    XCTAssertEqual(clear.status, 0, clear.err)
    XCTAssertTrue(
      try eventually(5) { try broker.retained("\(base)/trackers/following").values.first == "0" },
      agent.log)
    XCTAssertEqual(
      try broker.retained("\(base)/trackers/attributes").values.first, "{\"trackers\":[]}")
    XCTAssertEqual(agent.stop(), 0, agent.log)
  }

  /// Off (the default, and said explicitly): the same tracker follows (the
  /// log says so) and nothing about trackers reaches the broker.
  func testOffNothingAboutTrackersIsPublished() throws {
    let broker = try Broker()
    let capture = dir + "/following.btsnoop"
    try writeFollowingCapture(capture)
    for mqtt in [nil, false] as [Bool?] {
      let stream = try BrokerStream(broker, dir: dir, topics: ["#"])
      let agent = try AgentProcess(
        config: config(broker, mqtt: mqtt), arguments: ["--input", capture])
      XCTAssertTrue(agent.waitForLog("tracker following: tracker 1"), agent.log)
      XCTAssertTrue(
        eventually {
          stream.lines.contains { $0.topic == "\(base)/status" && $0.payload == "online" }
        },
        agent.log)
      XCTAssertEqual(agent.stop(), 0, agent.log)
      XCTAssertTrue(eventually { stream.lines.contains { $0.payload == "offline" } })
      let lines = stream.lines
      XCTAssertGreaterThan(lines.count, 3, "the agent published its own topics")
      for line in lines {
        XCTAssertFalse(line.topic.lowercased().contains("tracker"), "\(line.topic) \(line.payload)")
        XCTAssertFalse(
          line.payload.lowercased().contains("tracker"), "\(line.topic) \(line.payload)")
        XCTAssertFalse(line.payload.contains("C3:11:22"), "\(line.topic) \(line.payload)")
      }
    }
  }

  /// `mqtt = true` needs the watch on and a broker: check-config says so.
  func testMQTTWithoutTheWatchOrABrokerIsAConfigError() throws {
    for (text, valid) in [
      ("[trackers]\nmqtt = true\n", false),
      ("[trackers]\nenabled = true\nmqtt = true\n", false),
      ("[trackers]\nmqtt = true\n\n[mqtt]\nhost = 127.0.0.1\n", false),
      ("[trackers]\nenabled = true\nmqtt = true\n\n[mqtt]\nhost = 127.0.0.1\n", true),
    ] {
      let path = dir + "/earshot.conf"
      try text.write(toFile: path, atomically: true, encoding: .utf8)
      let r = try runEarshot(["check-config", "--config", path])
      XCTAssertEqual(r.status == 0, valid, text + r.out + r.err)
      if !valid {
        XCTAssertTrue(
          (r.out + r.err).contains("mqtt = true needs [trackers] enabled = true"),
          r.out + r.err)
      }
    }
  }
}
