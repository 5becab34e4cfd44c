import EarshotTestSupport
import XCTest

@testable import EarshotCore

/// The monitor with many beacons: the `auto` timeout kept incrementally must
/// equal a full recomputation, and long-gone beacons are forgotten.
final class MonitorScaleTests: XCTestCase {
  func testAutoTimeoutKeptIncrementallyEqualsFullRecomputation() {
    var c = Config()
    c.monitor.autoFloor = 10
    c.monitor.autoCeiling = 60
    c.regions = [region("all"), region("even", major: 2)]
    var m = RegionMonitor(config: c, emitRange: false)
    _ = m.start(at: DecisionTime(micros: 0), scanning: true)
    // Beacons with intervals from 0.1 s to 6 s; some stop part-way, so the
    // beacon whose silence ends the region last changes, and one that left
    // stops counting once its own timeout has passed.
    struct Sim {
      var id: TrackedID
      var interval: Int64
      var next: Int64
      var stopAt: Int64
      var estimator = AdvertisingIntervalEstimator()
      var lastSeen: Int64 = .min
    }
    var seed: UInt64 = 42
    func random(_ n: Int64) -> Int64 {
      seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return Int64((seed >> 33) % UInt64(n))
    }
    var sims: [Sim] = (0..<12).map { k in
      let interval = [100_000, 250_000, 1_000_000, 3_000_000, 6_000_000][k % 5]
      return Sim(
        id: TrackedID(uuid: testUUID, major: UInt16(k % 3 + 1), minor: UInt16(k)),
        interval: Int64(interval), next: random(Int64(interval)),
        stopAt: k % 4 == 0 ? 200_000_000 + random(100_000_000) : .max)
    }
    var checks = 0
    var lastSeen: [String: Int64] = [:]
    while let k = sims.indices.filter({ sims[$0].next < sims[$0].stopAt }).min(by: {
      sims[$0].next < sims[$1].next
    }), sims[k].next < 600_000_000 {
      let t = sims[k].next
      // Jitter and 20 % loss, as advertisers and scanners have.
      sims[k].next += sims[k].interval + random(10_000)
      guard random(10) >= 2 else { continue }
      _ = m.report(
        at: DecisionTime(micros: t), beacon: TrackedBeacon(id: sims[k].id, measuredPower: -59),
        address: BDAddress(raw: 1),
        rssi: -60)
      let limit = sims[k].estimator.timeout(floor: 10, ceiling: 60) ?? 30
      sims[k].estimator.observe(at: DecisionTime(micros: t), absentAfter: limit)
      sims[k].lastSeen = t
      for name in ["all", "even"] where name == "all" || sims[k].id.major == 2 {
        lastSeen[name] = t
      }
      for name in ["all", "even"] where lastSeen[name] != nil {
        // The timeout of the beacon whose last report plus own timeout is
        // the latest (any of them, on a tie).
        let ends = sims.filter { (name == "all" || $0.id.major == 2) && $0.lastSeen > .min }
          .map { sim in
            let seconds = sim.estimator.timeout(floor: 10, ceiling: 60) ?? 30
            return (end: sim.lastSeen + Int64((seconds * 1e6).rounded()), seconds: seconds)
          }
        let latest = ends.map(\.end).max()!
        let expected = ends.filter { $0.end == latest }.map(\.seconds)
        XCTAssertTrue(
          expected.contains(m.exitTimeout(region: name)!),
          "\(name) at \(t): \(String(describing: m.exitTimeout(region: name))) not in \(expected)")
        checks += 1
      }
    }
    XCTAssertGreaterThan(checks, 10_000)
  }

  func testBeaconsUnseenForAnHourAreForgottenUnlessARegionNamesThem() {
    var c = Config()
    c.monitor.exitAfter = .seconds(30)
    c.regions = [region("room", exitAfter: .seconds(30)), region("desk", major: 9)]
    var m = RegionMonitor(config: c, emitRange: false)
    _ = m.start(at: DecisionTime(micros: 0), scanning: true)
    // Three segments' worth, so forgetting moves records across segments.
    for i in 0..<1_500 {
      _ = m.report(
        at: DecisionTime(micros: Int64(i) * 100),
        beacon: TrackedBeacon(
          id: TrackedID(uuid: testUUID, major: 1, minor: UInt16(i)), measuredPower: -59),
        address: BDAddress(raw: UInt64(i)), rssi: -70)
    }
    // The desk's only beacon, seen once: the desk's exit still names it.
    let desk = TrackedID(uuid: testUUID, major: 9, minor: 1)
    _ = m.report(
      at: DecisionTime(micros: 200_000), beacon: TrackedBeacon(id: desk, measuredPower: -59),
      address: BDAddress(raw: 999),
      rssi: -65)
    XCTAssertEqual(m.trackedBeacons, 1_501)
    let stayer = TrackedID(uuid: testUUID, major: 1, minor: 500)
    var t: Int64 = 1_000_000
    while t < 7_200_000_000 {
      _ = m.report(
        at: DecisionTime(micros: t), beacon: TrackedBeacon(id: stayer, measuredPower: -59),
        address: BDAddress(raw: 5),
        rssi: -60)
      t += 10_000_000
    }
    _ = m.advance(to: DecisionTime(micros: t))
    XCTAssertEqual(m.trackedBeacons, 2, "the stayer and the desk's last beacon")
    XCTAssertEqual(m.state(of: "room"), .inside)
    XCTAssertEqual(m.state(of: "desk"), .outside)
    // The survivors are still found: a report from each updates, not adds.
    _ = m.report(
      at: DecisionTime(micros: t), beacon: TrackedBeacon(id: desk, measuredPower: -59),
      address: BDAddress(raw: 999),
      rssi: -65)
    _ = m.report(
      at: DecisionTime(micros: t), beacon: TrackedBeacon(id: stayer, measuredPower: -59),
      address: BDAddress(raw: 5),
      rssi: -60)
    XCTAssertEqual(m.trackedBeacons, 2)
    XCTAssertEqual(m.state(of: "desk"), .inside)
  }
}
