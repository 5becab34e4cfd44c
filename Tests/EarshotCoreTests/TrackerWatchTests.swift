import EarshotTestSupport
import XCTest

@testable import EarshotCore

/// Sightings and places for the watch's tests.
enum WatchKit {
  static let minute = Duration.seconds(60)
  static let tagAddress = BDAddress("C1:AA:BB:CC:DD:01")!

  static func at(_ minutes: Int) -> MonotonicTime { .zero + minute * minutes }

  static func airTag(_ address: BDAddress = tagAddress) -> TrackerWatch.Event {
    let data = TrackerAirFrame.findMySeparated(kind: 1, key: address.raw)
    return .tracker(
      TrackerFrame.decode(advertisingData: data, address: address)!, address: address, rssi: -60)
  }

  static func smartTag(state: UInt8, counter: UInt32, id: UInt64) -> TrackerWatch.Event {
    let address = BDAddress(raw: id & 0x3FFF_FFFF_FFFF | 0x4000_0000_0000)
    let data = TrackerAirFrame.smartTag(state: state, counter: counter, id: id)
    return .tracker(
      TrackerFrame.decode(advertisingData: data, address: address)!, address: address, rssi: -60)
  }

  /// Access points naming place `n` (three, enough on their own).
  static func wifi(_ n: Int) -> TrackerWatch.Event {
    .accessPoints(Set((0..<3).map { "ap-\(n)-\($0)" }))
  }
}

final class TrackerWatchTests: XCTestCase {
  typealias K = WatchKit

  /// A tag heard every minute while the laptop goes to `places` (Wi-Fi named),
  /// `stay` minutes each; the alerts with their minute.
  func walk(
    _ settings: TrackerWatch.Settings, places: [Int], stay: Int,
    tag: (Int) -> TrackerWatch.Event = { _ in K.airTag() }
  ) -> (TrackerWatch, [(Int, TrackerRow)]) {
    var w = TrackerWatch(settings: settings)
    var alerts: [(Int, TrackerRow)] = []
    for (i, p) in places.enumerated() {
      let start = i * stay
      _ = w.handle(.moved(.resumed), at: K.at(start))
      _ = w.handle(K.wifi(p), at: K.at(start))
      for m in start..<start + stay {
        for case .following(let row) in w.handle(tag(m), at: K.at(m) + .seconds(1)) {
          alerts.append((m, row))
        }
      }
    }
    return (w, alerts)
  }

  func testEachSensitivityAlertsAtItsPlacesAndSpan() {
    for s in TrackerSensitivity.allCases {
      var settings = TrackerWatch.Settings()
      settings.sensitivity = s
      // 40 minutes a place: the last place needed decides (its span is met).
      let (_, alerts) = walk(settings, places: [1, 2, 3, 4, 5], stay: 40)
      let placesMinute = (s.places - 1) * 40
      let spanMinute = Int(s.span / K.minute)
      XCTAssertEqual(alerts.map(\.0), [max(placesMinute, spanMinute)], "\(s)")
      XCTAssertEqual(alerts.first?.1.places, s.places, "\(s)")
    }
  }

  func testOnePlaceNeverAlertsHoweverLong() {
    let (_, alerts) = walk(TrackerWatch.Settings(), places: [1, 1, 1, 1], stay: 600)
    XCTAssertTrue(alerts.isEmpty)
  }

  func testComingBackHomeIsTheSamePlace() {
    // Home, office, home, office: two places, whatever the hours.
    let (w, alerts) = walk(TrackerWatch.Settings(), places: [1, 2, 1, 2, 1], stay: 60)
    XCTAssertTrue(alerts.isEmpty)
    XCTAssertEqual(w.place.placeCount, 2)
  }

  func testNearOwnerNeverAlertsAndWipesEvidence() {
    var settings = TrackerWatch.Settings()
    settings.sensitivity = .high
    let (_, near) = walk(settings, places: [1, 2, 3, 4], stay: 60) { m in
      K.smartTag(state: 5, counter: 100, id: 7)
    }
    XCTAssertTrue(near.isEmpty)
    // Separated, but its owner shows up each time just before it would alert.
    let (_, wiped) = walk(settings, places: [1, 2, 3, 4], stay: 60) { m in
      K.smartTag(state: m % 60 == 59 ? 5 : 2, counter: 100, id: 7)
    }
    XCTAssertTrue(wiped.isEmpty)
  }

