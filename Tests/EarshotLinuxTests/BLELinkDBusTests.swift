import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

/// The link's D-Bus side against a real dbus-daemon (a private bus). A
/// second connection takes the name org.bluez and answers Device1 property
/// reads the way bluetoothd does, and calls WriteValue as bluetoothd does
/// when a device writes. The real bluetoothd runs in the kernel test bed
/// (Tests/vm); this test pins down the D-Bus shapes and the write path.
final class BLELinkDBusTests: XCTestCase {
  private var bus: PrivateBus?

  override func tearDown() { bus = nil }

  private func startBus() throws -> String {
    let bus = try PrivateBus()
    self.bus = bus
    return bus.address
  }

  /// A bluetoothd stand-in with one adapter that serves GATT: answers the
  /// object tree and both registrations, telling `onCall` of each.
  /// `refusing`: methods whose first call is answered with an error (noted
  /// as "NAME refused"), as a bluetoothd still starting up may.
  fileprivate func fakeBlueZ(
    _ loop: EventLoop, _ address: String, refusing: Set<String> = [],
    onCall: @escaping (String) -> Void
  ) throws -> DBusConnection {
    let bluez = try DBusConnection(loop: loop, address: address)
    var refusing = refusing
    try bluez.serve(prefix: "/") { call in
      if refusing.remove(call.member) != nil {
        call.replyError("org.bluez.Error.Failed", "not ready")
        onCall(call.member + " refused")
        return true
      }
      switch call.member {
      case "GetManagedObjects":
        let ifaces: [(DBusValue, DBusValue)] = [
          (.string("org.bluez.GattManager1"), .properties([])),
          (.string("org.bluez.LEAdvertisingManager1"), .properties([])),
        ]
        call.reply([
          .dict(
            key: "o", value: "a{sa{sv}}",
            [(.objectPath("/org/bluez/hci0"), .dict(key: "s", value: "a{sv}", ifaces))])
        ])
      case "RegisterApplication", "RegisterAdvertisement", "RegisterAgent", "RequestDefaultAgent":
        call.reply()
      default:
        return false
      }
      onCall(call.member)
      return true
    }
    try bluez.requestName("org.bluez")
    return bluez
  }

  /// A bluetoothd that crashes (its connection goes, and the name
  /// org.bluez with it) and comes back as a new connection, noting every
  /// call it answers in `calls`.
  private final class RestartingBlueZ {
    private(set) var current: DBusConnection?
    private(set) var cameBack = false
    var calls: [String] = []
    private var refusing: Set<String> = []
    private let start: (RestartingBlueZ) throws -> DBusConnection

    init(_ test: BLELinkDBusTests, _ loop: EventLoop, _ address: String) throws {
      start = { me in
        try test.fakeBlueZ(loop, address, refusing: me.refusing) { [unowned me] in
          me.calls.append($0)
        }
      }
      current = try start(self)
    }

    func crash() {
      current?.close()
      current = nil
    }

    /// `refusing`: see `fakeBlueZ`.
    func comeBack(refusing: Set<String> = []) {
      self.refusing = refusing
      current = try? start(self)
      cameBack = current != nil
    }
  }

  /// A link server offering find only, on the private bus.
  private func findOnlyServer(_ loop: EventLoop, _ address: String) throws -> BLELinkServer {
    var config = LinkConfig()
    config.enabled = true
    return try BLELinkServer(
      loop: loop, config: config, name: "lab", features: [.find], busAddress: address)
  }

