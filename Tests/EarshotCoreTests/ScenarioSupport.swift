import EarshotTestSupport
import XCTest

@testable import EarshotCore

let testUUID = BeaconUUID("8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182")!

func region(
  _ name: String, major: UInt16? = nil, minor: UInt16? = nil, exitAfter: ExitAfter = .auto
) -> RegionConfig {
  var r = RegionConfig(name: name, line: 1)
  r.uuid = testUUID
  r.major = major
  r.minor = minor
  r.exitAfter = exitAfter
  return r
}

func beacon(
  _ name: String, major: UInt16, minor: UInt16, interval: Double, loss: Double,
  present: [Range<Double>], distance: [(t: Double, metres: Double)] = [(0, 1.5)]
) -> ScenarioBeacon {
  var b = ScenarioBeacon(name: name, id: TrackedID(uuid: testUUID, major: major, minor: minor))
  b.interval = interval
  b.loss = loss
  b.present = present
  b.distance = distance
  return b
}

/// Runs scenario events through a monitor the way the driver does.
func runScenario(
  _ s: Scenario, _ config: Config, snapshot: MonitorSnapshot? = nil, emitRange: Bool = false,
  events: [Scenario.Event]? = nil, startAt: Double = 0, until: Double? = nil,
  cipher: (any BlockCipher)? = nil, bonded: [BondedKey] = []
) -> (RegionMonitor, [MonitorEvent]) {
  var m = RegionMonitor(config: config, emitRange: emitRange, snapshot: snapshot, cipher: cipher)
  m.updateBondedKeys(bonded)
  var out = m.start(at: DecisionTime(micros: s.micros(startAt)), scanning: true)
  for e in events ?? s.events(cipher: cipher) where e.t >= s.time(startAt) {
    switch e {
    case .report(let t, let b, let a, let rssi):
      out += m.report(at: DecisionTime(capture: t), beacon: b, address: a, rssi: rssi)
    case .deviceReport(let t, let a, let type, let rssi, let tx):
      out += m.report(at: DecisionTime(capture: t), address: a, type: type, rssi: rssi, txPower: tx)
    case .telemetry(let t, _, _, _): out += m.advance(to: DecisionTime(capture: t))
    case .adapterDown(let t): out += m.adapterDown(at: DecisionTime(capture: t))
    case .adapterUp(let t): out += m.adapterUp(at: DecisionTime(capture: t))
    }
  }
  out += m.advance(to: DecisionTime(micros: s.micros(until ?? s.duration)))
  return (m, out)
}

/// Asserts the monitor's events for `region` against ground truth: an
/// enter (or, for presence at the start, a `state inside`) within
/// `enterBound` of each arrival, an exit within `exitBound` of each
/// departure, and no exit or outside state while present (no false exits).
func assertMatchesTruth(
  _ events: [MonitorEvent], region: String, truth: [Range<Double>], scenario s: Scenario,
  enterBound: Double, exitBound: Double, startAt: Double = 0,
  file: StaticString = #filePath, line: UInt = #line
) {
  let mine = events.filter { $0.region == region && $0.kind != .range }
  func secs(_ e: MonitorEvent) -> Double { Double(e.decided.micros - s.start) / 1e6 }
  var expectedEnters = 0
  var expectedExits = 0
  for p in truth {
    if p.lowerBound <= startAt {
      XCTAssertTrue(
        mine.contains {
          $0.kind == .state && $0.state == .inside && secs($0) <= startAt + enterBound
        },
        "\(region): present at start, expected state inside", file: file, line: line)
    } else {
      expectedEnters += 1
      XCTAssertTrue(
        mine.contains {
          $0.kind == .enter && secs($0) >= p.lowerBound && secs($0) <= p.lowerBound + enterBound
        }, "\(region): no enter within \(enterBound) s of \(p.lowerBound)", file: file, line: line)
    }
    if p.upperBound + exitBound <= s.duration {
      expectedExits += 1
      XCTAssertTrue(
        mine.contains {
          $0.kind == .exit && secs($0) >= p.upperBound && secs($0) <= p.upperBound + exitBound
        }, "\(region): no exit within \(exitBound) s of \(p.upperBound)", file: file, line: line)
    }
  }
  for e in mine where e.state == .outside {
    XCTAssertFalse(
      truth.contains { $0.contains(secs(e)) }, "\(region): false exit at \(secs(e)) s", file: file,
      line: line)
  }
  XCTAssertEqual(
    mine.filter { $0.kind == .enter }.count, expectedEnters, "\(region) enters", file: file,
    line: line)
  XCTAssertEqual(
    mine.filter { $0.kind == .exit }.count, expectedExits, "\(region) exits", file: file, line: line
  )
}

/// How fast and how safely a region's exits came, against ground truth.
struct ExitFigures {
  /// Seconds from each departure to its exit (departures with no exit
  /// before the next arrival or the end are `missed`).
  var delays: [Double] = []
  var missed = 0
  /// Exits or outside states while the region was present.
  var falseExits = 0

  var median: Double { delays.isEmpty ? .nan : delays.sorted()[delays.count / 2] }
  var worst: Double { delays.max() ?? .nan }

  static func + (a: ExitFigures, b: ExitFigures) -> ExitFigures {
    ExitFigures(
      delays: a.delays + b.delays, missed: a.missed + b.missed,
      falseExits: a.falseExits + b.falseExits)
  }
}

/// Measures `region`'s exits in `events` against `truth`. Departures too
/// close to the end to be judged (within `settle` seconds) are skipped.
func exitFigures(
  _ events: [MonitorEvent], region: String, truth: [Range<Double>], scenario s: Scenario,
  settle: Double = 60
) -> ExitFigures {
  let mine = events.filter { $0.region == region && $0.kind != .range }
  func secs(_ e: MonitorEvent) -> Double { Double(e.decided.micros - s.start) / 1e6 }
  var f = ExitFigures()
  for (k, p) in truth.enumerated() where p.upperBound + settle <= s.duration {
    let next = k + 1 < truth.count ? truth[k + 1].lowerBound : s.duration
    if let exit = mine.first(where: {
      $0.kind == .exit && secs($0) >= p.upperBound && secs($0) <= next
    }) {
      f.delays.append(secs(exit) - p.upperBound)
    } else {
      f.missed += 1
    }
  }
  f.falseExits =
    mine.filter { e in
      e.state == .outside && truth.contains { $0.contains(secs(e)) }
    }.count
  return f
}