  /// A Tile (no state, a static address) heard at each place in turn.
  static func tile(_ m: Int) -> TrackerWatch.Event {
    let a = BDAddress("C2:00:00:00:00:01")!
    return .tracker(
      TrackerFrame.decode(advertisingData: TrackerAirFrame.tile, address: a)!, address: a,
      rssi: nil)
  }

  func testNoStateWithAStaticAddressFollowsUnderTheStricterRule() {
    for s in TrackerSensitivity.allCases {
      var settings = TrackerWatch.Settings()
      settings.sensitivity = s
      // Twice the span, one place more: high 60 min and 3 places, medium
      // 120 and 4, low 240 and 5.
      XCTAssertTrue(settings.rule(for: .unknown) == (s.span * 2, s.places + 1), "\(s)")
      XCTAssertTrue(settings.rule(for: .separated) == (s.span, s.places), "\(s)")
      let (w, alerts) = walk(settings, places: [1, 2, 3, 4, 5, 6, 7], stay: 40, tag: Self.tile)
      let placesMinute = s.places * 40
      let spanMinute = Int(s.span / K.minute) * 2
      XCTAssertEqual(alerts.map(\.0), [max(placesMinute, spanMinute)], "\(s)")
      // Its places: one more than the separated rule's, or all it went
      // through while the span ran.
      XCTAssertEqual(alerts.first?.1.places, max(placesMinute, spanMinute) / 40 + 1, "\(s)")
      XCTAssertEqual(alerts.first?.1.frame.state, .unknown, "\(s)")
      XCTAssertEqual(w.followingCount, 1, "\(s)")
    }
    // The separated rule's places and span are not enough for it.
    var settings = TrackerWatch.Settings()
    settings.sensitivity = .high
    let (_, early) = walk(settings, places: [1, 2], stay: 55, tag: Self.tile)
    XCTAssertTrue(early.isEmpty)
    // The config's span and places are the base of the stricter rule too.
    settings.followSpan = .seconds(10 * 60)
    settings.followPlaces = 2
    let (_, custom) = walk(settings, places: [1, 2, 3], stay: 15, tag: Self.tile)
    XCTAssertEqual(custom.map(\.0), [30])
    // Enrolled: never.
    settings.trusted = [BDAddress("C2:00:00:00:00:01")!]
    let (_, enrolled) = walk(settings, places: [1, 2, 3, 4, 5, 6, 7], stay: 60, tag: Self.tile)
    XCTAssertTrue(enrolled.isEmpty)
  }

  func testNoStateWithoutAnAddressNeverAlerts() {
    var settings = TrackerWatch.Settings()
    settings.sensitivity = .high
    // A SmartTag premature offline (its handle the aging counter): no evidence.
    let (w, smartTag) = walk(settings, places: [1, 2, 3, 4, 5, 6], stay: 60) { _ in
      K.smartTag(state: 1, counter: 100, id: 7)
    }
    XCTAssertTrue(smartTag.isEmpty)
    XCTAssertEqual(w.rows.count, 1)
    XCTAssertEqual(w.evidence(of: w.rows[0].number), [])
    // DULT: no handle, never kept.
    let (d, dult) = walk(settings, places: [1, 2, 3, 4, 5, 6], stay: 60) { _ in
      let a = BDAddress("52:00:00:00:00:01")!
      return .tracker(
        TrackerFrame.decode(advertisingData: [0x05, 0x16, 0xB2, 0xFC, 0x01, 0x00], address: a)!,
        address: a, rssi: nil)
    }
    XCTAssertTrue(dult.isEmpty)
    XCTAssertEqual(d.count, 0)
  }

  func testTrustingAnEnrolledTagForAWhileLeavesItEnrolled() {
    var settings = TrackerWatch.Settings()
    settings.trusted = [K.tagAddress]
    var w = TrackerWatch(settings: settings)
    _ = w.handle(K.wifi(1), at: K.at(0))
    _ = w.handle(K.airTag(), at: K.at(0))
    let number = w.rows[0].number
    XCTAssertEqual(w.handle(.trust(number, for: .seconds(60)), at: K.at(1)), [])
    XCTAssertEqual(w.rows[0].trust, .enrolled)
    // Long after that trust would have run out, it follows through 5 places.
    var alerts: [TrackerWatch.Action] = []
    for (i, p) in [2, 3, 4, 5, 6].enumerated() {
      let start = 10 + i * 60
      _ = w.handle(.moved(.resumed), at: K.at(start))
      _ = w.handle(K.wifi(p), at: K.at(start))
      for m in start..<start + 60 { alerts += w.handle(K.airTag(), at: K.at(m) + .seconds(1)) }
    }
    XCTAssertEqual(alerts, [])
    XCTAssertEqual(w.rows[0].trust, .enrolled)
  }

