import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

/// The tags' D-Bus side (BlueZCentral) against a real dbus-daemon on a
/// private bus: a second connection takes org.bluez and answers as
/// bluetoothd does for a connected tag (object tree, Connect and
/// ServicesResolved, WriteValue, ReadValue, notifications as
/// PropertiesChanged). bluetoothd itself runs in the kernel test bed
/// (Tests/vm/tests/tag_itag.sh, tag_lost.sh); this pins down the shapes.
final class TagDBusTests: XCTestCase {
  private var bus: PrivateBus?
  override func tearDown() { bus = nil }

  static let device = "/org/bluez/hci0/dev_00_AA_01_00_00_07"
  static func chrc(_ s: Int, _ c: Int) -> String { device + "/service\(s)/char\(c)" }

  /// bluetoothd with one adapter and one tag: button, Immediate Alert,
  /// Link Loss (refuses writes) and Battery (87 %). Calls go to `calls`.
  private func fakeBlueZ(
    _ loop: EventLoop, _ address: String, connectFails: @escaping () -> Bool = { false },
    calls: @escaping (String) -> Void
  ) throws -> DBusConnection {
    let bluez = try DBusConnection(loop: loop, address: address)
    func props(_ pairs: [(String, DBusValue)]) -> DBusValue { .properties(pairs) }
    var tree: [(DBusValue, DBusValue)] = [
      (
        .objectPath("/org/bluez/hci0"),
        .dict(key: "s", value: "a{sv}", [(.string("org.bluez.Adapter1"), props([]))])
      ),
      (
        .objectPath(Self.device),
        .dict(
          key: "s", value: "a{sv}",
          [(.string("org.bluez.Device1"), props([("Address", .string("00:AA:01:00:00:07"))]))])
      ),
    ]
    let services: [(Int, UInt16, UInt16)] = [
      (0, 0xFFE0, 0xFFE1), (1, 0x1802, 0x2A06), (2, 0x1803, 0x2A06), (3, 0x180F, 0x2A19),
    ]
    for (i, service, characteristic) in services {
      let sp = Self.device + "/service\(i)"
      tree.append(
        (
          .objectPath(sp),
          .dict(
            key: "s", value: "a{sv}",
            [
              (
                .string("org.bluez.GattService1"),
                props([
                  ("UUID", .string(TagGATT.uuid16(service))), ("Device", .objectPath(Self.device)),
                ])
              )
            ])
        ))
      tree.append(
        (
          .objectPath(Self.chrc(i, 0)),
          .dict(
            key: "s", value: "a{sv}",
            [
              (
                .string("org.bluez.GattCharacteristic1"),
                props([
                  ("UUID", .string(TagGATT.uuid16(characteristic).uppercased())),
                  ("Service", .objectPath(sp)),
                  ("Flags", .strings(i == 1 ? ["write-without-response", "write"] : ["read"])),
                ])
              )
            ])
        ))
    }
    try bluez.serve(prefix: "/") { call in
      calls("\(call.member) \(call.path)")
      switch call.member {
      case "GetManagedObjects":
        call.reply([.dict(key: "o", value: "a{sa{sv}}", tree)])
      case "Connect" where connectFails():
        call.replyError("org.bluez.Error.Failed", "le-connection-abort-by-local")
      case "Connect":
        call.reply()
        // Services are resolved a moment after Connect returns.
        loop.after(seconds: 0.05) {
          try? bluez.emit(
            path: Self.device, interface: "org.freedesktop.DBus.Properties",
            member: "PropertiesChanged",
            [
              .string("org.bluez.Device1"), .properties([("ServicesResolved", .bool(true))]),
              .strings([]),
            ])
        }
      case "Get":
        call.reply([.variant(.bool(false))])
      case "StartNotify":
        call.reply()
      case "WriteValue":
        if call.path == Self.chrc(2, 0) {
          call.replyError("org.bluez.Error.NotPermitted", "Write not permitted")
        } else {
          let type = call.arguments.count == 2 ? call.arguments[1]["type"]?.stringValue : nil
          calls("wrote \(call.arguments.first?.bytesValue ?? []) as \(type ?? "-")")
          call.reply()
        }
      case "ReadValue":
        call.reply([.bytes([87])])
      default:
        return false
      }
      return true
    }
    try bluez.requestName("org.bluez")
    return bluez
  }

