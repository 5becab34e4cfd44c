import EarshotTestSupport
import XCTest

@testable import EarshotCore

/// The laptop's own word on places and moves (`LaptopSignals`), and the
/// `[trackers]` keys that set the rule's thresholds and the Wi-Fi source.
final class LaptopSignalsTests: XCTestCase {
  static func bss(
    _ last: UInt8, seen: Int?, associated: Bool = false, ssid: String? = nil
  ) -> WiFiBSS {
    WiFiBSS(
      bssid: [0x02, 0, 0, 0, 0x01, last],
      lastSeen: seen.map { MonotonicTime.zero + .seconds($0) }, associated: associated,
      ssid: ssid.map { Array($0.utf8) })
  }

  static func t(_ s: Int) -> MonotonicTime { MonotonicTime.zero + .seconds(s) }

  func testSSIDElementIsReadOrNothing() {
    func ssid(_ bytes: [UInt8]) -> String? {
      bytes.withUnsafeBytes { WiFiElements.ssid(in: $0) }.map {
        String(decoding: $0, as: UTF8.self)
      }
    }
    // Supported rates first, then the SSID.
    XCTAssertEqual(ssid([0x01, 0x02, 0x82, 0x84, 0x00, 0x04] + Array("home".utf8)), "home")
    XCTAssertEqual(ssid([0x00, 0x00]), "")  // a hidden network
    XCTAssertNil(ssid([0x01, 0x02, 0x82]))  // cut short
    XCTAssertNil(ssid([0x00, 0x05, 0x41]))  // the SSID itself cut short
    XCTAssertNil(ssid([0x00, 33] + [UInt8](repeating: 0x41, count: 33)))  // longer than 32
    XCTAssertNil(ssid([0x03, 0x01, 0x06]))  // none
    XCTAssertNil(ssid([]))
  }

  func testAccessPointsAreThoseHeardSinceTheScanBegan() {
    var s = LaptopSignals()
    let scan = [
      Self.bss(1, seen: 100), Self.bss(2, seen: 103), Self.bss(3, seen: 99),
      Self.bss(4, seen: nil),
    ]
    // Triggered at 100: the one heard at 99 is the place before's, lingering.
    XCTAssertEqual(
      s.accessPoints(scan, triggered: Self.t(100), now: Self.t(104)),
      ["02:00:00:00:01:01", "02:00:00:00:01:02"])
    // Without the trigger: heard within the last 10 s.
    XCTAssertEqual(
      s.accessPoints(scan, triggered: nil, now: Self.t(110)),
      ["02:00:00:00:01:01", "02:00:00:00:01:02"])
    XCTAssertEqual(s.accessPoints(scan, triggered: nil, now: Self.t(120)), [])
    // Early in boot (now under the freshness): no underflow.
    XCTAssertEqual(s.accessPoints([Self.bss(1, seen: 0)], triggered: nil, now: Self.t(3)).count, 1)
  }

  func testAScanHoldsAtMostItsBound() {
    var settings = LaptopSignals.Settings()
    settings.maximumAccessPoints = 5
    var s = LaptopSignals(settings: settings)
    let scan = (0..<20).map { Self.bss(UInt8($0), seen: 50) }
    XCTAssertEqual(s.accessPoints(scan, triggered: nil, now: Self.t(50)).count, 5)
    XCTAssertEqual(s.droppedAccessPoints, 15)
  }

  func testAnotherNetworkIsAMoveAndRoamingOrLeavingIsNot() {
    var s = LaptopSignals()
    let home = [Self.bss(1, seen: 1, associated: true, ssid: "home"), Self.bss(2, seen: 1)]
    let homeOther = [Self.bss(3, seen: 2, associated: true, ssid: "home")]
    let none = [Self.bss(1, seen: 1)]
    let office = [Self.bss(9, seen: 3, associated: true, ssid: "office")]
    XCTAssertNil(s.network(home, interface: 3), "the first network is no move")
    XCTAssertNil(s.network(homeOther, interface: 3), "roaming within one network")
    XCTAssertNil(s.network(none, interface: 3), "leaving it")
    XCTAssertEqual(s.network(office, interface: 3), .networkChanged)
    XCTAssertNil(s.network(office, interface: 3))
    XCTAssertNil(s.network(home, interface: 4), "another interface starts on its own")
    XCTAssertEqual(s.network(home, interface: 3), .networkChanged)
    // A hidden network (empty SSID) says nothing.
    XCTAssertNil(s.network([Self.bss(5, seen: 1, associated: true, ssid: "")], interface: 3))
  }

