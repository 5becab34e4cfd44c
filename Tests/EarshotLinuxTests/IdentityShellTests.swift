import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotCore
@testable import EarshotLinux

/// Identity regions through the shell: the config file's `device =` and
/// `irk =`, and a capture of rotating private addresses made and resolved
/// with libcrypto's AES through the monitor driver (hooks, state file).
final class IdentityShellTests: XCTestCase {
  var dir = ""
  let keyHex = "9F4A2C0E5B7D41E8A1C23D4E5F607182"
  let identity = BDAddress("00:1A:7D:DA:71:13")!

  override func setUp() {
    dir =
      NSTemporaryDirectory() + "earshot-identity-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
  }

  override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

  func testConfigReadsDevicesAndKeys() throws {
    let config = try Config.build(
      IniReader.parse(
        """
        [region "alice"]
        device = 00:1A:7D:DA:71:13 c3:5a:10:22:33:44
        irk = \(keyHex) 0123456789abcdef0123456789abcdef
        power = -62
        [region "desk"]
        uuid = 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182
        device = 00:1A:7D:DA:71:13
        """, file: "t.conf"))
    let alice = config.regions[0]
    XCTAssertEqual(alice.devices, [identity, BDAddress("C3:5A:10:22:33:44")!])
    XCTAssertEqual(
      alice.irks.map(\.hex), [keyHex.lowercased(), "0123456789abcdef0123456789abcdef"])
    XCTAssertEqual(alice.irks[0].value.high, 0x9F4A_2C0E_5B7D_41E8, "most significant byte first")
    XCTAssertEqual(alice.power, -62)
    XCTAssertNil(alice.uuid)
    XCTAssertEqual(config.regions[1].power, RegionConfig.defaultDevicePower)
    XCTAssertTrue(config.render().contains("irk = \(keyHex.lowercased()) 0123"))
  }

  func testMalformedKeysAndAddressesNameFileLineAndKey() {
    let text = """
      [region "a"]
      irk = \(keyHex.dropLast())
      [region "b"]
      device = 00:1A:7D:DA:71
      [region "c"]
      irk = \(keyHex) 0x\(keyHex.dropLast(2))
      [region "d"]
      exit_after = 30
      [region "e"]
      device = 00:1A:7D:DA:71:13
      power = 40
      """
    XCTAssertThrowsError(try Config.build(IniReader.parse(text, file: "bad.conf"))) { error in
      let lines = "\(error)".split(separator: "\n").map(String.init)
      XCTAssertEqual(lines.count, 5, "\(lines)")
      XCTAssertTrue(lines[0].hasPrefix("bad.conf:2: [region \"a\"] irk: "), lines[0])
      XCTAssertTrue(lines[0].contains("32 hex digits"), lines[0])
      XCTAssertTrue(lines[1].hasPrefix("bad.conf:4: [region \"b\"] device: "), lines[1])
      XCTAssertTrue(lines[1].contains("'00:1A:7D:DA:71' is not a Bluetooth address"), lines[1])
      XCTAssertTrue(lines[2].hasPrefix("bad.conf:6: [region \"c\"] irk: key 2: "), lines[2])
      XCTAssertTrue(lines[3].hasPrefix("bad.conf:7: [region \"d\"] uuid: "), lines[3])
      XCTAssertTrue(
        lines[3].contains(
          "a uuid (iBeacons), an altbeacon, an eddystone, a beacon (any format), a device"),
        lines[3])
      XCTAssertTrue(lines[4].hasPrefix("bad.conf:11: [region \"e\"] power: "), lines[4])
    }
  }