  func testEnrolledNeverAlertsAndTrustRunsOut() {
    var settings = TrackerWatch.Settings()
    settings.trusted = [K.tagAddress]
    let (w, enrolled) = walk(settings, places: [1, 2, 3, 4, 5], stay: 60)
    XCTAssertTrue(enrolled.isEmpty)
    XCTAssertEqual(w.rows.first?.trust, .enrolled)

    var t = TrackerWatch(settings: TrackerWatch.Settings())
    _ = t.handle(K.wifi(1), at: K.at(0))
    _ = t.handle(K.airTag(), at: K.at(0))
    let number = t.rows[0].number
    XCTAssertEqual(t.handle(.trust(number, for: .seconds(3 * 3600)), at: K.at(1)), [])
    XCTAssertEqual(
      t.handle(.trust(TrackerNumber(99), for: nil), at: K.at(1)),
      [.unknownNumber(TrackerNumber(99))])
    var alerts: [Int] = []
    for m in 1..<(8 * 60) {
      if m % 40 == 0 {
        _ = t.handle(.moved(.networkChanged), at: K.at(m))
        _ = t.handle(K.wifi(m / 40 % 4), at: K.at(m))
      }
      if !t.handle(K.airTag(), at: K.at(m) + .seconds(1)).isEmpty { alerts.append(m) }
    }
    // Trusted for three hours (to minute 181); then an hour of new evidence
    // across three places (from 160, 200, 240).
    XCTAssertEqual(alerts, [181 + 60])
  }

  /// "Ignore" is for a while: a follower keeps its alert while trusted, and
  /// when the trust runs out it must follow again to alert again.
  func testAFollowerAlertsAgainWhenItsTrustRunsOut() {
    var settings = TrackerWatch.Settings()
    settings.sensitivity = .high
    var w = TrackerWatch(settings: settings)
    var alerts: [Int] = []
    for m in 0..<(6 * 60) {
      if m % 40 == 0 {
        _ = w.handle(.moved(.networkChanged), at: K.at(m))
        _ = w.handle(K.wifi(m / 40 % 4), at: K.at(m))
      }
      for case .following(let row) in w.handle(K.airTag(), at: K.at(m) + .seconds(1)) {
        alerts.append(m)
        if alerts.count == 1 {
          XCTAssertEqual(w.handle(.trust(row.number, for: .seconds(2 * 3600)), at: K.at(m)), [])
        }
      }
      if m == 100 { XCTAssertNotNil(w.rows.first?.following, "trusted, it keeps its alert") }
    }
    // Trusted from 40 to 160; new evidence from 161, its second place at 200.
    XCTAssertEqual(alerts, [40, 200])
  }

  /// Trusting more than `maximumTrusted` forgets a trusted stranger, never
  /// a follower (those are bounded by `maximumFollowing`).
  func testTrustingManyNeverForgetsAFollower() throws {
    var settings = TrackerWatch.Settings()
    settings.sensitivity = .high
    settings.maximumTrusted = 1
    var (w, alerts) = walk(settings, places: [1, 2], stay: 40)
    let follower = try XCTUnwrap(alerts.first).1.number
    XCTAssertEqual(w.handle(.trust(follower, for: nil), at: K.at(80)), [])
    for (i, minute) in [81, 82].enumerated() {
      _ = w.handle(K.airTag(BDAddress(raw: 0xC500_0000_0000 + UInt64(i))), at: K.at(minute))
      let stranger = w.rows.last!.number
      XCTAssertEqual(w.handle(.trust(stranger, for: nil), at: K.at(minute)), [])
    }
    // The follower stays; of the two trusted strangers, the later one.
    XCTAssertEqual(w.rows.map(\.number.value), [follower.value, 3])
    XCTAssertNotNil(w.rows.first?.following)
  }

