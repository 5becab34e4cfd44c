import EarshotTestSupport
import XCTest

@testable import EarshotCore

/// Tags as presence: a region naming a tag follows its link (injected
/// times, in microseconds).
final class TagPresenceTests: XCTestCase {
  let s: Int64 = 1_000_000

  func tagRegion(_ name: String, tags: [String], exitAfter: ExitAfter = .seconds(30))
    -> RegionConfig
  {
    var r = RegionConfig(name: name, line: 1)
    r.tags = tags
    r.exitAfter = exitAfter
    return r
  }

  func monitor(_ regions: RegionConfig...) -> RegionMonitor {
    var c = Config()
    c.regions = regions
    return RegionMonitor(config: c, emitRange: true)
  }

  /// The events, range updates left out.
  func kinds(_ events: [MonitorEvent]) -> [String] {
    events.filter { $0.kind != .range }.map {
      "\($0.region) \($0.kind.rawValue) \($0.state.rawValue)"
    }
  }

  func testConnectIsInsideAtOnceAndLossIsOutsideAfterExitAfter() {
    var m = monitor(tagRegion("keys", tags: ["keys"]))
    XCTAssertEqual(
      kinds(m.start(at: DecisionTime(micros: 0), scanning: false)), ["keys state unknown"])
    XCTAssertNil(m.nextDeadline, "no answer from the tag yet: no exit is due")
    XCTAssertEqual(
      kinds(m.tagConnected("keys", at: DecisionTime(micros: 2 * s))), ["keys state inside"])
    XCTAssertNil(m.nextDeadline, "connected: nothing is due (and no range updates: no beacons)")
    XCTAssertEqual(kinds(m.tagAbsent("keys", at: DecisionTime(micros: 10 * s))), [])
    XCTAssertEqual(m.nextDeadline?.micros, 40 * s)
    XCTAssertEqual(kinds(m.advance(to: DecisionTime(micros: 40 * s - 1))), [])
    XCTAssertEqual(kinds(m.advance(to: DecisionTime(micros: 40 * s))), ["keys exit outside"])
    XCTAssertEqual(
      kinds(m.tagConnected("keys", at: DecisionTime(micros: 50 * s))), ["keys enter inside"])
  }

  func testABriefDropChangesNothing() {
    var m = monitor(tagRegion("keys", tags: ["keys"]))
    _ = m.start(at: DecisionTime(micros: 0), scanning: false)
    _ = m.tagConnected("keys", at: DecisionTime(micros: 1 * s))
    XCTAssertEqual(kinds(m.tagAbsent("keys", at: DecisionTime(micros: 5 * s))), [])
    XCTAssertEqual(
      kinds(m.tagConnected("keys", at: DecisionTime(micros: 8 * s))), [], "back within exit_after")
    XCTAssertEqual(m.state(of: "keys"), .inside)
    XCTAssertEqual(kinds(m.advance(to: DecisionTime(micros: 100 * s))), [])
    // A second loss counts from itself, not the first.
    _ = m.tagAbsent("keys", at: DecisionTime(micros: 200 * s))
    XCTAssertEqual(m.nextDeadline?.micros, 230 * s)
  }

  func testAFailedFirstAttemptCountsFromWhenWatchingBegan() {
    var m = monitor(tagRegion("keys", tags: ["keys"]))
    _ = m.start(at: DecisionTime(micros: 0), scanning: false)
    XCTAssertEqual(kinds(m.tagAbsent("keys", at: DecisionTime(micros: 3 * s))), [])
    XCTAssertEqual(m.state(of: "keys"), .unknown)
    XCTAssertEqual(m.nextDeadline?.micros, 30 * s)
    XCTAssertEqual(
      kinds(m.advance(to: DecisionTime(micros: 30 * s))), ["keys state outside"],
      "never told: a state")
    // A first attempt slower than exit_after: outside with its answer.
    var n = monitor(tagRegion("keys", tags: ["keys"]))
    _ = n.start(at: DecisionTime(micros: 0), scanning: false)
    XCTAssertEqual(
      kinds(n.tagAbsent("keys", at: DecisionTime(micros: 45 * s))), ["keys state outside"])
  }

