import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

/// Devices by identity, end to end: `earshot simulate scenario` records
/// what a kitchen and a living-room receiver hear of a phone on rotating
/// resolvable private addresses, a watch on its static identity address
/// and a stranger on non-resolvable addresses carrying the phone's hash;
/// two `earshot run` agents replay them in step into a real mosquitto,
/// resolving with libcrypto's AES; `earshot rooms` places the devices.
extension RoomsIntegrationTests {
  static let phoneKey = "9F4A2C0E5B7D41E8A1C23D4E5F607182"
  static let watchAddress = "C3:5A:10:22:33:44"

  /// One receiver's recording: the phone near it for the first half (or
  /// the second), the watch near the kitchen throughout.
  func identityScenario(phone: String, watch: String) -> String {
    """
    [scenario]
    start = 1767225600
    duration = 300
    seed = 18

    [device "phone"]
    irk = \(Self.phoneKey)
    identity = 00:1A:7D:DA:71:13
    addresses = rpa
    rotate = 40
    tx_power = 8
    interval = 0.5
    loss = 0.3
    present = 0-300
    distance = \(phone)

    [device "watch"]
    identity = \(Self.watchAddress)
    addresses = static
    interval = 1.0
    loss = 0.3
    present = 0-300
    distance = \(watch)

    [device "stranger"]
    irk = \(Self.phoneKey)
    addresses = nrpa
    rotate = 30
    interval = 0.3
    present = 0-300
    distance = 0:0.3

    """
  }

