import EarshotTestSupport
import XCTest

@testable import EarshotCore

/// Random sequences of sightings, environments, moves, trust and clears;
/// after every event the watch's guarantees are checked against a model
/// kept apart from it.
final class TrackerWatchPropertyTests: XCTestCase {
  var seen: [String: Int] = [:]

  func testGuaranteesHoldOverRandomSequences() {
    for seed in UInt64(1)...300 {
      run(seed: seed, steps: 400)
      if testRun?.failureCount ?? 0 > 0 {
        XCTFail("first failing seed: \(seed)")
        return
      }
    }
    for situation in [
      "alert", "alert (no state)", "evicted", "forgotten", "linked", "trust ran out", "cleared",
      "place",
    ] {
      XCTAssertGreaterThan(
        seen[situation] ?? 0, 10, "the random sequences rarely reach '\(situation)'")
    }
  }

  private func run(seed: UInt64, steps: Int) {
    var rng = SeededRandom(state: seed)
    var settings = TrackerWatch.Settings()
    settings.sensitivity = TrackerSensitivity.allCases.randomElement(using: &rng)!
    settings.maximumStrangers = 6
    settings.maximumFollowing = 3
    settings.maximumTrusted = 2
    settings.maximumEvidence = 40
    settings.retention = .seconds(3 * 3600)
    settings.places.maximumPlaces = 5
    let enrolled = BDAddress(raw: 0xC700_0000_0000)
    settings.trusted = [enrolled]
    var w = TrackerWatch(settings: settings)
    var now = MonotonicTime.zero
    /// Numbers alerted and not cleared since.
    var alerted: Set<TrackerNumber> = []
    /// Numbers trusted, until when (nil: until cleared).
    var trusted: [TrackerNumber: MonotonicTime?] = [:]
    var counter: UInt32 = 1000
    var lastCounter: UInt32 = 0
    var log: [String] = []
    let spacing = UInt64(settings.spacing / .nanoseconds(1))

    for _ in 0..<steps {
      now = now + .seconds(Int.random(in: 0...600, using: &rng))
      // A timed trust that ran out: a follower starts over (may alert again).
      for (n, t) in trusted {
        if let end = t, end <= now {
          seen["trust ran out", default: 0] += 1
          trusted[n] = nil
          alerted.remove(n)
        }
      }
      let event: TrackerWatch.Event
      switch Int.random(in: 0..<14, using: &rng) {
      case 0..<5:
        let i = UInt64.random(in: 0..<10, using: &rng)
        let address = i == 0 ? enrolled : BDAddress(raw: 0xC700_0000_0000 + i)
        // Two static addresses whose frames may say no state: a Tile (never
        // a state) and a Chipolo (its bit set or clear).
        let data: [UInt8] =
          switch i {
          case 9: TrackerAirFrame.tile
          case 8: TrackerAirFrame.chipolo(separated: Bool.random(using: &rng))
          case 7: TrackerAirFrame.findMySeparated(kind: 1, key: address.raw)
          default:
            Bool.random(using: &rng)
              ? TrackerAirFrame.findMySeparated(kind: 1, key: address.raw)
              : TrackerAirFrame.findMyNearOwner(kind: 1)
          }
        event = .tracker(
          TrackerFrame.decode(advertisingData: data, address: address)!, address: address,
          rssi: nil)
      case 5, 6:
        // One SmartTag rotating, sometimes near its owner.
        if Bool.random(using: &rng) { counter += UInt32.random(in: 1...2, using: &rng) }
        event = WatchKit.smartTag(
          state: Int.random(in: 0..<5, using: &rng) == 0 ? 5 : 2, counter: counter,
          id: UInt64(counter) &* 77)
      case 7, 8:
        event = WatchKit.wifi(Int.random(in: 0..<7, using: &rng))
      case 9:
        event = .moved(LaptopMove.allCases.randomElement(using: &rng)!)
      case 10:
        event = .advertiser(
          BDAddress(raw: 0xC800_0000_0000 + UInt64.random(in: 0..<20, using: &rng)), random: true)
      case 11, 12:
        let rows = w.rows
        guard let row = rows.randomElement(using: &rng) else { continue }
        let span: Duration? =
          Bool.random(using: &rng) ? .seconds(Int.random(in: 60...7200, using: &rng)) : nil
        event = .trust(row.number, for: span)
        trusted[row.number] = span.map { now + $0 }
      default:
        guard let row = w.rows.randomElement(using: &rng) else { continue }
        event = .clear(row.number)
        alerted.remove(row.number)
        trusted[row.number] = nil
        seen["cleared", default: 0] += 1
      }
      log.append("\(now.nanos / 1_000_000_000) s: \(event)")
      let before = Set(w.rows.map(\.number))
      let actions = w.handle(event, at: now)
      var trace: String { log.suffix(30).joined(separator: "\n") }
      if w.place.current != nil { seen["place", default: 0] += 1 }

      for action in actions {
        guard case .following(let row) = action else { continue }
        seen["alert", default: 0] += 1
        XCTAssertFalse(alerted.contains(row.number), "alerted twice\n\(trace)")
        alerted.insert(row.number)
        XCTAssertNotEqual(row.address, enrolled, "an enrolled tag alerted\n\(trace)")
        XCTAssertEqual(row.trust, .none, trace)
        if let t = trusted[row.number] {
          XCTAssertTrue(t.map { $0 <= now } ?? false, "alerted while trusted\n\(trace)")
        }
        guard case .tracker(let f, _, _) = event else {
          XCTFail("an alert from no sighting\n\(trace)")
          continue
        }
        XCTAssertEqual(row.frame.state, f.state, trace)
        // Separated, or no state with a static address (under the stricter
        // rule: twice the span, one place more).
        let strict = f.state == .unknown
        if strict {
          seen["alert (no state)", default: 0] += 1
          XCTAssertTrue(row.address.raw >> 46 == 0b11, "no state, no static address\n\(trace)")
        } else {
          XCTAssertEqual(f.state, .separated, "alerted on a near-owner frame\n\(trace)")
        }
        // AirGuard's rule, recounted from the evidence.
        let ev = w.evidence(of: row.number)
        XCTAssertGreaterThanOrEqual(
          Set(ev.compactMap(\.place)).count, settings.sensitivity.places + (strict ? 1 : 0), trace)
        XCTAssertGreaterThanOrEqual(
          ev[0].time.nanos(until: now),
          UInt64(settings.sensitivity.span / .nanoseconds(1)) * (strict ? 2 : 1), trace)
        XCTAssertLessThanOrEqual(ev[0].time.nanos(until: now), UInt64(86_400_000_000_000), trace)
        for (i, a) in ev.enumerated() {
          for b in ev[(i + 1)...] where b.place == a.place {
            XCTAssertGreaterThanOrEqual(
              a.time.nanos(until: b.time), spacing, "two sightings in 15 min\n\(trace)")
          }
        }
      }
      // Bounds.
      let rows = w.rows
      XCTAssertLessThanOrEqual(
        rows.filter { $0.following != nil }.count, settings.maximumFollowing, trace)
      XCTAssertLessThanOrEqual(
        w.count, settings.maximumStrangers + settings.maximumFollowing + settings.maximumTrusted,
        trace)
      XCTAssertLessThanOrEqual(w.place.placeCount, settings.places.maximumPlaces, trace)
      for row in rows {
        XCTAssertLessThanOrEqual(w.evidence(of: row.number).count, settings.maximumEvidence, trace)
        // Held while trusted, and up to a minute after (forgetting runs
        // once a minute).
        let held: Bool = {
          guard case .until(let end) = row.trust else { return false }
          return end.map { $0.nanos(until: now) < 60_000_000_000 } ?? true
        }()
        if row.following == nil, !held {
          XCTAssertLessThan(
            row.lastSeen.nanos(until: now),
            UInt64(settings.retention / .nanoseconds(1)) + 60_000_000_000,
            "kept past its retention\n\(trace)")
        }
        if row.following == nil, alerted.contains(row.number) {
          XCTFail("an alert lost\n\(trace)")
        }
      }
      let after = Set(rows.map(\.number))
      for gone in before.subtracting(after) {
        if alerted.remove(gone) != nil { seen["evicted", default: 0] += 1 }
        seen[case: event, default: 0] += 1
        if case .clear = event {} else { trusted[gone] = nil }
      }
      if case .tracker(_, let address, _) = event, case .smartTag? = event.frameIdentity,
        counter != lastCounter, let row = rows.first(where: { $0.address == address }),
        before.contains(row.number)
      {
        seen["linked", default: 0] += 1
      }
      if case .smartTag? = event.frameIdentity { lastCounter = counter }
    }
  }
}

extension TrackerWatch.Event {
  fileprivate var frameIdentity: TrackerIdentity? {
    if case .tracker(let f, _, _) = self { f.identity } else { nil }
  }
}

extension Dictionary where Key == String, Value == Int {
  /// Counts why a tracker went: evicted for room, or forgotten with time.
  fileprivate subscript(case event: TrackerWatch.Event, default value: Int) -> Int {
    get { self[Self.reason(event), default: value] }
    set { self[Self.reason(event), default: value] = newValue }
  }

  private static func reason(_ event: TrackerWatch.Event) -> String {
    switch event {
    case .tracker: "evicted"
    case .clear: "cleared by user"
    default: "forgotten"
    }
  }
}
