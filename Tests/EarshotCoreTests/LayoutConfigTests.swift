import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotCore

/// `[layout "NAME"]` sections: a beacon format of the user's own, read from
/// config and decoded by the one layout table (`Config.beaconClassifier`).
final class LayoutConfigTests: XCTestCase {

  func error(_ text: String) -> String {
    do {
      _ = try Config.build(document(text))
      return "no error"
    } catch { return "\(error)" }
  }

  /// A made-up "Acme" tag: company 0xFFFF, code ac1e, a 6-byte id, a 2-byte
  /// id, the power at 1 m, one byte of battery.
  static let acmeLayout = "m:2-3=ac1e,i:4-9,i:10-11,p:12-12,d:13-13"
  static let acmeAD = "0FFF ffff ac1e 010203040506 002a c5 07"

  func frames(_ h: String, _ c: BeaconClassifier) -> [BeaconFrame] {
    hex(h).withUnsafeBytes { c.frames(in: $0) }
  }

  func testAConfigLayoutDecodesAFormatEarshotDoesNotKnow() throws {
    let config = try Config.build(
      document("[layout \"acme\"]\nlayout = \(Self.acmeLayout)\n"))
    XCTAssertEqual(config.layouts.map(\.name), ["acme"])
    XCTAssertEqual(frames(Self.acmeAD, .standard), [], "the built-in table does not know it")
    XCTAssertEqual(
      frames(Self.acmeAD, config.beaconClassifier),
      [
        .custom(
          CustomBeacon(
            layoutName: "acme", companyID: 0xFFFF,
            identifiers: [[1, 2, 3, 4, 5, 6], [0x00, 0x2A]], power: -59, data: [[0x07]],
            isExtraFrame: false))
      ])
    XCTAssertEqual(
      frames(Self.acmeAD, config.beaconClassifier).first?.json,
      #"{"frame":"acme","company":65535,"ids":["010203040506","002a"],"power":-59,"data":["07"]}"#)
    // check-config prints it back.
    XCTAssertTrue(
      config.render().contains("[layout \"acme\"]\nlayout = \(Self.acmeLayout)\n"),
      config.render())
  }

  func testBuiltInsWinOverAUserRow() throws {
    // Rows that would claim every AltBeacon and every iBeacon.
    let config = try Config.build(
      document(
        """
        [layout "greedy-alt"]
        layout = m:2-3=beac,i:4-19,p:24-24
        [layout "greedy-ib"]
        layout = m:0-3=4c000215,i:4-19,p:24-24
        """))
    XCTAssertEqual(config.beaconClassifier.layouts.count, BeaconLayout.builtIn.count + 2)
    let alt = "1BFF 1801 beac 2f234454cf6d4a0fadf2f4911ba9ffa6 0001 0002 c5 00"
    let ib = "1AFF 4c00 0215 2f234454cf6d4a0fadf2f4911ba9ffa6 0001 0002 c5"
    XCTAssertEqual(frames(alt, config.beaconClassifier).map(\.layoutName), ["AltBeacon"])
    XCTAssertEqual(frames(ib, config.beaconClassifier).map(\.layoutName), ["iBeacon"])
    XCTAssertEqual(frames(alt, config.beaconClassifier), frames(alt, .standard))
    XCTAssertEqual(frames(ib, config.beaconClassifier), frames(ib, .standard))
    // A 27-byte iBeacon-coded frame is not Apple's exact layout: the user row takes it.
    let longer = "1CFF 4c00 0215 2f234454cf6d4a0fadf2f4911ba9ffa6 0001 0002 c5 0000"
    XCTAssertEqual(frames(longer, .standard), [])
    XCTAssertEqual(frames(longer, config.beaconClassifier).map(\.layoutName), ["greedy-ib"])
  }

  func testABadLayoutNamesFileLineKeyAndTerm() {
    XCTAssertEqual(
      error("[scanner]\npassive = true\n[layout \"acme\"]\nlayout = m:2-3=ac1e,i:9-4,p:12-12\n"),
      "x.conf:4: [layout \"acme\"] layout: beacon layout term 'i:9-4': the range ends before it starts"
    )
    XCTAssertEqual(
      error("[layout \"acme\"]\nlayout = m:2-3=ac1e,q:4-9,p:12-12\n"),
      "x.conf:2: [layout \"acme\"] layout: beacon layout term 'q:4-9': unknown term 'q' (expected m, s, i, p, d or x)"
    )
    XCTAssertEqual(
      error("[layout \"acme\"]\nlayout = i:4-9,p:12-12\n"),
      "x.conf:2: [layout \"acme\"] layout: beacon layout: no 'm' term: a layout must match some bytes"
    )
    XCTAssertEqual(
      error("[layout \"acme\"]\nlayout =\n"),
      "x.conf:2: [layout \"acme\"] layout: must not be empty")
  }

  func testSectionRules() {
    XCTAssertEqual(
      error("[layout \"acme\"]\n"),
      "x.conf:1: [layout \"acme\"] layout: a layout section needs a layout string, e.g. layout = m:2-3=0a0b,i:4-9,p:10-10"
    )
    XCTAssertTrue(
      error("[layout \"ibeacon\"]\nlayout = \(Self.acmeLayout)\n").contains(
        "x.conf:1: [layout \"ibeacon\"] 'ibeacon' is the built-in iBeacon layout"),
      error("[layout \"ibeacon\"]\nlayout = \(Self.acmeLayout)\n"))
    XCTAssertTrue(
      error(
        "[layout \"a\"]\nlayout = \(Self.acmeLayout)\n[layout \"a\"]\nlayout = \(Self.acmeLayout)\n"
      ).contains("x.conf:3: [layout \"a\"] duplicate layout name 'a' (first defined on line 1)"))
    XCTAssertTrue(
      error("[layout acme]\n").contains("[layout \"NAME\"] with the name in double quotes"))
    XCTAssertTrue(
      error("[layout \"a\"]\nlayout = \(Self.acmeLayout)\nformat = x\n").contains(
        "x.conf:3: [layout \"a\"] format: unknown key; layout keys: layout"))
    XCTAssertTrue(error("[nonsense]\n").contains("layout \"NAME\""), "the unknown-section list")
  }

  func testNoLayoutsIsTheStandardTable() throws {
    let config = try Config.build(document("[scanner]\npassive = true\n"))
    XCTAssertEqual(config.beaconClassifier.layouts, BeaconLayout.builtIn)
    XCTAssertFalse(config.render().contains("[layout"))
  }
}