  func testDevicesOnRotatingAddressesArePlacedByIdentityThroughMosquitto() throws {
    let dir = try makeTempDirectory()
    addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
    let broker = try Broker()
    let site = Site(dir: dir, broker: broker, aggregatorOut: dir + "/rooms.out")
    // The phone is by the kitchen receiver until 150 s, then by the living room's.
    let recordings = [
      "kitchen": identityScenario(phone: "0:1, 150:1, 151:7", watch: "0:0.7"),
      "living": identityScenario(phone: "0:7, 150:7, 151:1", watch: "0:6"),
    ]
    for (room, spec) in recordings {
      try spec.write(toFile: "\(dir)/\(room).scenario", atomically: true, encoding: .utf8)
      let sim = try runEarshot([
        "simulate", "scenario", "--spec", "\(dir)/\(room).scenario", "--write",
        "\(dir)/\(room).btsnoop", "--truth", "\(dir)/\(room).truth",
      ])
      XCTAssertEqual(sim.status, 0, sim.err)
    }

    // Everything published under the rooms prefix, to see what the agents send.
    let subOut = dir + "/sub.out"
    let sub = Process()
    sub.executableURL = URL(
      fileURLWithPath: try XCTUnwrap(Earshot.tool("mosquitto_sub"), "mosquitto-clients"))
    sub.arguments = ["-h", "127.0.0.1", "-p", "\(broker.port)", "-t", "earshot/rooms/#", "-v"]
    _ = FileManager.default.createFile(atPath: subOut, contents: nil)
    sub.standardOutput = FileHandle(forWritingAtPath: subOut)
    try sub.run()
    addTeardownBlock {
      if sub.isRunning {
        sub.terminate()
        sub.waitUntilExit()
      }
    }

    // The aggregator places every subject sighted (no track): whatever an
    // agent wrongly published would show up in its timeline.
    let conf = dir + "/rooms.conf"
    try
      (mqtt(site, base: "earshot/aggregator", client: "earshot-rooms-test")
      + "[rooms]\naway_after = 20\n").write(toFile: conf, atomically: true, encoding: .utf8)
    let aggregator = try spawn(
      ["rooms", "--config", conf, "--pace", String(pace)], log: dir + "/rooms.log",
      out: site.aggregatorOut)
    usleep(300_000)
    let at = Int(Date().timeIntervalSince1970) + 2
    var agents: [Process] = []
    for room in recordings.keys.sorted() {
      let d = dir + "/" + room
      try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
      try
        (mqtt(site, base: "earshot/\(room)", client: "earshot-\(room)")
        + "[rooms]\nroom = \(room)\ntrack = phone=irk:\(Self.phoneKey) device:\(Self.watchAddress)\n"
        + "[state]\npath = \(d)/state\n")
        .write(toFile: d + "/earshot.conf", atomically: true, encoding: .utf8)
      agents.append(
        try spawn(
          [
            "run", "--config", d + "/earshot.conf", "--socket", d + "/control.sock",
            "--no-audio", "--state-dir", d, "--input", "\(dir)/\(room).btsnoop", "--pace",
            String(pace), "--start-at", String(at),
          ], log: d + "/agent.log"))
    }
    waitCapture(site, seconds: 300 + 30)  // past the end: both go away
    aggregator.terminate()
    aggregator.waitUntilExit()
    let logs = try recordings.keys.map {
      try String(contentsOfFile: "\(dir)/\($0)/agent.log", encoding: .utf8)
    }.joined(separator: "\n")

    let tag = try IdentityResolvingKey(hex: Self.phoneKey).tag
    let phone = RoomSubject.device(.key(tag: tag))
    let watch = RoomSubject.device(.address(BDAddress(Self.watchAddress)!))
    let text = (try? String(contentsOfFile: site.aggregatorOut, encoding: .utf8)) ?? ""
    let changes = text.split(separator: "\n").compactMap { RoomChange.parse(String($0)) }
    let report = "timeline:\n\(text)\nagents:\n\(logs)"
    XCTAssertEqual(Set(changes.map(\.subject)), [phone, watch], report)
    // The phone: kitchen, then the living room after it moved, then away.
    let phoneRooms = changes.filter { $0.subject == phone }
    XCTAssertEqual(phoneRooms.map(\.room), ["kitchen", "living", nil], report)
    XCTAssertTrue(phoneRooms.allSatisfy { $0.name == "phone" }, "named by the agents: \(report)")
    let moved = Double(phoneRooms[1].t.micros) / 1e6 - 1_767_225_600
    XCTAssertGreaterThan(moved, 151, report)
    XCTAssertLessThan(moved, 151 + 12, report)
    XCTAssertTrue(
      text.contains("\"device\":\"irk#\(tag)\",\"name\":\"phone\",\"room\":\"kitchen\""), text)
    // The watch never leaves the kitchen until the recordings end.
    XCTAssertEqual(changes.filter { $0.subject == watch }.map(\.room), ["kitchen", nil], report)

    // What went over the broker: only the two identities' sightings, each
    // from both rooms, and never the key itself.
    let published = try String(contentsOfFile: subOut, encoding: .utf8)
    let topics = RoomTopics(prefix: "earshot/rooms", shards: 16)
    var sighted: [RoomSubject: Set<String>] = [:]
    for line in published.split(separator: "\n") where line.hasPrefix("earshot/rooms/sighting/") {
      let topic = String(line.prefix { $0 != " " })
      let s = try XCTUnwrap(
        RoomSighting.parse(
          topic: topic, payload: Array(line.dropFirst(topic.count + 1).utf8), topics: topics),
        String(line))
      sighted[s.subject, default: []].insert(s.room)
    }
    XCTAssertEqual(sighted, [phone: ["kitchen", "living"], watch: ["kitchen", "living"]])
    XCTAssertFalse(published.lowercased().contains(Self.phoneKey.lowercased()))
    // The decided rooms are retained, with Home Assistant discovery naming the phone.
    let retained = try broker.retained("earshot/rooms/beacon/+/state")
    let state = try JSONParser.parse(try XCTUnwrap(retained[topics.state(phone)], "\(retained)"))
    XCTAssertEqual(state["device"]?.string, "irk#\(tag)")
    XCTAssertEqual(state["name"]?.string, "phone")
    let discovery = try broker.retained("homeassistant/#")
    let tracker = try XCTUnwrap(
      discovery["homeassistant/device_tracker/earshot_rooms/earshot_room_\(phone.slug)/config"],
      "\(discovery.keys)")
    // The tracker is the device itself (name null): Home Assistant shows "phone".
    XCTAssertEqual(try JSONParser.parse(tracker)["name"], .null)
    XCTAssertEqual(try JSONParser.parse(tracker)["device"]?["name"]?.string, "phone")
    XCTAssertNotNil(
      discovery["homeassistant/sensor/earshot_rooms/earshot_room_\(watch.slug)/config"])
    for a in agents where a.isRunning { a.terminate() }
  }
}