  func testSmartTagRotationsKeepOneNumber() {
    var w = TrackerWatch(settings: TrackerWatch.Settings())
    var numbers: Set<TrackerNumber> = []
    for step in 0..<10 {
      // A new id every 15 minutes, the counter one up; one rotation missed.
      let counter = UInt32(500 + step + (step > 5 ? 1 : 0))
      _ = w.handle(
        K.smartTag(state: 2, counter: counter, id: UInt64(1000 + step)), at: K.at(step * 15))
      numbers.formUnion(w.rows.map(\.number))
    }
    XCTAssertEqual(numbers.count, 1)
    XCTAssertEqual(w.count, 1)
    XCTAssertEqual(w.rows.first?.sightings, 10)
    // Two tags a counter below: no guess, a new number.
    _ = w.handle(K.smartTag(state: 2, counter: 509, id: 5000), at: K.at(151))
    _ = w.handle(K.smartTag(state: 2, counter: 511, id: 6000), at: K.at(152))
    XCTAssertEqual(w.count, 3)
  }

  func testStrangersForgottenAfterRetentionFollowersKeptUntilCleared() {
    var settings = TrackerWatch.Settings()
    settings.sensitivity = .high
    var (w, alerts) = walk(settings, places: [1, 2], stay: 40)
    XCTAssertEqual(alerts.count, 1)
    let follower = alerts[0].1.number
    _ = w.handle(K.airTag(BDAddress("C3:00:00:00:00:01")!), at: K.at(100))
    XCTAssertEqual(w.count, 2)
    w.advance(to: K.at(100 + 24 * 60 + 1))
    XCTAssertEqual(w.rows.map(\.number), [follower], "the stranger is gone, the follower stays")
    XCTAssertFalse(w.evidence(of: follower).isEmpty)
    XCTAssertEqual(w.handle(.clear(follower), at: K.at(2000)), [])
    XCTAssertEqual(w.count, 0)
  }

  func testStrangersAndFollowersBounded() {
    var settings = TrackerWatch.Settings()
    settings.maximumStrangers = 3
    var w = TrackerWatch(settings: settings)
    for i in 0..<10 {
      _ = w.handle(K.airTag(BDAddress(raw: 0xC400_0000_0000 + UInt64(i))), at: K.at(i))
    }
    XCTAssertEqual(w.count, 3)
    XCTAssertEqual(w.rows.map(\.address.raw), [7, 8, 9].map { 0xC400_0000_0000 + $0 })
  }

  func testPlaceSenseFixedAddressesOnly() {
    var p = PlaceSense()
    let home = (0..<5).map { BDAddress(raw: 0xC500_0000_0000 + UInt64($0)) }
    // Random private addresses say nothing; public and random static do.
    for m in 0..<10 {
      for (i, a) in home.enumerated() { p.heard(a, random: i != 0, at: K.at(m)) }
      p.heard(BDAddress(raw: 0x4000_0000_0000 + UInt64(m)), random: true, at: K.at(m))
    }
    p.advance(to: K.at(10))
    XCTAssertEqual(p.current, PlaceID(1))
    p.moved(.resumed, at: K.at(11))
    XCTAssertNil(p.current, "a move makes the place unknown")
    // Two fixed marks only: unknown, not a guess.
    for m in 11..<25 {
      for a in home.prefix(2) { p.heard(a, random: false, at: K.at(m)) }
    }
    p.advance(to: K.at(25))
    XCTAssertNil(p.current)
  }

  func testPlaceSenseCompanionsAreDropped() {
    var p = PlaceSense()
    let watch = BDAddress(raw: 0xC6FF_0000_0000)
    func stay(_ base: UInt64, from: Int) {
      p.moved(.resumed, at: K.at(from))
      for m in from..<from + 12 {
        for i in 0..<4 { p.heard(BDAddress(raw: base + UInt64(i)), random: false, at: K.at(m)) }
        p.heard(watch, random: true, at: K.at(m))
      }
    }
    stay(0x1000, from: 0)
    stay(0x2000, from: 20)
    XCTAssertEqual(p.current, PlaceID(2))
    XCTAssertEqual(p.companionCount, 1)
    stay(0x1000, from: 40)
    XCTAssertEqual(p.current, PlaceID(1), "home again, the watch no longer part of it")
  }
}
