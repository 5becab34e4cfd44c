import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

/// A real mosquitto broker on 127.0.0.1 and an unused port, for one test.
final class Broker {
  let port: Int
  private let dir: String
  private var process: Process?

  init() throws {
    binary = try Broker.locate()
    port = try Broker.unusedPort()
    dir = NSTemporaryDirectory() + "earshot-broker-\(getpid())-\(port)"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let conf = "listener \(port) 127.0.0.1\nallow_anonymous true\npersistence false\n"
    try conf.write(toFile: dir + "/mosquitto.conf", atomically: true, encoding: .utf8)
    try start()
  }

  static func locate() throws -> String {
    guard let binary = Earshot.tool("mosquitto") else {
      try requireResource("mosquitto broker (package mosquitto)")
    }
    return binary
  }

  private let binary: String

  func start() throws {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: binary)
    p.arguments = ["-c", dir + "/mosquitto.conf"]
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    try p.run()
    process = p
    // Wait until it accepts connections (bounded; not a timing assertion).
    for _ in 0..<200 {
      if Broker.canConnect(port) { return }
      usleep(20_000)
    }
    XCTFail("mosquitto did not start on port \(port)")
  }

  func stop() {
    process?.terminate()
    process?.waitUntilExit()
    process = nil
  }

  deinit {
    stop()
    try? FileManager.default.removeItem(atPath: dir)
  }

  /// Every retained message under `topic` as "topic payload" lines.
  func retained(_ topic: String = "#") throws -> [String: String] {
    guard let sub = Earshot.tool("mosquitto_sub") else {
      try requireResource("mosquitto_sub (package mosquitto-clients)")
    }
    let r = try Earshot.run(
      ["-h", "127.0.0.1", "-p", "\(port)", "-t", topic, "-v", "--retained-only", "-W", "1"],
      executable: sub)
    var out: [String: String] = [:]
    for line in r.stdout.split(separator: "\n") {
      guard let space = line.firstIndex(of: " ") else { continue }
      out[String(line[..<space])] = String(line[line.index(after: space)...])
    }
    return out
  }

  func publish(_ topic: String, _ payload: String) throws {
    guard let pub = Earshot.tool("mosquitto_pub") else {
      try requireResource("mosquitto_pub (package mosquitto-clients)")
    }
    let r = try Earshot.run(
      ["-h", "127.0.0.1", "-p", "\(port)", "-t", topic, "-m", payload], executable: pub)
    XCTAssertEqual(r.status, 0, r.stderr)
  }

  static func unusedPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = 0
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &addr) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) }
    }
    _ = withUnsafeMutablePointer(to: &addr) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
    }
    return Int(UInt16(bigEndian: addr.sin_port))
  }

  static func canConnect(_ port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = in_port_t(UInt16(port).bigEndian)
    return withUnsafePointer(to: &addr) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    } == 0
  }
}

final class MQTTBridgeTests: XCTestCase {
  let beacon = TrackedID(
    uuid: BeaconUUID("8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182")!, major: 1, minor: 10)

  func makeBridge(_ loop: EventLoop, _ broker: Broker) throws -> MQTTBridge {
    var options = MQTTClient.Options(clientID: "earshot-test-\(getpid())")
    options.host = "127.0.0.1"
    options.port = Int32(broker.port)
    let topics = MQTTTopics(base: "earshot/testhost")
    var settings = MQTTBridge.Options(
      client: options, topics: topics,
      discovery: HomeAssistantDiscovery(topics: topics, hostname: "testhost", version: "0.1.0"))
    settings.beaconInterval = 10
    return try MQTTBridge(loop: loop, settings: settings)
  }

  /// Runs the loop until `done()` holds, checking every 20 ms; gives up
  /// after `limit` seconds so a broken test fails instead of hanging.
  func run(_ loop: EventLoop, limit: Double = 10, until done: @escaping () -> Bool) throws {
    var gaveUp = false
    let start = Clock.monotonicNanos()
    func check() {
      if done() {
        loop.stop()
      } else if Double(Clock.monotonicNanos() - start) > limit * 1e9 {
        gaveUp = true
        loop.stop()
      } else {
        loop.after(seconds: 0.02, check)
      }
    }
    loop.after(seconds: 0, check)
    try loop.run()
    XCTAssertFalse(gaveUp, "condition not reached")
  }

