import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

/// The Find Me target against a real dbus-daemon (a private bus): the
/// agent (in process, with the recording audio) serves the link's GATT
/// application; a second connection plays bluetoothd, answering Device1
/// reads and calling WriteValue on the Alert Level as bluetoothd does when
/// a locator writes it. The real bluetoothd and controllers are in the
/// kernel test bed (Tests/vm/tests/find_me.sh).
final class FindMeDBusTests: XCTestCase {
  private var bus: PrivateBus?
  private var directory = ""

  override func setUpWithError() throws { directory = try makeTempDirectory() }
  override func tearDown() {
    bus = nil
    try? FileManager.default.removeItem(atPath: directory)
  }

  private let alertLevel = "/org/earshot/link/service2/alert_level"
  private let bonded = "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_01"
  private let unbonded = "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_02"
  private let notAllowed = "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_03"

  /// One write as bluetoothd makes it; `command` is a Write Without Response.
  private struct Write {
    var label: String
    var device: String
    var bytes: [UInt8]
    var command = true
    /// Run before the write (on the loop), with the agent.
    var before: ((Daemon) -> Void)? = nil
  }

  /// What a write was answered with and where find-phone was afterwards.
  private struct After: Equatable {
    var reply: String
    var state: FindStatus.State
    var requesters: [String]
    var level: Double?
  }

  private func run(
    _ writes: [Write], user: VolumeSetting, security: LinkSecurityLevel = .authenticated
  ) throws -> (results: [String: After], tree: [DBusValue], logs: [String], audio: RecordingAudio) {
    let bus = try PrivateBus()
    self.bus = bus
    let audio = RecordingAudio(volume: user)
    audio.stateFile = "\(directory)/state/find-phone-volume"
    var logs: [String] = []
    var config = Config()
    config.link.enabled = true
    config.link.name = "lab"
    config.link.security = security
    config.link.allow = try LinkAllow.parse("AA:BB:CC:DD:EE:01, AA:BB:CC:DD:EE:02")
    // The agent earshot run builds, its bluetoothd the stand-in below on the private bus.
    var surroundings = AgentSurroundings.test(
      directory: directory, audio: .given(alert: audio, volume: audio), log: { logs.append($0) })
    surroundings.systemBus = bus.address
    let built = try Agent(config: config.inTest(directory), surroundings: surroundings)
    let (loop, agent) = (built.loop, built.daemon)
    let server = try XCTUnwrap(built.link)

    let bluez = try DBusConnection(loop: loop, address: bus.address)
    try bluez.requestName("org.bluez")
    let devices: [String: (String, Bool)] = [
      bonded: ("AA:BB:CC:DD:EE:01", true),
      unbonded: ("AA:BB:CC:DD:EE:02", false),
      notAllowed: ("AA:BB:CC:DD:EE:03", true),
    ]
    try bluez.serve(prefix: "/org/bluez") { call in
      guard call.member == "GetAll", let d = devices[call.path] else { return false }
      call.reply([
        .properties([("Address", .string(d.0)), ("Paired", .bool(d.1)), ("Bonded", .bool(d.1))])
      ])
      return true
    }

    var tree: [DBusValue] = []
    var results: [String: After] = [:]
    let peer = server.busName
    bluez.call(
      destination: peer, path: "/org/earshot/link",
      interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects"
    ) { result in
      tree = (try? result.get()) ?? []
      func next(_ i: Int) {
        guard i < writes.count else {
          loop.stop()
          return
        }
        let w = writes[i]
        w.before?(agent)
        let options: [(String, DBusValue)] = [
          ("type", .string(w.command ? "command" : "request")), ("link", .string("LE")),
          ("device", .objectPath(w.device)),
        ]
        bluez.call(
          destination: peer, path: self.alertLevel, interface: "org.bluez.GattCharacteristic1",
          member: "WriteValue", [.bytes(w.bytes), .properties(options)]
        ) { r in
          let reply: String
          switch r {
          case .success: reply = "ok"
          case .failure(.remote(let name, let message)): reply = "\(name) \(message)"
          case .failure(let e): reply = "\(e)"
          }
          let s = agent.find.status
          results[w.label] = After(
            reply: reply, state: s.state, requesters: s.requesters.map(\.description),
            level: s.level)
          next(i + 1)
        }
      }
      next(0)
    }
    loop.after(seconds: 10) { loop.stop() }
    try loop.run()
    return (results, tree, logs, audio)
  }

  func testTheImmediateAlertServiceIsPartOfTheApplication() throws {
    let (_, tree, _, _) = try run([], user: VolumeSetting(level: 0.3, muted: false))
    let root = tree.first
    XCTAssertEqual(
      root?["/org/earshot/link/service2"]?["org.bluez.GattService1"]?["UUID"]?.stringValue,
      "00001802-0000-1000-8000-00805f9b34fb")
    let chrc = root?[alertLevel]?["org.bluez.GattCharacteristic1"]
    XCTAssertEqual(chrc?["UUID"]?.stringValue, "00002a06-0000-1000-8000-00805f9b34fb")
    XCTAssertEqual(chrc?["Service"], .objectPath("/org/earshot/link/service2"))
    XCTAssertEqual(
      chrc?["Flags"], .strings(["write-without-response", "encrypt-authenticated-write"]),
      "the link's security: only an authenticated, encrypted link may write")
  }

