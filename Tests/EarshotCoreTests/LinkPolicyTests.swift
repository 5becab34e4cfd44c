import EarshotTestSupport
import XCTest

@testable import EarshotCore

final class LinkPolicyTests: XCTestCase {
  let a = BDAddress("AA:BB:CC:DD:EE:01")!
  let b = BDAddress("AA:BB:CC:DD:EE:02")!

  private func policy(_ lines: [(String, String)]) throws -> LinkPolicy {
    var c = LinkConfig()
    for (k, v) in lines { try c.set(k, v) }
    return LinkPolicy(config: c)
  }

  func testDefaults() {
    let c = LinkConfig()
    XCTAssertFalse(c.enabled)
    XCTAssertEqual(c.allow, .bonded)
    XCTAssertEqual(c.security, .authenticated)
    XCTAssertFalse(c.legacyRemoteVolume)
    XCTAssertNil(c.name)
    XCTAssertEqual(
      LinkPolicy(config: c).decide(.init(address: a, bonded: true, encrypted: true)),
      .refuse(.disabled))
  }

  func testBondedAllowsAnyBondedEncryptedDevice() throws {
    let p = try policy([("enabled", "true"), ("allow", "bonded")])
    XCTAssertEqual(p.decide(.init(address: a, bonded: true, encrypted: true)), .accept)
    XCTAssertEqual(p.decide(.init(address: b, bonded: true, encrypted: true)), .accept)
    XCTAssertEqual(
      p.decide(.init(address: a, bonded: false, encrypted: true)), .refuse(.notBonded))
    XCTAssertEqual(
      p.decide(.init(address: a, bonded: true, encrypted: false)), .refuse(.notEncrypted))
    XCTAssertEqual(
      p.decide(.init(address: a, bonded: false, encrypted: false)), .refuse(.notEncrypted))
  }

  func testAddressListNeedsBondingToo() throws {
    let p = try policy([("enabled", "yes"), ("allow", "aa:bb:cc:dd:ee:01")])
    XCTAssertEqual(p.decide(.init(address: a, bonded: true, encrypted: true)), .accept)
    XCTAssertEqual(
      p.decide(.init(address: b, bonded: true, encrypted: true)), .refuse(.notAllowed))
    XCTAssertEqual(
      p.decide(.init(address: a, bonded: false, encrypted: true)), .refuse(.notBonded))
    for r in [LinkPolicy.Refusal.disabled, .notEncrypted, .notBonded, .notAllowed] {
      XCTAssertEqual(r.attErrorCode, 0x08)
    }
  }

  func testAllowParsing() throws {
    XCTAssertEqual(
      try LinkAllow.parse(" AA:BB:CC:DD:EE:01, AA:BB:CC:DD:EE:02 AA:BB:CC:DD:EE:01"),
      .addresses([a, b]))
    XCTAssertEqual(
      try LinkAllow.parse("AA:BB:CC:DD:EE:02,AA:BB:CC:DD:EE:01").description,
      "AA:BB:CC:DD:EE:01, AA:BB:CC:DD:EE:02")
    XCTAssertThrowsError(try LinkAllow.parse("")) {
      XCTAssertEqual("\($0)", "allow is empty; write 'bonded' or a list of addresses")
    }
    XCTAssertThrowsError(try LinkAllow.parse("AA:BB:CC:DD:EE")) {
      XCTAssertTrue("\($0)".hasPrefix("'AA:BB:CC:DD:EE' is not an address"))
    }
    XCTAssertThrowsError(try LinkAllow.parse("everyone"))
  }

  func testConfigKeys() throws {
    var c = LinkConfig()
    try c.set("legacy_remote_volume", "on")
    try c.set("name", "  lab laptop ")
    try c.set("security", "encrypted")
    try c.set("adapter", "hci1")
    XCTAssertTrue(c.legacyRemoteVolume)
    XCTAssertEqual(c.name, "lab laptop")
    XCTAssertEqual(c.security, .encrypted)
    XCTAssertEqual(c.adapter, "hci1")
    XCTAssertThrowsError(try c.set("name", String(repeating: "x", count: 21)))
    // Empty is the default (the host name), as check-config prints it.
    try c.set("name", "")
    XCTAssertNil(c.name)
    XCTAssertThrowsError(try c.set("security", "none"))
    XCTAssertThrowsError(try c.set("enabled", "maybe")) {
      XCTAssertEqual("\($0)", "expected true or false, got 'maybe'")
    }
    XCTAssertThrowsError(try c.set("adapter", "bt0"))
    XCTAssertThrowsError(try c.set("alow", "bonded")) {
      XCTAssertTrue("\($0)".contains("unknown key 'alow' in [link]; keys: enabled, allow"))
    }
    XCTAssertEqual(
      LinkConfig.keys.map(\.name),
      [
        "enabled", "allow", "security", "legacy_remote_volume", "name", "adapter",
      ])
    XCTAssertEqual(LinkConfig.keys.first { $0.name == "allow" }!.show(LinkConfig()), "bonded")
  }

  func testRefusalLogThrottlesRepeats() {
    var log = RefusalLog(intervalSeconds: 60)
    let s: UInt64 = 1_000_000_000
    XCTAssertEqual(
      log.record(.notBonded, address: a, what: "write", now: 10 * s),
      "link: refused write from AA:BB:CC:DD:EE:01: the device is not bonded; pair and bond it with this laptop (bluetoothctl pair ADDRESS)"
    )
    XCTAssertNil(log.record(.notBonded, address: a, what: "write", now: 11 * s))
    XCTAssertNil(log.record(.notBonded, address: a, what: "write", now: 69 * s))
    // Another device or another reason is logged at once.
    XCTAssertNotNil(log.record(.notBonded, address: b, what: "write", now: 12 * s))
    XCTAssertNotNil(log.record(.notAllowed, address: a, what: "write", now: 12 * s))
    let line = log.record(.notBonded, address: a, what: "write", now: 70 * s)
    XCTAssertEqual(line?.hasSuffix("(2 more since the last line)"), true)
  }
}