  /// BlueZ's Device1 `Connected` going false is a disconnect event, with
  /// the address from the object path; other property changes are not.
  func testADeviceDisconnectIsAnEvent() throws {
    let address = try startBus()
    let loop = try EventLoop()
    let server = try findOnlyServer(loop, address)
    var events: [BLELinkServer.Event] = []
    server.onEvent = { events.append($0) }
    let bluez = try fakeBlueZ(loop, address) { _ in }
    server.onReady = { _ in
      let device = "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_07"
      func changed(
        _ iface: String, _ props: [(String, DBusValue)], path: String = device
      ) {
        try? bluez.emit(
          path: path, interface: "org.freedesktop.DBus.Properties",
          member: "PropertiesChanged", [.string(iface), .properties(props), .strings([])])
      }
      changed("org.bluez.Device1", [("RSSI", .int16(-60))])
      changed("org.bluez.Device1", [("Connected", .bool(true))])
      changed("org.bluez.Adapter1", [("Connected", .bool(false))])
      changed("org.bluez.Device1", [("Connected", .bool(false))])
      // The same device seen by another adapter is not the link's.
      changed(
        "org.bluez.Device1", [("Connected", .bool(false))],
        path: "/org/bluez/hci1/dev_AA_BB_CC_DD_EE_08")
      loop.after(seconds: 0.3) { loop.stop() }
    }
    server.start()
    loop.after(seconds: 10) { loop.stop() }
    try loop.run()
    XCTAssertEqual(events, [.disconnected(BDAddress("AA:BB:CC:DD:EE:07")!)])
    XCTAssertEqual(
      BLELinkServer.address(ofDevicePath: "/org/bluez/hci1/dev_00_AA_01_01_00_01"),
      BDAddress("00:AA:01:01:00:01"))
    XCTAssertNil(BLELinkServer.address(ofDevicePath: "/org/bluez/hci1"))
    XCTAssertNil(BLELinkServer.address(ofDevicePath: "/org/bluez/hci1/dev_nonsense"))
  }

  /// bluetoothd's registrations die with it: when it leaves the bus the
  /// link says so and is down; when it is back, the link registers again.
  func testRegistersAgainWhenBluetoothdComesBack() throws {
    let address = try startBus()
    let loop = try EventLoop()
    let server = try findOnlyServer(loop, address)
    var logs: [String] = []
    server.onLog = { logs.append($0) }
    let bluez = try RestartingBlueZ(self, loop, address)
    var ready: [String] = []
    server.onReady = { result in
      switch result {
      case .success(let adapter): ready.append("up \(adapter)")
      case .failure(let e): ready.append("down: \(e)")
      }
      switch ready.count {
      case 1: bluez.crash()
      case 2: bluez.comeBack()
      default: loop.stop()
      }
    }
    server.start()
    loop.after(seconds: 10) { loop.stop() }
    try loop.run()
    XCTAssertTrue(bluez.cameBack)
    XCTAssertEqual(
      ready, ["up /org/bluez/hci0", "down: org.bluez left the bus", "up /org/bluez/hci0"])
    XCTAssertEqual(
      bluez.calls,
      [
        "GetManagedObjects", "RegisterApplication", "RegisterAdvertisement",
        "GetManagedObjects", "RegisterApplication", "RegisterAdvertisement",
      ])
    XCTAssertTrue(logs.contains { $0.contains("bluetoothd left the bus") }, "\(logs)")
    XCTAssertTrue(logs.contains { $0.contains("registering the link again") }, "\(logs)")
  }

  /// The pairing agent (earshot ble-agent) registers, sees bluetoothd go,
  /// and registers again, as the default agent, when it is back.
  func testTheAgentRegistersAgainWhenBluetoothdComesBack() throws {
    let address = try startBus()
    let loop = try EventLoop()
    let agent = try BlueZAgent(
      loop: loop, capability: "KeyboardDisplay", accept: true, busAddress: address)
    let bluez = try RestartingBlueZ(self, loop, address)
    var states: [String] = []
    agent.start { state in
      switch state {
      case .ready: states.append("ready")
      case .failed(let e): states.append("failed: \(e)")
      case .bluetoothdGone: states.append("gone")
      }
      switch states.count {
      case 1: bluez.crash()
      // Back, but not ready at first: the agent tries again a second later.
      case 2: bluez.comeBack(refusing: ["RegisterAgent"])
      default: loop.stop()
      }
    }
    loop.after(seconds: 10) { loop.stop() }
    try loop.run()
    XCTAssertTrue(bluez.cameBack)
    XCTAssertEqual(states, ["ready", "gone", "ready"])
    XCTAssertEqual(
      bluez.calls,
      [
        "RegisterAgent", "RequestDefaultAgent",
        "RegisterAgent refused", "RegisterAgent", "RequestDefaultAgent",
      ])
  }

  /// With no bluetoothd on the bus the first registration fails, saying so.
  func testTheAgentSaysWhenBluetoothdIsNotThere() throws {
    let address = try startBus()
    let loop = try EventLoop()
    let agent = try BlueZAgent(
      loop: loop, capability: "KeyboardDisplay", accept: false, busAddress: address)
    var states: [String] = []
    agent.start { state in
      if case .failed(let e) = state {
        states.append("failed: \(e)")
      } else {
        states.append("other")
      }
      loop.stop()
    }
    loop.after(seconds: 10) { loop.stop() }
    try loop.run()
    XCTAssertEqual(states.count, 1)
    XCTAssertTrue(states.first?.contains("org.bluez") ?? false, "\(states)")
  }

