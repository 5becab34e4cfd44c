import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotCore

/// The simulated fortnight (docs/trackers.md, "Following"): every follower
/// alerted within 15 minutes of the moment AirGuard's rule (the stricter one
/// for a tag that says no state) holds on the true places; no alert for strangers, colleagues, the partner's tag near its
/// owner or the owner's tags.
final class TrackerFortnightTests: XCTestCase {
  typealias F = TrackerFortnight

  struct Outcome {
    var expected: [String: MonotonicTime] = [:]
    var alerts: [String: [MonotonicTime]] = [:]
    var falseAlerts: [F.Role: Int] = [:]
    var sightings = 0
    var steps = 0
    var maxKept = 0
    var delays: [Duration] {
      expected.compactMap { key, t in alerts[key]?.first.map { gap(t, $0) } }
    }
  }

  static func gap(_ a: MonotonicTime, _ b: MonotonicTime) -> Duration {
    b >= a ? .nanoseconds(Int64(a.nanos(until: b))) : .zero - .nanoseconds(Int64(b.nanos(until: a)))
  }

  /// One physical follower's generation: an AirTag or Find Hub tag per
  /// address (daily), the SmartTag once (linked across its rotations).
  static func generation(_ role: F.Role, _ event: TrackerWatch.Event) -> String {
    guard role != .smartTag, case .tracker(_, let address, _) = event else { return role.rawValue }
    return "\(role.rawValue) \(address)"
  }

  func run(_ sensitivity: TrackerSensitivity, wifi: Bool) -> Outcome {
    let fortnight = F(seed: 40, wifi: wifi)
    var settings = TrackerWatch.Settings()
    settings.sensitivity = sensitivity
    settings.trusted = [fortnight.ownChipolo]
    var watch = TrackerWatch(settings: settings)
    var out = Outcome()
    // The oracle: AirGuard's rule on the true places, per generation.
    var evidence: [String: [(MonotonicTime, F.Spot)]] = [:]
    var ownTrusted = false
    fortnight.run { step in
      out.steps += 1
      let actions = watch.handle(step.event, at: step.time)
      guard let role = step.role, case .tracker(let frame, let address, _) = step.event else {
        return
      }
      out.sightings += 1
      if role == .ownSmartTag, !ownTrusted,
        let row = watch.rows.first(where: { $0.address == address })
      {
        // The owner trusts its SmartTag from the first sighting, for a month.
        _ = watch.handle(.trust(row.number, for: .seconds(30 * 86_400)), at: step.time)
        ownTrusted = true
      }
      for action in actions {
        guard case .following = action else { continue }
        if role.follows {
          out.alerts[Self.generation(role, step.event), default: []].append(step.time)
        } else {
          out.falseAlerts[role, default: 0] += 1
        }
      }
      out.maxKept = max(out.maxKept, watch.count)
      guard role.follows, frame.state != .nearOwner else { return }
      let key = Self.generation(role, step.event)
      guard out.expected[key] == nil else { return }
      var list = evidence[key, default: []]
      list.removeAll { $0.0.nanos(until: step.time) > 86_400_000_000_000 }
      if !list.contains(where: {
        $0.1 == step.spot && $0.0.nanos(until: step.time) < 900_000_000_000
      }) {
        list.append((step.time, step.spot))
      }
      evidence[key] = list
      // A tag whose frames say no state (the Tile): twice the span, one
      // place more.
      let strict = frame.state == .unknown
      if Set(list.map { "\($0.1)" }).count >= sensitivity.places + (strict ? 1 : 0),
        list[0].0.nanos(until: step.time)
          >= UInt64(sensitivity.span / .nanoseconds(1)) * (strict ? 2 : 1)
      {
        out.expected[key] = step.time
      }
    }
    return out
  }

  func testAFortnightAlertsEachFollowerInTimeAndNoOneElse() {
    var lines: [String] = []
    for wifi in [true, false] {
      for s in TrackerSensitivity.allCases {
        var out = run(s, wifi: wifi)
        let label = "\(s) wifi \(wifi)"
        // The neighbour who shares the morning train twice a week shares two
        // places: high alerts for it, medium and low do not.
        let neighbour = out.falseAlerts.removeValue(forKey: .neighbour) ?? 0
        XCTAssertEqual(out.falseAlerts, [:], "\(label): alerts for tags that do not follow")
        XCTAssertEqual(neighbour, s == .high ? 4 : 0, "\(label): the neighbour")
        XCTAssertFalse(out.expected.isEmpty, label)
        // Every role that follows is expected at least once.
        for role in F.Role.allCases where role.follows {
          XCTAssertTrue(
            out.expected.keys.contains { $0.hasPrefix(role.rawValue) }, "\(label): \(role)")
        }
        for (key, t) in out.expected {
          guard let alerts = out.alerts[key] else {
            XCTFail("\(label): \(key) follows from \(t) and never alerted")
            continue
          }
          XCTAssertEqual(alerts.count, 1, "\(label): \(key) alerted more than once")
          let delay = Self.gap(t, alerts[0])
          XCTAssertGreaterThanOrEqual(delay, .zero, "\(label): \(key) alerted before it followed")
          XCTAssertLessThanOrEqual(delay, .seconds(15 * 60), "\(label): \(key) alerted late")
        }
        for key in out.alerts.keys where out.expected[key] == nil {
          XCTFail("\(label): \(key) alerted, the rule never held on the true places")
        }
        XCTAssertLessThan(out.maxKept, 200, label)
        let delays = out.delays.map { $0 / .seconds(60) }.sorted()
        lines.append(
          String(
            format:
              "%@: %d alerts expected, %d given; delay min %.1f median %.1f max %.1f min; false %d; %d steps, %d sightings, at most %d kept",
            label, out.expected.count, out.alerts.values.map(\.count).reduce(0, +),
            delays.first ?? 0, delays.isEmpty ? 0 : delays[delays.count / 2], delays.last ?? 0,
            neighbour + out.falseAlerts.values.reduce(0, +), out.steps, out.sightings, out.maxKept))
      }
    }
    print(lines.joined(separator: "\n"))
  }
}