  func testInterfacesAreBounded() {
    var settings = LaptopSignals.Settings()
    settings.maximumInterfaces = 2
    var s = LaptopSignals(settings: settings)
    let a = [Self.bss(1, seen: 1, associated: true, ssid: "a")]
    let b = [Self.bss(1, seen: 1, associated: true, ssid: "b")]
    _ = s.network(a, interface: 1)
    _ = s.network(a, interface: 2)
    _ = s.network(a, interface: 3)  // forgets interface 1
    XCTAssertNil(s.network(b, interface: 1), "interface 1 was forgotten: a first network")
    XCTAssertEqual(s.network(b, interface: 3), .networkChanged)
  }

  func testMainsUnpluggedIsAMoveOnlyFromOnline() {
    var s = LaptopSignals()
    XCTAssertNil(s.mains(online: false), "the first reading")
    XCTAssertNil(s.mains(online: true))
    XCTAssertEqual(s.mains(online: false), .unplugged)
    XCTAssertNil(s.mains(online: false))
    XCTAssertNil(s.mains(online: nil), "unreadable")
    XCTAssertNil(s.mains(online: true))
    XCTAssertNil(s.mains(online: nil))
    XCTAssertEqual(s.mains(online: false), .unplugged, "an unreadable spell forgets nothing")
  }

  func testMainsIsAnyExternalSupply() {
    let battery = PowerSupplyEntry(type: "Battery", status: "Discharging")
    XCTAssertNil(LaptopSignals.mainsOnline([battery]))
    XCTAssertEqual(
      LaptopSignals.mainsOnline([battery, PowerSupplyEntry(type: "Mains", online: true)]), true)
    XCTAssertEqual(
      LaptopSignals.mainsOnline([
        PowerSupplyEntry(type: "Mains", online: false), PowerSupplyEntry(type: "USB", online: true),
      ]), true)
    XCTAssertEqual(
      LaptopSignals.mainsOnline([PowerSupplyEntry(type: "Mains", online: false)]), false)
  }

  // MARK: The keys

  func testThresholdKeysSetTheRule() throws {
    var c = TrackersConfig()
    try c.set("sensitivity", "low")
    try c.set("span", "20")
    try c.set("places", "2")
    try c.set("spacing", "2")
    let s = TrackerWatch.Settings(config: c)
    XCTAssertEqual(s.followSpan, .seconds(20))
    XCTAssertEqual(s.followPlaces, 2)
    XCTAssertEqual(s.spacing, .seconds(2))
    // Empty: the sensitivity's again.
    try c.set("span", "")
    try c.set("places", "")
    XCTAssertNil(TrackerWatch.Settings(config: c).followSpan)
    XCTAssertNil(TrackerWatch.Settings(config: c).followPlaces)
    XCTAssertTrue(TrackersConfig().wifi)
    try c.set("wifi", "false")
    XCTAssertFalse(c.wifi)

    // A tag across two Wi-Fi places for 20 s follows with these keys.
    try c.set("span", "20")
    try c.set("places", "2")
    var w = TrackerWatch(settings: TrackerWatch.Settings(config: c))
    var alerts = 0
    _ = w.handle(WatchKit.wifi(1), at: Self.t(0))
    for s in stride(from: 0, to: 12, by: 3) {
      alerts += w.handle(WatchKit.airTag(), at: Self.t(s)).count
    }
    XCTAssertEqual(alerts, 0, "one place")
    _ = w.handle(.moved(.networkChanged), at: Self.t(12))
    _ = w.handle(WatchKit.wifi(2), at: Self.t(13))
    alerts += w.handle(WatchKit.airTag(), at: Self.t(14)).count
    XCTAssertEqual(alerts, 0, "two places, 14 s")
    alerts += w.handle(WatchKit.airTag(), at: Self.t(20)).count
    XCTAssertEqual(alerts, 1, "two places, 20 s")
  }

  func testBadThresholdsAreClearErrors() {
    for (key, value, says) in [
      ("places", "1", "2"), ("places", "65", "64"), ("places", "two", "two"),
      ("span", "0", "above 0"), ("span", "90000", "86400"), ("spacing", "0", "above 0"),
      ("spacing", "3601", "3600"), ("wifi", "maybe", "maybe"),
    ] {
      var c = TrackersConfig()
      XCTAssertThrowsError(try c.set(key, value), "\(key) = \(value)") {
        XCTAssertTrue("\($0)".contains(says), "\(key) = \(value): \($0)")
      }
    }
  }
}