  func testHighRingsWithTheRaiseAndNoneStopsIt() throws {
    let user = VolumeSetting(level: 0.3, muted: false)
    let me = "findme:AA:BB:CC:DD:EE:01"
    let (r, _, logs, audio) = try run(
      [
        Write(label: "high", device: bonded, bytes: [2]),
        Write(label: "reserved", device: bonded, bytes: [3], command: false),
        Write(label: "two bytes", device: bonded, bytes: [2, 0], command: false),
        Write(label: "empty", device: bonded, bytes: []),
        Write(label: "unbonded", device: unbonded, bytes: [2], command: false),
        Write(label: "not allowed", device: notAllowed, bytes: [2], command: false),
        Write(label: "none", device: bonded, bytes: [0]),
        Write(label: "none again", device: bonded, bytes: [0]),
      ], user: user)
    XCTAssertEqual(r["high"], After(reply: "ok", state: .ringing, requesters: [me], level: 0.9))
    // Bad values: the D-Bus error names the ATT error (bluetoothd 5.66 does
    // not pass it on for this characteristic: it acknowledges writes to a
    // Write Without Response characteristic itself), one log line each, and
    // the ring goes on as it was.
    XCTAssertEqual(
      r["reserved"],
      After(reply: "org.bluez.Error.Failed 0x81", state: .ringing, requesters: [me], level: 0.9))
    XCTAssertEqual(
      r["two bytes"]?.reply, "org.bluez.Error.InvalidValueLength invalid value length")
    XCTAssertEqual(r["two bytes"]?.state, .ringing)
    XCTAssertEqual(r["empty"]?.state, .ringing)
    XCTAssertEqual(
      logs.filter { $0.contains("refused an Alert Level write from AA:BB:CC:DD:EE:01") },
      [
        "link: refused an Alert Level write from AA:BB:CC:DD:EE:01: alert level 3 is reserved (0 none, 1 mild, 2 high); nothing changed",
        "link: refused an Alert Level write from AA:BB:CC:DD:EE:01: alert level must be 1 byte, got 2; nothing changed",
        "link: refused an Alert Level write from AA:BB:CC:DD:EE:01: alert level must be 1 byte, got 0; nothing changed",
      ])
    // The link's policy: bonded and allowed, or nothing.
    XCTAssertEqual(
      r["unbonded"],
      After(
        reply: "org.bluez.Error.NotAuthorized not authorized", state: .ringing, requesters: [me],
        level: 0.9))
    XCTAssertEqual(r["not allowed"]?.reply, "org.bluez.Error.NotAuthorized not authorized")
    XCTAssertEqual(r["not allowed"]?.requesters, [me])
    XCTAssertTrue(
      logs.contains {
        $0.contains("refused a write from AA:BB:CC:DD:EE:02") && $0.contains("bonded")
      },
      "\(logs)")
    // 0: the device withdraws (a device stop, not a found): silence, restore.
    XCTAssertEqual(r["none"], After(reply: "ok", state: .idle, requesters: [], level: nil))
    XCTAssertEqual(r["none again"]?.state, .idle)
    XCTAssertEqual(audio.volume, user, "the user's volume is back")
    XCTAssertEqual(audio.calls.filter { $0 == "startAlert" }.count, 1)
    XCTAssertEqual(audio.calls.filter { $0 == "stopAlert" }.count, 1)
    XCTAssertTrue(logs.contains("link: \(me) wrote Alert Level 2 (high)"), "\(logs)")
    XCTAssertTrue(logs.contains { $0.hasPrefix("link: \(me): \"not_requested\"") }, "\(logs)")
    XCTAssertFalse(logs.contains { $0.contains("notice") }, "a device stop sends no notice")
  }

  func testMildRingsAtTheUsersLevelAndAFoundIsLoggedNotSent() throws {
    let user = VolumeSetting(level: 0.3, muted: true)
    let me = "findme:AA:BB:CC:DD:EE:01"
    var found: RequestOutcome?
    var ends: [FindEndReason?] = []
    let (r, _, logs, audio) = try run(
      [
        Write(label: "mild", device: bonded, bytes: [1]),
        Write(label: "high", device: bonded, bytes: [2]),
        // The user finds the laptop, then the locator rings mildly again.
        Write(
          label: "mild again", device: bonded, bytes: [1],
          before: { agent in
            agent.perform(.found, from: Requester(device: nil, name: "user")) { found = $0 }
            ends.append(agent.find.status.lastEnd)
          }),
        Write(label: "stop", device: bonded, bytes: [0]),
      ], user: user)
    // Mild: the user's own 0.3, unmuted; high raises it to 0.9.
    XCTAssertEqual(r["mild"], After(reply: "ok", state: .ringing, requesters: [me], level: 0.3))
    XCTAssertEqual(r["high"], After(reply: "ok", state: .ringing, requesters: [me], level: 0.9))
    XCTAssertEqual(
      r["mild again"], After(reply: "ok", state: .ringing, requesters: [me], level: 0.3))
    XCTAssertEqual(r["stop"]?.state, .idle)
    guard case .found(.stopping(let notify)?, _)? = found else {
      return XCTFail("found: \(String(describing: found))")
    }
    XCTAssertEqual(notify.map(\.description), [me])
    XCTAssertEqual(ends, [.found])
    let sets = audio.calls.filter { $0.hasPrefix("set ") }.map { $0.prefix { $0 != "(" } }
    XCTAssertEqual(
      sets, ["set 0.300 ", "set 0.900 ", "set 0.300 muted ", "set 0.300 ", "set 0.300 muted "],
      "mild unmutes at the user's level, high raises, each end restores the mute")
    // No notice can reach a Find Me locator: the link takes it, and says so.
    XCTAssertTrue(
      logs.contains(
        "link: \(me) was told nothing: the Immediate Alert service has no found notice"),
      "\(logs)")
    XCTAssertTrue(logs.contains("find-phone: \(me) accepted notice 1"), "\(logs)")
  }
}