  /// Runs the loop 0.3 s more: time for the writes to go out, or for the
  /// broker to register a subscription.
  func settle(_ loop: EventLoop) throws {
    var settled = false
    loop.after(seconds: 0.3) { settled = true }
    try run(loop) { settled }
  }

  /// What a bridge hands the agent.
  final class Received {
    var commands: [MQTTCommand] = []
    var logs: [String] = []
  }

  /// A started bridge, connected and subscribed to its commands;
  /// `beforeConnect` runs between start and the connection.
  func subscribedBridge(
    _ loop: EventLoop, _ broker: Broker, beforeConnect: (MQTTBridge) -> Void = { _ in }
  ) throws -> (MQTTBridge, Received) {
    let bridge = try makeBridge(loop, broker)
    let received = Received()
    bridge.onCommand = { received.commands.append($0) }
    bridge.onLog = { received.logs.append($0) }
    bridge.start()
    beforeConnect(bridge)
    try run(loop) { bridge.isConnected }
    try settle(loop)
    return (bridge, received)
  }

  func testRetainedStatesAndDiscoveryReachASubscriber() throws {
    let broker = try Broker()
    let loop = try EventLoop()
    let bridge = try makeBridge(loop, broker)
    bridge.start()
    bridge.show(MQTTEntities.region, RegionShown("desk", .unknown))
    try run(loop) { bridge.isConnected }
    bridge.show(MQTTEntities.region, RegionShown("desk", .inside))
    bridge.show(MQTTEntities.region, RegionShown("Lab Room", .unknown))
    bridge.beacon(
      BeaconShown(beacon, distance: 1.84, proximity: .near, rssi: -67),
      at: DecisionTime(micros: 100_000_000))
    bridge.show(MQTTEntities.controls, VolumeShown(level: 0.37, muted: false))
    try settle(loop)

    let r = try broker.retained()
    XCTAssertEqual(r["earshot/testhost/status"], "online")
    XCTAssertEqual(r["earshot/testhost/region/desk/state"], "inside")
    XCTAssertEqual(r["earshot/testhost/region/desk/available"], "online")
    XCTAssertNil(
      r["earshot/testhost/region/lab_room/state"], "unknown is said by availability alone")
    XCTAssertEqual(
      r["earshot/testhost/region/lab_room/available"], "offline", "unknown is unavailable, not off")
    XCTAssertEqual(r["earshot/testhost/volume/state"], "37")
    XCTAssertEqual(r["earshot/testhost/mute/state"], "OFF")
    let beaconState = try XCTUnwrap(
      r["earshot/testhost/beacon/8f2c1a3e-5b7d-4e90-a1c2-3d4e5f607182-1-10/state"])
    XCTAssertTrue(beaconState.hasPrefix("{\"distance\":1.84,\"proximity\":\"near\""), beaconState)

    // Discovery: one binary_sensor per region, a distance sensor, the controls, one device.
    let region = try XCTUnwrap(r["homeassistant/binary_sensor/earshot_testhost/region_desk/config"])
    let config = try XCTUnwrap(
      JSONSerialization.jsonObject(with: Data(region.utf8)) as? [String: Any])
    XCTAssertEqual(config["device_class"] as? String, "occupancy")
    XCTAssertEqual(config["state_topic"] as? String, "earshot/testhost/region/desk/state")
    XCTAssertEqual(config["payload_on"] as? String, "inside")
    XCTAssertEqual(config["availability_mode"] as? String, "all")
    XCTAssertEqual((config["availability"] as? [[String: Any]])?.count, 2)
    XCTAssertNotNil(r["homeassistant/binary_sensor/earshot_testhost/region_lab_room/config"])
    XCTAssertNotNil(
      r[
        "homeassistant/sensor/earshot_testhost/beacon_8f2c1a3e-5b7d-4e90-a1c2-3d4e5f607182-1-10/config"
      ])
    for object in [
      "button/earshot_testhost/ring", "button/earshot_testhost/found",
      "number/earshot_testhost/volume",
      "switch/earshot_testhost/mute",
    ] {
      let payload = try XCTUnwrap(r["homeassistant/\(object)/config"], object)
      let json = try XCTUnwrap(
        JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])
      XCTAssertEqual(
        (json["device"] as? [String: Any])?["identifiers"] as? [String], ["earshot_testhost"],
        object)
    }
    bridge.close()
  }

  /// The scan's duty: a diagnostic sensor in percent, its attributes what
  /// `status` says under `scan`; unknown ("None") while no scan runs.
  func testScanDutyIsADiagnosticSensor() throws {
    let broker = try Broker()
    let loop = try EventLoop()
    let bridge = try makeBridge(loop, broker)
    bridge.start()
    try run(loop) { bridge.isConnected }
    let sampled = ScanTiming(interval: 0x03C0, window: 0x0060)
    bridge.show(
      MQTTEntities.scanDuty,
      ScanDutyReport(
        policy: .automatic, power: .battery, timing: sampled, mean: [.battery: 0.1634]))
    try settle(loop)
    var r = try broker.retained()
    let payload = try XCTUnwrap(r["homeassistant/sensor/earshot_testhost/scan_duty/config"])
    let config = try XCTUnwrap(
      JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])
    XCTAssertEqual(config["entity_category"] as? String, "diagnostic")
    XCTAssertEqual(config["unit_of_measurement"] as? String, "%")
    XCTAssertEqual(config["state_topic"] as? String, "earshot/testhost/scan/duty")
    XCTAssertEqual(r["earshot/testhost/scan/duty"], "10.0")
    XCTAssertEqual(
      r["earshot/testhost/scan/attributes"],
      #"{"policy":"automatic","power":"battery","duty":0.1,"window_ms":60,"interval_ms":600,"mean_duty":{"mains":null,"battery":0.1634}}"#
    )
    bridge.show(
      MQTTEntities.scanDuty,
      ScanDutyReport(policy: .automatic, power: .battery, timing: nil, mean: [:]))
    try settle(loop)
    r = try broker.retained()
    XCTAssertEqual(r["earshot/testhost/scan/duty"], "None", "no scan: Home Assistant's unknown")
    bridge.close()
  }

  /// An identity region is an occupancy binary_sensor and a
  /// device_tracker on the same state topic: home while inside, not_home
  /// while outside, unavailable while unknown; a beacon region is no tracker.
  func testIdentityRegionIsAlsoADeviceTracker() throws {
    let broker = try Broker()
    let loop = try EventLoop()
    let bridge = try makeBridge(loop, broker)
    bridge.start()
    try run(loop) { bridge.isConnected }
    bridge.show(MQTTEntities.region, RegionShown("alice", .unknown, tracksDevices: true))
    bridge.show(MQTTEntities.region, RegionShown("desk", .inside))
    try settle(loop)
    var r = try broker.retained()
    let payload = try XCTUnwrap(
      r["homeassistant/device_tracker/earshot_testhost/tracker_alice/config"])
    let config = try XCTUnwrap(
      JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])
    XCTAssertEqual(config["state_topic"] as? String, "earshot/testhost/region/alice/state")
    XCTAssertEqual(config["payload_home"] as? String, "inside")
    XCTAssertEqual(config["payload_not_home"] as? String, "outside")
    XCTAssertEqual(config["source_type"] as? String, "bluetooth_le")
    XCTAssertEqual(config["availability_mode"] as? String, "all")
    let availability = try XCTUnwrap(config["availability"] as? [[String: Any]])
    XCTAssertEqual(
      availability.compactMap { $0["topic"] as? String },
      ["earshot/testhost/status", "earshot/testhost/region/alice/available"])
    XCTAssertEqual(r["earshot/testhost/region/alice/available"], "offline", "unknown: unavailable")
    XCTAssertNotNil(r["homeassistant/binary_sensor/earshot_testhost/region_alice/config"])
    XCTAssertNil(r["homeassistant/device_tracker/earshot_testhost/tracker_desk/config"])
    bridge.show(MQTTEntities.region, RegionShown("alice", .inside, tracksDevices: true))
    try settle(loop)
    r = try broker.retained()
    XCTAssertEqual(r["earshot/testhost/region/alice/state"], "inside")
    XCTAssertEqual(r["earshot/testhost/region/alice/available"], "online")
    bridge.close()
  }

  func testCommandsArriveAndMalformedOnesAreLoggedAndIgnored() throws {
    let broker = try Broker()
    let loop = try EventLoop()
    let (bridge, received) = try subscribedBridge(loop, broker)
    try broker.publish("earshot/testhost/command/volume", "abc")
    try broker.publish("earshot/testhost/command/ring", "PRESS")
    try broker.publish("earshot/testhost/command/volume", "42")
    try broker.publish("earshot/testhost/command/mute", "ON")
    try broker.publish("earshot/testhost/command/found", "PRESS")
    try run(loop) { received.commands.count == 4 }
    XCTAssertEqual(received.commands, [.ring, .setVolume(0.42), .setMute(true), .found])
    XCTAssertTrue(
      received.logs.contains { $0.contains("expected a number from 0 to 100") }, "\(received.logs)")
    bridge.close()
  }

  /// Issue 42: 2,000 malformed volume commands wrote 2,000 lines. Now the
  /// first is logged whole, the rest counted per topic and said in one
  /// line per window (here 1 s, to see windows pass; the agent's is 60 s)
  /// and at the close; the valid command behind them still arrives.
  func testTwoThousandMalformedCommandsAreAFewLines() throws {
    let broker = try Broker()
    let loop = try EventLoop()
    let bridge = try {
      var options = MQTTClient.Options(clientID: "earshot-test-\(getpid())")
      options.host = "127.0.0.1"
      options.port = Int32(broker.port)
      let topics = MQTTTopics(base: "earshot/testhost")
      var settings = MQTTBridge.Options(client: options, topics: topics, discovery: nil)
      settings.badInputLogInterval = 1
      return try MQTTBridge(loop: loop, settings: settings)
    }()
    let received = Received()
    bridge.onCommand = { received.commands.append($0) }
    bridge.onLog = { received.logs.append($0) }
    bridge.start()
    try run(loop) { bridge.isConnected }
    try settle(loop)
    // Published at QoS 0 while the loop runs: at QoS 1 the broker keeps
    // only 1,000 queued for a subscriber (max_queued_messages) and drops
    // the rest when the publisher is faster. The valid command comes last.
    let pub = Process()
    pub.executableURL = URL(
      fileURLWithPath: try XCTUnwrap(
        Earshot.tool("mosquitto_pub"), "mosquitto_pub (mosquitto-clients)"))
    pub.arguments = [
      "-h", "127.0.0.1", "-p", "\(broker.port)", "-q", "0", "-t", "earshot/testhost/command/volume",
      "-l",
    ]
    let input = Pipe()
    pub.standardInput = input
    let start = Clock.now()
    try pub.run()
    // In four bursts half a second apart, so windows pass meanwhile.
    let writer = input.fileHandleForWriting
    DispatchQueue.global().async {
      for burst in 0..<4 {
        let payloads = (burst * 500..<(burst + 1) * 500).map { "loud\($0)\n" }.joined()
        writer.write(Data(payloads.utf8))
        usleep(500_000)
      }
      writer.write(Data("42\n".utf8))
      try? writer.close()
    }
    try run(loop, limit: 30) { bridge.malformedCommands == 2000 && received.commands.count == 1 }
    pub.waitUntilExit()
    XCTAssertEqual(pub.terminationStatus, 0)
    let seconds = start.seconds(until: Clock.now())
    XCTAssertEqual(received.commands, [.setVolume(0.42)])
    bridge.close()
    let logged = received.logs.filter { $0.contains("command/volume") }
    print(
      "mqtt figures: 2000 malformed commands in \(seconds) s, \(logged.count) logged: \(logged)")
    XCTAssertEqual(
      logged.first,
      "mqtt: ignored command on earshot/testhost/command/volume: expected a number from 0 to 100, got 'loud0'"
    )
    // The first line, at most one summary per second that passed, one at the close.
    XCTAssertLessThanOrEqual(logged.count, 2 + Int(seconds.rounded(.up)), "\(logged)")
    XCTAssertGreaterThanOrEqual(logged.count, 2, "\(logged)")
    // Nothing lost: the summaries add up to the 1,999 after the first.
    let counted = logged.dropFirst().compactMap { line -> Int? in
      guard let r = line.range(of: "ignored ") else { return nil }
      return Int(line[r.upperBound...].prefix { $0.isNumber })
    }
    XCTAssertEqual(counted.reduce(0, +), 1999, "\(logged)")
  }

  /// Tags: `command/ring_tag/NAME` (a second topic level, its own
  /// subscription), the tag's state and battery, its "Ring NAME" button.
  func testRingTagCommandsAndTagEntities() throws {
    let broker = try Broker()
    let loop = try EventLoop()
    let (bridge, received) = try subscribedBridge(loop, broker) {
      $0.show(MQTTEntities.tag, TagShown("keys", state: "connected", battery: 87))
    }
    try broker.publish("earshot/testhost/command/ring_tag/keys", "PRESS")
    try broker.publish("earshot/testhost/command/ring_tag/keys", "loud")
    try broker.publish("earshot/testhost/command/ring_tag/keys", "STOP")
    try run(loop) { received.commands.count == 2 }
    XCTAssertEqual(
      received.commands,
      [.ringTag(slug: "keys", level: .high), .ringTag(slug: "keys", level: .none)])
    XCTAssertTrue(
      received.logs.contains { $0.contains("expected PRESS, MILD or STOP") }, "\(received.logs)")
    let r = try broker.retained()
    XCTAssertEqual(r["earshot/testhost/tag/keys/state"], "connected")
    XCTAssertEqual(r["earshot/testhost/tag/keys/battery"], "87")
    let button = try XCTUnwrap(r["homeassistant/button/earshot_testhost/tag_keys_ring/config"])
    let json = try XCTUnwrap(
      JSONSerialization.jsonObject(with: Data(button.utf8)) as? [String: Any])
    XCTAssertEqual(json["name"] as? String, "Ring keys")
    XCTAssertEqual(json["command_topic"] as? String, "earshot/testhost/command/ring_tag/keys")
    let battery = try XCTUnwrap(r["homeassistant/sensor/earshot_testhost/tag_keys_battery/config"])
    XCTAssertTrue(battery.contains("\"device_class\":\"battery\""), battery)
    bridge.close()
  }

  func testBrokerRestartGetsEverythingRetainedAgain() throws {
    let broker = try Broker()
    let loop = try EventLoop()
    let bridge = try makeBridge(loop, broker)
    bridge.start()
    try run(loop) { bridge.isConnected }
    bridge.show(MQTTEntities.region, RegionShown("desk", .inside))
    try settle(loop)
    XCTAssertEqual(try broker.retained()["earshot/testhost/region/desk/state"], "inside")

    broker.stop()  // persistence is off: the broker forgets everything
    try run(loop) { !bridge.isConnected }
    bridge.show(MQTTEntities.region, RegionShown("desk", .outside))  // changes while the broker is away
    try broker.start()
    try run(loop, limit: 15) { bridge.isConnected }
    try settle(loop)
    let r = try broker.retained()
    XCTAssertEqual(r["earshot/testhost/region/desk/state"], "outside")
    XCTAssertEqual(r["earshot/testhost/status"], "online")
    XCTAssertNotNil(r["homeassistant/number/earshot_testhost/volume/config"])
    bridge.close()
  }
}
