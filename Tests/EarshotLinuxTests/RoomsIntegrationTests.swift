import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

/// Three agents replay a simulated house's per-receiver captures in step
/// (`earshot run --input … --pace`) into a real mosquitto; `earshot rooms`
/// decides from their sightings; its printed timeline is scored against
/// the simulator's truth.
final class RoomsIntegrationTests: XCTestCase {
  static let uuid = "8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182"
  let walker = TrackedID.parse("\(uuid):1:1")!
  let keys = TrackedID.parse("\(uuid):1:2")!
  let pace = 20.0
  let rooms = ["living", "kitchen", "bedroom"]

  /// Five minutes: the walker spends 100 s in each receiver's room; the
  /// keys lie in the kitchen throughout. 30 % loss, 4 dB shadowing and
  /// the residual bias of calibrated receivers (±1 dB).
  let spec = """
    [house]
    start = 1767225600
    duration = 300
    seed = 7
    path_loss_exponent = 2.5
    wall_loss = 5
    shadowing = 4
    shadowing_time = 2
    loss = 0.3
    sensitivity = -100

    [room "living"]
    area = 0 0 5 4
    [room "kitchen"]
    area = 5 0 9 4
    [room "hall"]
    area = 0 4 9 5.5
    [room "bedroom"]
    area = 0 5.5 6 9.5

    [receiver "living"]
    position = 1.5 2
    bias = 1
    [receiver "kitchen"]
    position = 8 2.5
    bias = -1
    [receiver "bedroom"]
    position = 3 8.5
    bias = 0.5

    [beacon "walker"]
    uuid = \(uuid)
    major = 1
    minor = 1
    interval = 1.0
    path = 0: 2 2, 95: 2 2, 100: 7 2, 190: 7 2, 194: 6 4.75, 200: 3 7.5, 300: 3 7.5

    [beacon "keys"]
    uuid = \(uuid)
    major = 1
    minor = 2
    interval = 1.0
    phase = 0.37
    position = 7 2

    """

  struct Site {
    let dir: String
    let broker: Broker
    var agents: [String: Process] = [:]
    var aggregator: Process? = nil
    let aggregatorOut: String
  }

  func makeSite(spec: String? = nil) throws -> Site {
    let dir = try makeTempDirectory()
    addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
    try (spec ?? self.spec).write(toFile: dir + "/house.spec", atomically: true, encoding: .utf8)
    let sim = try runEarshot([
      "simulate", "house", "--spec", dir + "/house.spec", "--write", dir + "/house",
    ])
    XCTAssertEqual(sim.status, 0, sim.err)
    return Site(dir: dir, broker: try Broker(), aggregatorOut: dir + "/rooms.out")
  }

  func mqtt(_ site: Site, base: String, client: String) -> String {
    "[mqtt]\nhost = 127.0.0.1\nport = \(site.broker.port)\nbase_topic = \(base)\nclient_id = \(client)\n"
  }