  func testConnectFindCharacteristicsWriteReadNotifyAndDisconnect() throws {
    let bus = try PrivateBus()
    self.bus = bus
    let loop = try EventLoop()
    var calls: [String] = []
    let bluez = try fakeBlueZ(loop, bus.address) { calls.append($0) }
    let central = try BlueZCentral(loop: loop, busAddress: bus.address)
    var values: [(String, [UInt8])] = []
    var gone: [String] = []
    central.onValue = { values.append(($0, $1)) }
    central.onDisconnect = { gone.append($0) }
    var chars: [String: String] = [:]
    var results: [String] = []
    func emit(_ path: String, _ iface: String, _ props: [(String, DBusValue)]) {
      try? bluez.emit(
        path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
        [.string(iface), .properties(props), .strings([])])
    }
    central.objects { result in
      guard case .success(let objects) = result else { return XCTFail("\(result)") }
      XCTAssertEqual(try? BlueZCentral.adapter(objects, named: nil).get(), "/org/bluez/hci0")
      XCTAssertNil(try? BlueZCentral.adapter(objects, named: "hci3").get())
      let path = BlueZCentral.devicePath(
        adapter: "/org/bluez/hci0", BDAddress("00:AA:01:00:00:07")!)
      XCTAssertEqual(path, Self.device)
      XCTAssertEqual(
        BlueZCentral.devices(objects, address: BDAddress("00:AA:01:00:00:07")!), [path])
      central.connect(path, timeout: 5) { result in
        results.append("connect \(result)")
        central.objects { result in
          chars = BlueZCentral.characteristics((try? result.get()) ?? [:], device: path)
          let ias = chars[BlueZCentral.key(TagGATT.immediateAlertService, TagGATT.alertLevel)]!
          let linkLoss = chars[BlueZCentral.key(TagGATT.linkLossService, TagGATT.alertLevel)]!
          let battery = chars[BlueZCentral.key(TagGATT.batteryService, TagGATT.batteryLevel)]!
          let button = chars[BlueZCentral.key(TagGATT.buttonService, TagGATT.button)]!
          central.startNotify(button) { results.append("notify \($0)") }
          let types = BlueZCentral.writeTypes((try? result.get()) ?? [:], device: path)
          XCTAssertEqual(types, [ias: "request"], "a write request where the flags allow one")
          central.write(ias, AlertLevel.high.encoded, type: types[ias]) {
            results.append("ias \($0)")
          }
          central.write(linkLoss, AlertLevel.high.encoded) { results.append("linkloss \($0)") }
          central.read(battery) { results.append("battery \($0)") }
          loop.after(seconds: 0.2) {
            emit(button, "org.bluez.GattCharacteristic1", [("Value", .bytes([1]))])
            emit(path, "org.bluez.Device1", [("RSSI", .int16(-50))])
            emit(path, "org.bluez.Device1", [("Connected", .bool(false))])
            loop.after(seconds: 0.3) { loop.stop() }
          }
        }
      }
    }
    loop.after(seconds: 10) { loop.stop() }
    try loop.run()
    XCTAssertEqual(chars.count, 4, "\(chars)")
    XCTAssertEqual(
      results,
      [
        "connect success()", "notify success()", "ias success()",
        "linkloss failure(NotPermitted: Write not permitted)", "battery success([87])",
      ])
    XCTAssertTrue(calls.contains("wrote [2] as request"), "\(calls)")
    XCTAssertEqual(values.map(\.1), [[1]])
    XCTAssertEqual(values.first?.0, Self.chrc(0, 0))
    XCTAssertEqual(gone, [Self.device], "only Connected false is a disconnect")
  }

  /// Runs the loop until `done()` holds (checked every 20 ms), at most 10 s.
  private func run(_ loop: EventLoop, _ what: String, until done: @escaping () -> Bool) throws {
    var gaveUp = false
    let start = Clock.monotonicNanos()
    func check() {
      if done() {
        loop.stop()
      } else if Clock.monotonicNanos() - start > 10_000_000_000 {
        gaveUp = true
        loop.stop()
      } else {
        loop.after(seconds: 0.02, check)
      }
    }
    loop.after(seconds: 0, check)
    try loop.run()
    XCTAssertFalse(gaveUp, "never reached: \(what)")
  }