  func testGattObjectsAndTheWritePath() throws {
    let address = try startBus()
    let loop = try EventLoop()
    var config = LinkConfig()
    config.enabled = true
    config.allow = try LinkAllow.parse("AA:BB:CC:DD:EE:01")
    config.legacyRemoteVolume = true
    let server = try BLELinkServer(
      loop: loop, config: config, name: "lab", features: [.find, .volume], busAddress: address)
    var logs: [String] = []
    var events: [BLELinkServer.Event] = []
    server.onLog = { logs.append($0) }
    server.onEvent = { event in
      events.append(event)
      switch event {
      case .request(let frame, _):
        server.send(.ok(.findStart(.ringing), to: frame))
      case .legacy(.volume, _):
        server.sendLegacyVolume(0.25)
      default: break
      }
    }

    // bluetoothd's stand-in: Device1 properties for three devices.
    let bluez = try DBusConnection(loop: loop, address: address)
    try bluez.requestName("org.bluez")
    let devices: [String: (String, Bool)] = [
      "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_01": ("AA:BB:CC:DD:EE:01", true),
      "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_02": ("AA:BB:CC:DD:EE:02", false),
      "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_03": ("AA:BB:CC:DD:EE:03", true),
    ]
    try bluez.serve(prefix: "/org/bluez") { call in
      guard call.member == "GetAll", let d = devices[call.path] else { return false }
      call.reply([
        .properties([
          ("Address", .string(d.0)), ("Paired", .bool(d.1)), ("Bonded", .bool(d.1)),
        ])
      ])
      return true
    }
    var notified: [(String, [UInt8])] = []
    try bluez.match(
      "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'"
    ) { path, _, args in
      if args.count == 3, let v = args[1]["Value"]?.bytesValue { notified.append((path, v)) }
    }

    let peer = server.busName
    var tree: [DBusValue] = []
    var results: [String: String] = [:]
    let write = "/org/earshot/link/service0/write"
    let legacy = "/org/earshot/link/service1/write"
    let dev1 = "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_01"
    let cases: [(String, String, [UInt8], String?, UInt16)] = [
      ("find_start", write, hex("01 07"), dev1, 0),
      ("info", write, hex("00 05"), dev1, 0),
      ("out_of_range", write, hex("11 01 e9 03"), dev1, 0),
      ("short", write, hex("11 01 f4"), dev1, 0),
      ("unknown_op", write, hex("05 01"), dev1, 0),
      ("offset", write, hex("01 01"), dev1, 2),
      ("not_bonded", write, hex("01 01"), "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_02", 0),
      ("not_allowed", write, hex("01 01"), "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_03", 0),
      ("no_device", write, hex("01 01"), nil, 0),
      ("req_name", legacy, Array("REQ_NAME".utf8), dev1, 0),
      ("req_volume", legacy, Array("REQ_VOLUME".utf8), dev1, 0),
      ("set_volume", legacy, LegacyRemoteVolume.encodeVolume(0.25), dev1, 0),
      ("legacy_short", legacy, hex("00 00 00 00 00 00 d0"), dev1, 0),
      ("legacy_nan", legacy, LegacyRemoteVolume.encodeVolume(.nan), dev1, 0),
    ]
    bluez.call(
      destination: peer, path: "/org/earshot/link",
      interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects"
    ) { result in
      tree = (try? result.get()) ?? []
      // Writes one after another, as bluetoothd serializes a device's writes.
      func next(_ i: Int) {
        guard i < cases.count else {
          loop.after(seconds: 0.2) { loop.stop() }
          return
        }
        let (label, path, bytes, device, offset) = cases[i]
        var options: [(String, DBusValue)] = [
          ("type", .string("request")), ("link", .string("LE")),
        ]
        if let device { options.append(("device", .objectPath(device))) }
        if offset != 0 { options.append(("offset", .uint16(offset))) }
        bluez.call(
          destination: peer, path: path, interface: "org.bluez.GattCharacteristic1",
          member: "WriteValue", [.bytes(bytes), .properties(options)]
        ) { r in
          switch r {
          case .success: results[label] = "ok"
          case .failure(.remote(let name, let message)): results[label] = "\(name) \(message)"
          case .failure(let e): results[label] = "\(e)"
          }
          next(i + 1)
        }
      }
      next(0)
    }
    loop.after(seconds: 10) { loop.stop() }
    try loop.run()

    // The object tree BlueZ reads: three services (the link, legacy,
    // Immediate Alert), five characteristics.
    let objects = tree.first?.entries.map(\.0).sorted() ?? []
    XCTAssertEqual(
      objects,
      [
        "/org/earshot/link/service0", "/org/earshot/link/service0/notify",
        "/org/earshot/link/service0/write", "/org/earshot/link/service1",
        "/org/earshot/link/service1/notify", "/org/earshot/link/service1/write",
        "/org/earshot/link/service2", "/org/earshot/link/service2/alert_level",
      ])
    let writeProps = tree.first?["/org/earshot/link/service0/write"]?[
      "org.bluez.GattCharacteristic1"]
    XCTAssertEqual(writeProps?["UUID"]?.stringValue, LinkUUID.write)
    XCTAssertEqual(writeProps?["Flags"], .strings(["encrypt-authenticated-write"]))
    let notifyProps = tree.first?["/org/earshot/link/service0/notify"]?[
      "org.bluez.GattCharacteristic1"]
    XCTAssertEqual(notifyProps?["Flags"], .strings(["encrypt-authenticated-notify"]))
    XCTAssertEqual(
      tree.first?["/org/earshot/link/service0"]?["org.bluez.GattService1"]?["UUID"]?.stringValue,
      LinkUUID.service)

    XCTAssertEqual(results["find_start"], "ok")
    XCTAssertEqual(results["info"], "ok")
    XCTAssertEqual(results["out_of_range"], "org.bluez.Error.Failed 0x81")
    XCTAssertEqual(results["short"], "org.bluez.Error.InvalidValueLength invalid value length")
    XCTAssertEqual(results["unknown_op"], "org.bluez.Error.Failed 0x80")
    XCTAssertEqual(results["offset"], "org.bluez.Error.InvalidOffset invalid offset")
    XCTAssertEqual(results["not_bonded"], "org.bluez.Error.NotAuthorized not authorized")
    XCTAssertEqual(results["not_allowed"], "org.bluez.Error.NotAuthorized not authorized")
    XCTAssertEqual(results["no_device"], "org.bluez.Error.NotAuthorized not authorized")
    XCTAssertEqual(results["req_name"], "ok")
    XCTAssertEqual(results["req_volume"], "ok")
    XCTAssertEqual(results["set_volume"], "ok")
    XCTAssertEqual(
      results["legacy_short"], "org.bluez.Error.InvalidValueLength invalid value length")
    XCTAssertEqual(results["legacy_nan"], "org.bluez.Error.Failed 0x81")

    // Exactly the accepted requests reached the agent.
    let dev = BDAddress("AA:BB:CC:DD:EE:01")!
    XCTAssertEqual(
      events,
      [
        .request(LinkRequestFrame(seq: 7, request: .findStart), from: dev),
        .legacy(.volume, from: dev), .legacy(.setVolume(0.25), from: dev),
      ])
    // Notifications, in order: the find_start response, info (answered by
    // the server), the name, the volume.
    XCTAssertEqual(
      notified.map(\.0),
      [
        "/org/earshot/link/service0/notify", "/org/earshot/link/service0/notify",
        "/org/earshot/link/service1/notify", "/org/earshot/link/service1/notify",
      ])
    XCTAssertEqual(
      notified.map(\.1),
      [
        hex("81 07 00 00"), hex("80 05 00 01 03"), Array("lab".utf8),
        LegacyRemoteVolume.encodeVolume(0.25),
      ])
    // Refusals are logged with the address and the reason.
    XCTAssertTrue(
      logs.contains {
        $0.contains("refused a write from AA:BB:CC:DD:EE:02") && $0.contains("not bonded")
      }, "\(logs)")
    XCTAssertTrue(
      logs.contains {
        $0.contains("refused a write from AA:BB:CC:DD:EE:03") && $0.contains("[link] allow")
      }, "\(logs)")
    XCTAssertTrue(logs.contains { $0.contains("malformed write from AA:BB:CC:DD:EE:01") })
  }
}