  func spawn(_ args: [String], log: String, out: String? = nil) throws -> Process {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: try earshotBinary())
    p.arguments = args
    let home = (log as NSString).deletingLastPathComponent
    p.environment = Earshot.environment([
      "HOME": home, "XDG_CONFIG_HOME": home + "/.config", "XDG_STATE_HOME": home + "/.state",
      "EARSHOT_CONFIG": home + "/no-such.conf",
      "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(home)/no-bus",
    ])
    _ = FileManager.default.createFile(atPath: log, contents: nil)
    p.standardError = FileHandle(forWritingAtPath: log)
    if let out {
      _ = FileManager.default.createFile(atPath: out, contents: nil)
      p.standardOutput = FileHandle(forWritingAtPath: out)
    } else {
      p.standardOutput = FileHandle.nullDevice
    }
    try p.run()
    addTeardownBlock {
      if p.isRunning {
        p.terminate()
        p.waitUntilExit()
      }
    }
    return p
  }

  func startAggregator(_ site: inout Site, rooms extra: String = "") throws {
    let conf = site.dir + "/rooms.conf"
    try
      (mqtt(site, base: "earshot/aggregator", client: "earshot-rooms-test")
      + "[rooms]\ntrack = \(Self.uuid)\naway_after = 30\n" + extra)
      .write(toFile: conf, atomically: true, encoding: .utf8)
    site.aggregator = try spawn(
      ["rooms", "--config", conf, "--naive", "--pace", String(pace)], log: site.dir + "/rooms.log",
      out: site.aggregatorOut)
  }

  /// The agents, each replaying its receiver's capture from the same moment
  /// (`extra`: more of a room's `[rooms]` section).
  /// Returns the Unix second their captures' first records play at.
  @discardableResult
  func startAgents(
    _ site: inout Site, rooms: [String]? = nil, extra: [String: String] = [:]
  ) throws -> Int {
    let at = Int(Date().timeIntervalSince1970) + 2
    for room in rooms ?? self.rooms {
      let d = site.dir + "/" + room
      try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
      try
        (mqtt(site, base: "earshot/\(room)", client: "earshot-\(room)")
        + "[rooms]\nroom = \(room)\ntrack = \(Self.uuid)\n\(extra[room] ?? "")[state]\npath = \(d)/state\n")
        .write(toFile: d + "/earshot.conf", atomically: true, encoding: .utf8)
      site.agents[room] = try spawn(
        [
          "run", "--config", d + "/earshot.conf", "--socket", d + "/control.sock", "--no-audio",
          "--state-dir", d, "--input", site.dir + "/house/\(room).btsnoop", "--pace", String(pace),
          "--start-at", String(at),
        ], log: d + "/agent.log")
    }
    return at
  }

  func timeline(_ site: Site) -> (rule: [RoomChange], naive: [RoomChange]) {
    let text = (try? String(contentsOfFile: site.aggregatorOut, encoding: .utf8)) ?? ""
    var rule: [RoomChange] = []
    var naive: [RoomChange] = []
    for line in text.split(separator: "\n") {
      guard let c = RoomChange.parse(String(line)) else { continue }
      if line.contains("\"rule\":\"naive\"") { naive.append(c) } else { rule.append(c) }
    }
    return (rule, naive)
  }

  func truth(_ site: Site) throws -> [RoomChange] {
    try String(contentsOfFile: site.dir + "/house/truth.jsonl", encoding: .utf8)
      .split(separator: "\n").compactMap { RoomChange.parse(String($0), requireEvent: false) }
  }

  /// Waits until message time (the newest change or wall clock) passes
  /// `seconds` of capture, bounded.
  func waitCapture(_ site: Site, seconds: Double) {
    let deadline = Date().addingTimeInterval(seconds / pace + 2 + 20)
    let target = Date().addingTimeInterval(seconds / pace + 2.5)
    while Date() < target && Date() < deadline { usleep(100_000) }
  }

  /// `[rooms] espresense`: an agent's sightings also go out as the
  /// ESPresense firmware sends them, on the topic mqtt_room and
  /// ESPresense-companion subscribe to, with the fields mqtt_room needs.
  func testAnAgentPublishesESPresenseSightings() throws {
    let site = try makeSite()
    let stream = try BrokerStream(site.broker, dir: site.dir, topics: ["espresense/#"])
    let d = site.dir + "/living"
    try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
    try
      (mqtt(site, base: "earshot/living", client: "earshot-living")
      + "[rooms]\nroom = Living Room\ntrack = \(Self.uuid)\nespresense = true\n[state]\npath = \(d)/state\n")
      .write(toFile: d + "/earshot.conf", atomically: true, encoding: .utf8)
    let agent = try spawn(
      [
        "run", "--config", d + "/earshot.conf", "--socket", d + "/control.sock", "--no-audio",
        "--state-dir", d, "--input", site.dir + "/house/living.btsnoop", "--pace", String(pace),
      ], log: d + "/agent.log")
    let deadline = Date().addingTimeInterval(30)
    while stream.lines.count < 20 && Date() < deadline { usleep(100_000) }
    agent.terminate()
    agent.waitUntilExit()
    let lines = stream.lines
    XCTAssertGreaterThanOrEqual(
      lines.count, 20, (try? String(contentsOfFile: d + "/agent.log", encoding: .utf8)) ?? "")
    let walker = "iBeacon:\(Self.uuid.lowercased())-1-1"
    let keys = "iBeacon:\(Self.uuid.lowercased())-1-2"
    XCTAssertEqual(
      Set(lines.map(\.topic)),
      ["espresense/devices/\(walker)/living_room", "espresense/devices/\(keys)/living_room"])
    for line in lines {
      XCTAssertFalse(line.retained)
      let json = try JSONParser.parse(Array(line.payload.utf8))
      // mqtt_room's schema: an id and a distance.
      let id = try XCTUnwrap(json["id"]?.string)
      XCTAssertTrue(line.topic.hasPrefix("espresense/devices/\(id)/"), line.topic)
      XCTAssertGreaterThan(try XCTUnwrap(json["distance"]?.number), 0)
      XCTAssertEqual(json["rssi@1m"]?.number, -59)
      XCTAssertEqual(json["rxAdj"]?.number, 0)
      let mac = try XCTUnwrap(json["mac"]?.string)
      XCTAssertTrue(mac.count == 12 && mac.allSatisfy { "0123456789abcdef".contains($0) }, mac)
      // The firmware's order of fields.
      let order = ["\"mac\"", "\"id\"", "\"rssi@1m\"", "\"rssi\"", "\"rxAdj\"", "\"distance\""]
        .map { line.payload.range(of: $0)?.lowerBound }
      XCTAssertFalse(order.contains(nil), line.payload)
      XCTAssertEqual(order.compactMap { $0 }, order.compactMap { $0 }.sorted(), line.payload)
    }
  }

  func testThreeAgentsInStepGiveARoomTimelineThatMatchesTheTruth() throws {
    var site = try makeSite()
    try startAggregator(&site)
    usleep(300_000)
    try startAgents(&site)
    waitCapture(site, seconds: 300 + 40)  // past the end: the beacons go away
    site.aggregator!.terminate()
    site.aggregator!.waitUntilExit()
    let (rule, naive) = timeline(site)
    let truth = try truth(site)
    let end = Int64(1_767_225_600 + 300) * 1_000_000
    let covered = Set(rooms)
    let score = RoomScore.score(truth: truth, decided: rule, covered: covered, end: end)
    let base = RoomScore.score(truth: truth, decided: naive, covered: covered, end: end)
    let report = "rule: \(score.summary(awayAfter: 30))\nnaive: \(base.summary(awayAfter: 30))"
    print(report)
    XCTAssertGreaterThan(score.scoredSeconds, 400, report)
    XCTAssertLessThan(score.wrongShare, 0.05, report)
    XCTAssertEqual(
      rule.filter { $0.beacon == walker }.compactMap(\.room).prefix(3),
      ["living", "kitchen", "bedroom"], report)
    XCTAssertEqual(score.stationaryChanges, 0, report)
    XCTAssertGreaterThan(base.stationaryChanges, score.stationaryChanges, "the baseline flaps")
    let median = try XCTUnwrap(score.medianConfirm, report)
    XCTAssertLessThanOrEqual(median, 10, report)
    // The captures end: every beacon goes away once.
    XCTAssertEqual(rule.filter { $0.room == nil }.count, 2, report)
  }

  /// ESPresense, in: the bedroom is an ESPresense node (its sightings only
  /// in the firmware's format and topics, its retained status `online`),
  /// the other rooms Earshot agents: the aggregator with
  /// `espresense_nodes = true` places the walker as with three agents.
  func testAnESPresenseNodeBesideTwoAgentsPlacesTheWalkerAsAgentsDo() throws {
    var site = try makeSite()
    let pub = try XCTUnwrap(Earshot.tool("mosquitto_pub"), "mosquitto_pub (mosquitto-clients)")
    let status = Process()
    status.executableURL = URL(fileURLWithPath: pub)
    status.arguments = [
      "-h", "127.0.0.1", "-p", "\(site.broker.port)", "-r", "-t", "espresense/rooms/bedroom/status",
      "-m", "online",
    ]
    try status.run()
    status.waitUntilExit()
    try startAggregator(&site, rooms: "espresense_nodes = true\n")
    usleep(300_000)
    // The bedroom's Earshot sightings go where the aggregator does not
    // listen: only its ESPresense messages reach it.
    try startAgents(&site, extra: ["bedroom": "topic = elsewhere/rooms\nespresense = true\n"])
    waitCapture(site, seconds: 300 + 40)
    site.aggregator!.terminate()
    site.aggregator!.waitUntilExit()
    let (rule, _) = timeline(site)
    let truth = try truth(site)
    let end = Int64(1_767_225_600 + 300) * 1_000_000
    let score = RoomScore.score(truth: truth, decided: rule, covered: Set(rooms), end: end)
    let report = "rule: \(score.summary(awayAfter: 30))"
    print("an ESPresense node and two agents: " + report)
    XCTAssertGreaterThan(score.scoredSeconds, 400, report)
    XCTAssertLessThan(score.wrongShare, 0.05, report)
    XCTAssertEqual(
      rule.filter { $0.beacon == walker }.compactMap(\.room).prefix(3),
      ["living", "kitchen", "bedroom"], report)
    XCTAssertEqual(score.stationaryChanges, 0, report)
    XCTAssertLessThanOrEqual(try XCTUnwrap(score.medianConfirm, report), 10, report)
  }

  func testAKilledAgentMovesItsBeaconsAndABrokerRestartLosesNoRoom() throws {
    var site = try makeSite()
    try startAggregator(&site)
    usleep(300_000)
    try startAgents(&site)
    waitCapture(site, seconds: 60)
    XCTAssertEqual(timeline(site).rule.last { $0.beacon == keys }?.room, "kitchen")
    // The kitchen's agent dies without a word: its last will says offline.
    kill(site.agents["kitchen"]!.processIdentifier, SIGKILL)
    site.agents["kitchen"]!.waitUntilExit()
    waitCapture(site, seconds: 60)
    let afterKill = timeline(site).rule.filter { $0.beacon == keys }
    let moved = try XCTUnwrap(afterKill.last?.room, "\(afterKill)")
    XCTAssertTrue(
      ["living", "bedroom"].contains(moved), "moved to a room that still hears it: \(afterKill)")
    XCTAssertFalse(
      afterKill.contains { $0.room == nil }, "never away while others hear it: \(afterKill)")
    let log = (try? String(contentsOfFile: site.dir + "/rooms.log", encoding: .utf8)) ?? ""
    XCTAssertTrue(log.contains("agent kitchen is offline"), log)

    // The broker restarts with nothing retained; the aggregator publishes
    // every room again once it is back.
    let before = timeline(site).rule
    site.broker.stop()
    usleep(500_000)
    try site.broker.start()
    var retained: [String: String] = [:]
    let topics = RoomTopics(prefix: "earshot/rooms", shards: 16)
    for _ in 0..<100 {
      retained = try site.broker.retained("earshot/rooms/beacon/+/state")
      if retained[topics.state(walker)] != nil && retained[topics.state(keys)] != nil { break }
      usleep(200_000)
    }
    // The retained room is the one decided at its time, and no older
    // than the last decision before the broker went away.
    let now = timeline(site).rule
    for b in [walker, keys] {
      let state = try XCTUnwrap(retained[topics.state(b)], "\(retained)")
      let json = try JSONParser.parse(state)
      let t = Int64((try XCTUnwrap(json["t"]?.number, state) * 1e6).rounded())
      let decided = try XCTUnwrap(now.last { $0.beacon == b && $0.t.micros <= t }, state)
      XCTAssertEqual(json["room"]?.string, decided.room, state)
      XCTAssertGreaterThanOrEqual(t, before.last { $0.beacon == b }?.t.micros ?? .max, state)
    }
    // The device_tracker's plain-text location says the same room (read
    // together; the two are published back to back, so retry a moment).
    for b in [walker, keys] {
      var pair: [String: String] = [:]
      var agree = false
      for _ in 0..<20 where !agree {
        pair = try site.broker.retained("earshot/rooms/beacon/\(MQTTTopics.slug(b))/+")
        let room = try pair[topics.state(b)].map { try JSONParser.parse($0)["room"]?.string }
        agree = room != nil && pair[topics.location(.beacon(b))] == (room! ?? "not_home")
        if !agree { usleep(100_000) }
      }
      XCTAssertTrue(agree, "\(pair)")
    }
    XCTAssertGreaterThanOrEqual(now.count, before.count)
    // Home Assistant discovery is back too: a sensor and a device_tracker per beacon.
    let discovery = try site.broker.retained("homeassistant/#")
    for b in [walker, keys] {
      let object = "earshot_room_" + MQTTTopics.slug(b)
      XCTAssertNotNil(
        discovery["homeassistant/sensor/earshot_rooms/\(object)/config"], "\(discovery.keys)")
      XCTAssertNotNil(discovery["homeassistant/device_tracker/earshot_rooms/\(object)/config"])
    }
  }

  /// Restarted, the aggregator takes the rooms the broker retains: a beacon
  /// still heard in its room prints nothing new, one nobody hears goes away
  /// away_after after the start.
  func testARestartedAggregatorKeepsTheRetainedRooms() throws {
    let dir = try makeTempDirectory()
    addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
    let broker = try Broker()
    let topics = RoomTopics(prefix: "earshot/rooms", shards: 16)
    let pub = try XCTUnwrap(Earshot.tool("mosquitto_pub"))
    func publish(_ topic: String, _ payload: String, retain: Bool) throws {
      let r = try Earshot.run(
        ["-h", "127.0.0.1", "-p", "\(broker.port)", "-t", topic, "-m", payload]
          + (retain ? ["-r", "-q", "1"] : []), executable: pub)
      XCTAssertEqual(r.status, 0, r.stderr)
    }
    // What a predecessor left: the walker in the kitchen, the keys in the living room.
    try publish(
      topics.state(walker), "{\"t\":100.000,\"beacon\":\"\(walker)\",\"room\":\"kitchen\"}",
      retain: true)
    try publish(
      topics.state(keys), "{\"t\":100.000,\"beacon\":\"\(keys)\",\"room\":\"living\"}", retain: true
    )
    let conf = dir + "/rooms.conf"
    try "[mqtt]\nhost = 127.0.0.1\nport = \(broker.port)\n[rooms]\naway_after = 3\n".write(
      toFile: conf, atomically: true, encoding: .utf8)
    let out = dir + "/rooms.out"
    let site = Site(dir: dir, broker: broker, aggregatorOut: out)
    _ = try spawn(["rooms", "--config", conf], log: dir + "/rooms.log", out: out)
    usleep(700_000)
    // The walker is heard in the kitchen for 5 s; the keys by nobody.
    let start = Date().timeIntervalSince1970
    for k in 0..<10 {
      let t = start + Double(k) * 0.5
      try publish(
        topics.sighting(walker, room: "kitchen"),
        "{\"t\":\(String(format: "%.3f", t)),\"room\":\"kitchen\",\"rssi\":-60,\"distance\":1.2,\"n\":1}",
        retain: false)
      usleep(400_000)
    }
    let changes = timeline(site).rule
    XCTAssertFalse(changes.contains { $0.beacon == walker }, "kept: \(changes)")
    let away = try XCTUnwrap(changes.first { $0.beacon == keys }, "\(changes)")
    XCTAssertNil(away.room)
    XCTAssertEqual(changes.filter { $0.beacon == keys }.count, 1)
  }

  /// Agents whose clocks differ (the kitchen's an hour ahead, the living
  /// room's ten minutes behind, the bedroom's drifting) place a beacon as
  /// agents in step do: the aggregator counts each sighting from its
  /// arrival. A sighting the broker held retained is old and ignored.
  func testAgentsWhoseClocksDifferPlaceABeaconAsAgentsInStep() throws {
    let dir = try makeTempDirectory()
    addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
    let broker = try Broker()
    let topics = RoomTopics(prefix: "earshot/rooms", shards: 16)
    let pub = try XCTUnwrap(Earshot.tool("mosquitto_pub"))
    func publish(_ room: String, ahead: Double, distance: Double, retain: Bool = false) throws {
      let t = Date().timeIntervalSince1970 + ahead
      let r = try Earshot.run(
        [
          "-h", "127.0.0.1", "-p", "\(broker.port)", "-t", topics.sighting(walker, room: room),
          "-m",
          "{\"t\":\(String(format: "%.3f", t)),\"room\":\"\(room)\",\"rssi\":-60,\"distance\":\(distance),\"n\":1}",
        ] + (retain ? ["-r"] : []), executable: pub)
      XCTAssertEqual(r.status, 0, r.stderr)
    }
    // Left retained by a misbehaving agent: the walker right by the bedroom's.
    try publish("bedroom", ahead: 0, distance: 0.2, retain: true)
    let conf = dir + "/rooms.conf"
    try "[mqtt]\nhost = 127.0.0.1\nport = \(broker.port)\n[rooms]\ntrack = \(Self.uuid)\n".write(
      toFile: conf, atomically: true, encoding: .utf8)
    let out = dir + "/rooms.out"
    let site = Site(dir: dir, broker: broker, aggregatorOut: out)
    let aggregator = try spawn(["rooms", "--config", conf], log: dir + "/rooms.log", out: out)
    usleep(700_000)
    // The walker 5 s in the kitchen, then 9 s in the living room: 30 dB
    // closer there, a lead the rule takes before it has learnt the links.
    let start = Date()
    var elapsed = 0.0
    while elapsed < 14 {
      let inKitchen = elapsed < 5
      try publish("kitchen", ahead: 3600, distance: inKitchen ? 0.3 : 10.0)
      try publish("living", ahead: -600, distance: inKitchen ? 10.0 : 0.3)
      try publish("bedroom", ahead: 2 + 0.3 * elapsed, distance: 7.0)
      usleep(400_000)
      elapsed = Date().timeIntervalSince(start)
    }
    aggregator.terminate()
    aggregator.waitUntilExit()
    let changes = timeline(site).rule
    let log = (try? String(contentsOfFile: dir + "/rooms.log", encoding: .utf8)) ?? ""
    XCTAssertEqual(changes.map(\.room), ["kitchen", "living"], "\(changes)\n\(log)")
    // Dated by this machine's clock, not an agent's.
    let began = Int64(start.timeIntervalSince1970 * 1e6)
    for c in changes {
      XCTAssertGreaterThan(c.t.micros, began, "\(c)")
      XCTAssertLessThan(c.t.micros, began + 20_000_000, "\(c)")
    }
    let moved = try XCTUnwrap(changes.last).t.micros - began
    XCTAssertGreaterThan(moved, 5_000_000, "not before the walker moved")
    XCTAssertLessThan(moved, 13_000_000, "within the window and switch_after")
    XCTAssertTrue(log.contains("ignored a retained sighting"), log)
    // Shown: each agent's skew (less the delivery delay).
    XCTAssertTrue(
      log.contains("agent kitchen's clock reads 3600.") || log.contains("reads 3599."), log)
    XCTAssertTrue(log.contains("agent living's clock reads 600."), log)
    XCTAssertTrue(log.contains("s behind this aggregator's"), log)
  }
}
