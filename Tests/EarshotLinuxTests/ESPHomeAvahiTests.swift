import EarshotCore
import EarshotLinux
import EarshotTestSupport
import XCTest

/// The proxy's mDNS announcement through Avahi's D-Bus API, against a
/// stand-in for avahi-daemon on a private bus.
final class ESPHomeAvahiTests: XCTestCase {
  static let info = ESPHomeDeviceInfo(
    name: "laptop", friendlyName: "Laptop", macAddress: "02:AB:00:00:00:01",
    bluetoothMacAddress: "02:AB:00:00:00:01", compilationTime: "t", projectVersion: "0.1",
    encrypted: true)

  func testPublishesTheServiceWithESPHomesRecords() throws {
    let bus = try PrivateBus()
    let loop = try EventLoop()
    let avahi = try DBusConnection(loop: loop, address: bus.address)
    var calls: [String] = []
    var added: [DBusValue] = []
    try avahi.serve(prefix: "/") { call in
      calls.append(call.member)
      switch call.member {
      case "EntryGroupNew": call.reply([.objectPath("/Client1/EntryGroup1")])
      case "AddService":
        added = call.arguments
        call.reply()
      case "Commit": call.reply()
      default: return false
      }
      return true
    }
    try avahi.requestName("org.freedesktop.Avahi")
    let agent = try DBusConnection(loop: loop, address: bus.address)
    var logs: [String] = []
    let a = AvahiAnnouncement(
      bus: agent, name: "laptop", port: 6053, txt: AvahiAnnouncement.records(Self.info),
      log: { logs.append($0) })
    a.onPublished = { _ in loop.stop() }
    try a.start()
    loop.after(seconds: 10) { loop.stop() }
    try loop.run()
    XCTAssertEqual(calls, ["EntryGroupNew", "AddService", "Commit"])
    XCTAssertEqual(a.group, "/Client1/EntryGroup1")
    XCTAssertEqual(
      Array(added.prefix(8)),
      [
        .int32(-1), .int32(-1), .uint32(0), .string("laptop"), .string("_esphomelib._tcp"),
        .string(""), .string(""), .uint16(6053),
      ])
    guard case .array(_, let txt)? = added.last else { return XCTFail("no TXT: \(added)") }
    let records = txt.compactMap { v -> String? in
      if case .bytes(let b) = v { return String(decoding: b, as: UTF8.self) }
      return nil
    }
    XCTAssertTrue(records.contains("mac=02ab00000001"), "\(records)")
    XCTAssertTrue(records.contains("friendly_name=Laptop"), "\(records)")
    XCTAssertTrue(records.contains("api_encryption=Noise_NNpsk0_25519_ChaChaPoly_SHA256"))
    XCTAssertEqual(logs, ["esphome: announced 'laptop' as _esphomelib._tcp through Avahi"])
  }

  func testSilentWithoutAvahi() throws {
    let bus = try PrivateBus(activation: false)
    let loop = try EventLoop()
    let agent = try DBusConnection(loop: loop, address: bus.address)
    var logs: [String] = []
    let a = AvahiAnnouncement(
      bus: agent, name: "laptop", port: 6053, txt: [], log: { logs.append($0) })
    try a.start()
    loop.after(seconds: 0.5) { loop.stop() }
    try loop.run()
    XCTAssertNil(a.group)
    XCTAssertEqual(logs, [])
  }
}