  /// The whole shell in one agent: TagTransport connects the tag through
  /// the stand-in, a press rings the agent as tag:keys, the second press is
  /// found, `ring` writes the tag, bad input is one line, a disconnect is
  /// tag_lost and a retry.
  func testTagTransportInAnAgent() throws {
    let bus = try PrivateBus()
    self.bus = bus
    let dir = try makeTempDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let audio = RecordingAudio(volume: VolumeSetting(level: 0.3, muted: false))
    audio.stateFile = dir + "/state/find-phone-volume"
    var logs: [String] = []
    var config = Config()
    var tag = TagConfig(name: "keys", line: 1)
    tag.address = BDAddress("00:AA:01:00:00:07")
    tag.linkLossAlert = .high
    config.tags = [tag]
    // The agent earshot run builds, its BlueZ the stand-in on the private bus.
    var surroundings = AgentSurroundings.test(
      directory: dir, audio: .given(alert: audio, volume: audio), log: { logs.append($0) })
    surroundings.systemBus = bus.address
    let built = try Agent(config: config.inTest(dir), surroundings: surroundings)
    let (loop, agent, tags) = (built.loop, built.daemon, built.tags)
    var calls: [String] = []
    let bluez = try fakeBlueZ(loop, bus.address) { calls.append($0) }
    func press(_ bytes: [UInt8]) {
      try? bluez.emit(
        path: Self.chrc(0, 0), interface: "org.freedesktop.DBus.Properties",
        member: "PropertiesChanged",
        [
          .string("org.bluez.GattCharacteristic1"), .properties([("Value", .bytes(bytes))]),
          .strings([]),
        ])
    }
    tags.start()
    try run(loop, "connected") {
      tags.snapshots.first?.state == "connected" && tags.snapshots.first?.battery == 87
    }
    XCTAssertTrue(calls.contains("StartNotify \(Self.chrc(0, 0))"), "\(calls)")
    try run(loop, "link loss refusal logged") {
      logs.contains { $0.contains("Link Loss write of alert level 2 failed") }
    }

    press([1])
    let me = DeviceID(link: "tag", name: "keys")
    try run(loop, "ringing as tag:keys") { agent.find.status.requesters == [me] }
    XCTAssertTrue(audio.calls.contains("startAlert"), "\(audio.calls)")
    press([1])
    try run(loop, "found") {
      agent.find.status.state == .idle && agent.find.status.lastEnd == .found
    }
    try run(loop, "notice taken") { logs.contains { $0.contains("tag:keys accepted notice") } }

    press([1, 2])
    try run(loop, "bad notification") { logs.contains { $0.contains("2 bytes (0102)") } }
    XCTAssertEqual(agent.find.status.state, .idle, "a malformed press rings nothing")

    var outcome: RequestOutcome?
    agent.perform(.ring(target: "keys", level: .high), from: Requester(device: nil, name: "cli")) {
      outcome = $0
    }
    try run(loop, "ring answered") { outcome != nil }
    XCTAssertEqual(
      outcome, .rang(target: "keys", device: BDAddress("00:AA:01:00:00:07")!, level: .high))
    XCTAssertTrue(calls.contains("wrote [2] as request"), "\(calls)")
    outcome = nil
    agent.perform(.ring(target: "wallet", level: .high), from: Requester(device: nil, name: "cli"))
    {
      outcome = $0
    }
    guard case .refused(let e)? = outcome else { return XCTFail("\(String(describing: outcome))") }
    XCTAssertEqual(e.code, .unavailable)
    XCTAssertTrue(e.message.contains("no tag named 'wallet' (tags: keys)"), e.message)

    try? bluez.emit(
      path: Self.device, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
      [.string("org.bluez.Device1"), .properties([("Connected", .bool(false))]), .strings([])])
    try run(loop, "lost") { tags.snapshots.first?.state != "connected" }
    XCTAssertTrue(logs.contains { $0.contains("tag keys: lost (the link dropped)") }, "\(logs)")
    // The retry (1 s later) connects again: tag_back.
    try run(loop, "back") { logs.contains { $0.contains("tag keys: back after") } }
    tags.stop()
  }