  /// A phone on private addresses that change every 90 s, made with
  /// libcrypto's AES; the driver (AES from libcrypto too) enters and exits
  /// on time, its hooks name the device, and the state file keeps the
  /// region across a restart without printing the key.
  func testRotatingAddressesThroughTheDriverWithLibcrypto() throws {
    var s = Scenario()
    s.duration = 600
    var phone = ScenarioDevice(name: "phone")
    phone.irk = try IdentityResolvingKey(hex: keyHex)
    phone.rotate = 90
    phone.interval = 0.5
    phone.loss = 0.3
    phone.txPower = 4
    phone.present = [60..<300]
    // A stranger on non-resolvable addresses keeps the capture going.
    var stranger = ScenarioDevice(name: "stranger")
    stranger.kind = .nrpa
    stranger.rotate = 30
    stranger.present = [0..<600]
    s.devices = [phone, stranger]
    let capture = s.capture(cipher: LibcryptoAES()).bytes
    let marks = dir + "/marks"
    let config = try Config.build(
      IniReader.parse(
        """
        [region "phone"]
        irk = \(keyHex)
        exit_after = 20
        on_enter = /bin/sh -c "echo enter $EARSHOT_DEVICE $EARSHOT_UUID. >> '\(marks)'"
        on_exit = /bin/sh -c "echo exit $EARSHOT_REGION >> '\(marks)'"
        """, file: "t.conf"))

    func replay(until: Int64) throws -> [MonitorEvent] {
      try replayThroughDriver(capture, config: config, stateFile: dir + "/state", until: until) {
        XCTAssertEqual(
          $0.monitor.devices.unresolvedCount, 0, "the stranger's addresses are never tried")
        XCTAssertGreaterThan($0.monitor.devices.resolvedCount, 1, "each of the phone's addresses")
      }
    }
    let first = try replay(until: s.micros(200))
    XCTAssertEqual(first.map(\.kind), [.state, .state, .enter])
    let enter = first[2]
    XCTAssertGreaterThanOrEqual(enter.decided.micros, s.micros(60))
    XCTAssertLessThanOrEqual(enter.decided.micros, s.micros(62))
    let second = try replay(until: s.micros(600))
    XCTAssertEqual(second.map(\.kind), [.state, .state, .exit])
    XCTAssertGreaterThanOrEqual(second[2].decided.micros, s.micros(300))
    XCTAssertLessThanOrEqual(second[2].decided.micros, s.micros(322))
    let tag = try IdentityResolvingKey(hex: keyHex).tag
    XCTAssertEqual(
      try String(contentsOfFile: marks, encoding: .utf8), "enter irk#\(tag) .\nexit phone\n")
    let state = try XCTUnwrap(try StateFile(path: dir + "/state").read())
    XCTAssertTrue(state.contains("+irk=\(tag)\toutside"), state)
    XCTAssertFalse(state.lowercased().contains(keyHex.lowercased()))
  }

  /// `device =` alone: the phone's private addresses count once its bond
  /// (key) is handed to the agent.
  func testBondedKeysThroughTheAgentMonitor() throws {
    let cipher = LibcryptoAES()
    let key = try IdentityResolvingKey(hex: keyHex)
    let config = try Config.build(
      IniReader.parse(
        """
        [region "phone"]
        device = \(identity)
        exit_after = 20
        """, file: "t.conf"))
    var events: [MonitorEvent] = []
    let driver = try MonitorDriver(
      config: config, emitRange: false, stateFile: nil, runHooks: false,
      output: { events.append($0) }, log: { _ in })
    let agent = AgentMonitor(loop: try EventLoop(), driver: driver)
    let rpa = key.address(prand: 0x2A_1234, cipher: cipher)
    var c = SyntheticCapture()
    c.appendDevice(
      micros: 1_000_000, address: rpa, type: .random, rssi: -60, txPower: nil)
    c.appendDevice(
      micros: 2_000_000, address: rpa, type: .random, rssi: -60, txPower: nil)
    let path = dir + "/c.btsnoop"
    try Data(c.bytes).write(to: URL(fileURLWithPath: path))
    try agent.replay(path: path)
    XCTAssertEqual(events.map(\.state), [.unknown])
    agent.updateBondedKeys([BondedKey(identity: identity, identityType: .public, irk: key)])
    try agent.replay(path: path)
    XCTAssertEqual(events.map(\.state), [.unknown, .inside])
    XCTAssertEqual(events.last?.beacons.first?.id.device?.address, identity)
  }
}