  func testAutoWaitsTheCautiousTimeAfterALoss() {
    var m = monitor(tagRegion("keys", tags: ["keys"], exitAfter: .auto))
    _ = m.start(at: DecisionTime(micros: 0), scanning: false)
    _ = m.tagConnected("keys", at: DecisionTime(micros: 1 * s))
    _ = m.tagAbsent("keys", at: DecisionTime(micros: 10 * s))
    XCTAssertEqual(m.nextDeadline?.micros, 40 * s)
  }

  func testTwoTagsEitherKeepsTheRegionInside() {
    var m = monitor(tagRegion("bag", tags: ["keys", "wallet"], exitAfter: .seconds(10)))
    _ = m.start(at: DecisionTime(micros: 0), scanning: false)
    XCTAssertEqual(
      kinds(m.tagConnected("keys", at: DecisionTime(micros: 1 * s))), ["bag state inside"])
    _ = m.tagAbsent("wallet", at: DecisionTime(micros: 2 * s))
    _ = m.tagAbsent("keys", at: DecisionTime(micros: 20 * s))
    XCTAssertEqual(m.nextDeadline?.micros, 30 * s, "the later absence decides")
    XCTAssertEqual(kinds(m.advance(to: DecisionTime(micros: 30 * s))), ["bag exit outside"])
  }

  func testARegionOfTagsIgnoresTheScannerButAMixedOneNeedsBoth() {
    var beacon = region("desk", major: 1, exitAfter: .seconds(30))
    beacon.tags = ["keys"]
    var m = monitor(tagRegion("keys", tags: ["keys"]), beacon)
    _ = m.start(at: DecisionTime(micros: 0), scanning: true)
    _ = m.tagConnected("keys", at: DecisionTime(micros: 1 * s))
    XCTAssertEqual(m.state(of: "desk"), .inside)
    XCTAssertEqual(
      kinds(m.adapterDown(at: DecisionTime(micros: 2 * s))), [], "held by the connected tag")
    XCTAssertEqual(kinds(m.adapterUp(at: DecisionTime(micros: 3 * s))), [])
    _ = m.report(
      at: DecisionTime(micros: 4 * s),
      beacon: TrackedBeacon(id: TrackedID(uuid: testUUID, major: 1, minor: 1), measuredPower: -59),
      address: BDAddress("C1:02:03:04:05:06")!, rssi: -60)
    _ = m.tagAbsent("keys", at: DecisionTime(micros: 5 * s))
    // The tag's absence ends at 35 s, the beacon's silence at 34 s: the later.
    XCTAssertEqual(kinds(m.advance(to: DecisionTime(micros: 34 * s))), [])
    XCTAssertEqual(
      kinds(m.advance(to: DecisionTime(micros: 35 * s))).sorted(),
      ["desk exit outside", "keys exit outside"])
  }

  func testTheTagIsPartOfTheRegionsIdentity() {
    let plain = region("desk", major: 1)
    var tagged = plain
    tagged.tags = ["keys"]
    XCTAssertEqual(plain.identity, "\(testUUID):1")
    XCTAssertEqual(tagged.identity, "\(testUUID):1+tag=keys")
  }

  func doc(_ lines: [(String, String, String)], tag: Bool) -> ConfigDocument {
    var d = ConfigDocument(file: "t.conf")
    d.headers = [SectionHeader(name: "region \"keys\"", line: 1)]
    d.entries = lines.enumerated().map {
      ConfigEntry(section: $1.0, key: $1.1, value: $1.2, line: $0 + 2)
    }
    if tag {
      d.headers.append(SectionHeader(name: "tag \"keys\"", line: 10))
      d.entries.append(
        ConfigEntry(section: "tag \"keys\"", key: "address", value: "00:AA:01:00:00:00", line: 11))
    }
    return d
  }

  func testConfigTagKeyIsCheckedAgainstTheTagSections() throws {
    let ok = try Config.build(doc([("region \"keys\"", "tag", "keys keys")], tag: true))
    XCTAssertEqual(ok.regions[0].tags, ["keys"])
    XCTAssertThrowsError(
      try Config.build(doc([("region \"keys\"", "tag", "keys wallet")], tag: true))
    ) {
      XCTAssertEqual(
        "\($0)", "t.conf:2: [region \"keys\"] tag: no [tag \"wallet\"] section (tags: keys)")
    }
    XCTAssertThrowsError(try Config.build(doc([("region \"keys\"", "tag", "keys")], tag: false))) {
      XCTAssertEqual(
        "\($0)", "t.conf:2: [region \"keys\"] tag: no [tag \"keys\"] section (tags: none)")
    }
  }
}