  /// Tags are presence: the agent's TagTransport feeds a region naming
  /// the tag (`tag = keys`, exit_after 1 s) through the monitor driver, as
  /// `earshot run` wires them. Unknown before the first connect, inside on
  /// connect, outside 1 s after the link drops (its retries failing), with
  /// the same events, hooks and state file as any region.
  func testARegionNamingATagFollowsItsLink() throws {
    let bus = try PrivateBus()
    self.bus = bus
    let loop = try EventLoop()
    var refuse = false
    let bluez = try fakeBlueZ(loop, bus.address, connectFails: { refuse }) { _ in }
    let dir = try makeTempDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    var options = Daemon.Options(socketPath: dir + "/t.sock", stateDirectory: dir + "/state")
    options.handleSignals = false
    let audio = RecordingAudio(volume: VolumeSetting(level: 0.3, muted: false))
    audio.stateFile = dir + "/state/find-phone-volume"
    var logs: [String] = []
    let agent = try Daemon(
      loop: loop, options: options, version: "test", alert: audio, volume: audio,
      log: { logs.append($0) })
    var config = Config()
    var tag = TagConfig(name: "keys", line: 1)
    tag.address = BDAddress("00:AA:01:00:00:07")
    config.tags = [tag]
    var region = RegionConfig(name: "keys-home", line: 5)
    region.tags = ["keys"]
    region.exitAfter = .seconds(1)
    region.onExit = ["/bin/sh", "-c", "echo $EARSHOT_EVENT $EARSHOT_REGION >>\(dir)/hooks.out"]
    config.regions = [region]
    var events: [String] = []
    let driver = try MonitorDriver(
      config: config, emitRange: true, stateFile: StateFile(path: dir + "/state.json"),
      runHooks: true, output: { events.append("\($0.kind.rawValue) \($0.state.rawValue)") },
      log: { logs.append($0) })
    driver.start(at: DecisionTime(micros: Clock.realtimeMicros()), scanning: false)
    let tags = TagTransport(tags: [tag], agent: agent, busAddress: bus.address)
    tags.onPresence = {
      driver.tag($0, connected: $1, at: DecisionTime(micros: Clock.realtimeMicros()))
    }
    agent.attach(tags: tags, showStatus: true)
    XCTAssertEqual(driver.monitor.state(of: "keys-home"), .unknown)
    tags.start()
    try run(loop, "inside on connect") { driver.monitor.state(of: "keys-home") == .inside }
    XCTAssertEqual(events, ["state unknown", "state inside"])

    // The link drops and every retry fails: outside once exit_after passed.
    refuse = true
    let lostAt = Clock.realtimeMicros()
    try? bluez.emit(
      path: Self.device, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
      [.string("org.bluez.Device1"), .properties([("Connected", .bool(false))]), .strings([])])
    try run(loop, "outside after the loss") {
      driver.advance(to: DecisionTime(micros: Clock.realtimeMicros()))
      return driver.monitor.state(of: "keys-home") == .outside
    }
    XCTAssertGreaterThanOrEqual(Clock.realtimeMicros() - lostAt, 1_000_000, "not before exit_after")
    XCTAssertEqual(events, ["state unknown", "state inside", "exit outside"])
    XCTAssertTrue(logs.contains { $0.contains("tag keys: cannot connect") }, "\(logs)")
    try run(loop, "the on_exit hook ran") {
      driver.hooks?.reap()
      return (try? String(contentsOfFile: dir + "/hooks.out", encoding: .utf8))
        == "exit keys-home\n"
    }
    let saved = try String(contentsOfFile: dir + "/state.json", encoding: .utf8)
    XCTAssertTrue(saved.contains("keys-home"), saved)

    // Back: inside at once, an enter.
    refuse = false
    try run(loop, "back inside") { driver.monitor.state(of: "keys-home") == .inside }
    XCTAssertEqual(events.last, "enter inside")
    tags.stop()
  }

  /// A connect whose services never resolve gives up after its timeout.
  func testServicesThatNeverResolveTimeOut() throws {
    let bus = try PrivateBus()
    self.bus = bus
    let loop = try EventLoop()
    let bluez = try DBusConnection(loop: loop, address: bus.address)
    try bluez.serve(prefix: "/") { call in
      switch call.member {
      case "Connect": call.reply()
      case "Get": call.reply([.variant(.bool(false))])
      default: return false
      }
      return true
    }
    try bluez.requestName("org.bluez")
    let central = try BlueZCentral(loop: loop, busAddress: bus.address)
    var result: Result<Void, TagFailure>?
    central.connect(Self.device, timeout: 0.3) {
      result = $0
      loop.stop()
    }
    loop.after(seconds: 10) { loop.stop() }
    try loop.run()
    guard case .failure(let e)? = result else { return XCTFail("\(String(describing: result))") }
    XCTAssertEqual(e.description, "services not resolved within 0.3 s")
  }
}
