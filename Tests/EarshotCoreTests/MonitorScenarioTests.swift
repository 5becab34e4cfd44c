import EarshotTestSupport
import XCTest

@testable import EarshotCore

final class MonitorScenarioTests: XCTestCase {
  func config(_ regions: RegionConfig...) -> Config {
    var c = Config()
    c.regions = regions
    return c
  }

  func testOneSecondBeaconUnder30PercentLossNeverFlapsOverManySeeds() {
    let c = config(region("desk", major: 1, minor: 10))
    for seed in 1...20 {
      var s = Scenario()
      s.seed = UInt64(seed)
      s.duration = 3600
      s.beacons = [
        beacon(
          "desk", major: 1, minor: 10, interval: 1, loss: 0.3, present: [0..<1500, 1800..<3000])
      ]
      let (m, events) = runScenario(s, c)
      assertMatchesTruth(
        events, region: "desk", truth: s.presence(matching: c.regions[0]), scenario: s,
        enterBound: 10, exitBound: 40)
      let timeout = m.exitTimeout(region: "desk")!
      XCTAssertGreaterThan(timeout, 12, "seed \(seed)")
    }
  }

  func testFixedExitAfterUnder30PercentLoss() {
    let c = config(region("desk", major: 1, minor: 10, exitAfter: .seconds(30)))
    var s = Scenario()
    s.seed = 3
    s.duration = 7200
    s.beacons = [beacon("desk", major: 1, minor: 10, interval: 1, loss: 0.3, present: [100..<5000])]
    let (_, events) = runScenario(s, c)
    assertMatchesTruth(
      events, region: "desk", truth: [100..<5000], scenario: s, enterBound: 10, exitBound: 31)
  }

  func testFastBeaconExitsFastWithAuto() {
    let c = config(region("tag", major: 2))
    var s = Scenario()
    s.duration = 600
    s.beacons = [beacon("tag", major: 2, minor: 1, interval: 0.1, loss: 0.1, present: [60..<300])]
    let (m, events) = runScenario(s, c)
    assertMatchesTruth(
      events, region: "tag", truth: [60..<300], scenario: s, enterBound: 1, exitBound: 7)
    XCTAssertEqual(m.exitTimeout(region: "tag")!, 6, accuracy: 0.001, "the floor")
  }

  /// Runs one region "r" (major 5, `auto`) over seeds and sums its figures.
  func exitFigures(
    seeds: ClosedRange<Int>, duration: Double, monitor: MonitorConfig = MonitorConfig(),
    _ beacons: [ScenarioBeacon]
  ) -> ExitFigures {
    var c = config(region("r", major: 5))
    c.monitor = monitor
    var total = ExitFigures()
    for seed in seeds {
      var s = Scenario()
      s.seed = UInt64(seed)
      s.duration = duration
      s.beacons = beacons
      let (_, events) = runScenario(s, c)
      total =
        total
        + EarshotCoreTests.exitFigures(
          events, region: "r", truth: s.presence(matching: c.regions[0]), scenario: s)
    }
    return total
  }

  /// Issue 20: under `auto` each beacon's timeout follows its own gaps. At
  /// 50 % loss, 25 seeds of four departures each (100 exits per interval).
  func testExitsAsFastAsTheEvidenceAllowsAtHalfLoss() {
    let present: [Range<Double>] = [20..<120, 180..<280, 340..<440, 500..<600]
    var limits = MonitorConfig()
    limits.autoFloor = 1
    for (interval, median, worst, floorMedian) in [
      (0.1, 6.0, 6.0, 3.0), (0.35, 11.0, 16.0, 11.0), (1.0, 30.0, 40.0, 30.0),
    ] {
      let f = exitFigures(
        seeds: 1...25, duration: 660,
        [beacon("b", major: 5, minor: 1, interval: interval, loss: 0.5, present: present)])
      XCTAssertEqual(f.delays.count, 100, "\(interval) s")
      XCTAssertEqual(f.missed, 0, "\(interval) s")
      XCTAssertEqual(f.falseExits, 0, "\(interval) s")
      XCTAssertLessThanOrEqual(f.median, median, "\(interval) s")
      XCTAssertLessThanOrEqual(f.worst, worst, "\(interval) s")
      // With the floor out of the way, the evidence alone: still safe.
      let evidence = exitFigures(
        seeds: 1...25, duration: 660, monitor: limits,
        [beacon("b", major: 5, minor: 1, interval: interval, loss: 0.5, present: present)])
      XCTAssertEqual(evidence.falseExits, 0, "\(interval) s, no floor")
      XCTAssertEqual(evidence.missed, 0, "\(interval) s, no floor")
      XCTAssertLessThanOrEqual(evidence.median, floorMedian, "\(interval) s, no floor")
    }
  }

  /// The floor's reason: a phone at 100 ms that slows to 1 s when locked
  /// (and back when unlocked), every 100 s, at 30 % loss. Its first slow
  /// gaps come before its new pace is learnt; 6 s covers them (5 s gave 4
  /// false exits in these 150 slowdowns).
  func testPhoneThatSlowsDownWhenLockedDoesNotFlap() {
    var fast = beacon(
      "unlocked", major: 5, minor: 1, interval: 0.1, loss: 0.3,
      present: [0..<100, 200..<300, 400..<500])
    let slow = {
      var b = beacon(
        "locked", major: 5, minor: 1, interval: 1, loss: 0.3,
        present: [100..<200, 300..<400, 500..<600])
      b.phase = 0.37
      return b
    }()
    fast.addresses = slow.addresses
    let f = exitFigures(seeds: 1...50, duration: 660, [fast, slow])
    XCTAssertEqual(f.falseExits, 0)
    XCTAssertEqual(f.missed, 0)
    XCTAssertEqual(f.delays.count, 50)
    XCTAssertLessThanOrEqual(f.worst, 30, "learnt afresh after the slowdown: at most cautious")
  }

  /// Issue 20: a region's timeout follows the beacons present now. A 1 s
  /// beacon (50 % loss, timeout ~25 s) left at 120 s; the 100 ms one stays
  /// until 300 s: the exit follows the fast one's timeout, not the slow one's.
  func testRegionTimeoutFollowsTheBeaconsPresentNow() {
    let c = config(region("r", major: 5))
    for seed in 1...10 {
      var s = Scenario()
      s.seed = UInt64(seed)
      s.duration = 400
      s.beacons = [
        beacon("slow", major: 5, minor: 1, interval: 1, loss: 0.5, present: [0..<120]),
        beacon("fast", major: 5, minor: 2, interval: 0.1, loss: 0.5, present: [0..<300]),
      ]
      let (m, _) = runScenario(s, c, until: 200)
      XCTAssertEqual(m.exitTimeout(region: "r")!, 6, accuracy: 0.001, "the fast one's (the floor)")
      let (_, all) = runScenario(s, c)
      assertMatchesTruth(
        all, region: "r", truth: [0..<300], scenario: s, enterBound: 1, exitBound: 6.2)
    }
    // While both are present the slower sets the pace.
    var s = Scenario()
    s.duration = 100
    s.beacons = [
      beacon("slow", major: 5, minor: 1, interval: 1, loss: 0.5, present: [0..<100]),
      beacon("fast", major: 5, minor: 2, interval: 0.1, loss: 0.5, present: [0..<100]),
    ]
    let (m, _) = runScenario(s, c, until: 99)
    XCTAssertGreaterThan(m.exitTimeout(region: "r")!, 15)
  }

  /// Nothing heard under `auto`: unknown for the cautious 30 s (the reason
  /// is at `cautiousTimeout`), then `outside` as a state, not an exit.
  func testNothingInRangeUnderAutoWaitsTheCautiousTimeout() {
    let c = config(region("r", major: 5))
    var s = Scenario()
    s.duration = 100
    let (m, events) = runScenario(s, c)
    XCTAssertEqual(events.map { "\($0.kind)/\($0.state)" }, ["state/unknown", "state/outside"])
    XCTAssertEqual(events[1].decided.micros, s.micros(30))
    XCTAssertEqual(m.exitTimeout(region: "r"), 30)
  }

  func testBeaconThatChangesAddressStaysOneBeacon() {
    let c = config(region("tag", major: 2))
    var s = Scenario()
    s.duration = 900
    var b = beacon("tag", major: 2, minor: 1, interval: 0.5, loss: 0.2, present: [40..<700])
    b.addresses = [
      (0, BDAddress("D1:00:00:00:00:01")!), (100, BDAddress("D2:00:00:00:00:02")!),
      (200, BDAddress("D3:00:00:00:00:03")!),
    ]
    s.beacons = [b]
    s.duration = 250
    let (m, events) = runScenario(s, c, emitRange: true)
    assertMatchesTruth(
      events, region: "tag", truth: [40..<700], scenario: s, enterBound: 3, exitBound: 20)
    let last = events.last { $0.kind == .range }!
    XCTAssertEqual(last.beacons.count, 1, "three addresses, one beacon")
    XCTAssertEqual(last.beacons[0].address, BDAddress("D3:00:00:00:00:03"))
    XCTAssertEqual(m.state(of: "tag"), .inside)
  }

  func testTwoBeaconsInOneRegion() {
    let c = config(region("lab", major: 2))
    var s = Scenario()
    s.duration = 1200
    s.beacons = [
      beacon(
        "a", major: 2, minor: 1, interval: 1, loss: 0.3, present: [50..<400], distance: [(0, 4)]),
      beacon(
        "b", major: 2, minor: 2, interval: 0.2, loss: 0.1, present: [300..<700],
        distance: [(0, 0.3)]),
      beacon("other", major: 3, minor: 1, interval: 0.2, loss: 0, present: [0..<1200]),
    ]
    let (_, events) = runScenario(s, c, emitRange: true)
    let truth = s.presence(matching: c.regions[0])
    XCTAssertEqual(truth, [50..<700])
    assertMatchesTruth(
      events, region: "lab", truth: truth, scenario: s, enterBound: 10, exitBound: 40)
    // While both are there, ranging lists both, nearest first.
    let both = events.filter { $0.kind == .range && $0.decided.micros == s.micros(350) }
    XCTAssertEqual(both.count, 1)
    XCTAssertEqual(both[0].beacons.map(\.id.beacon?.minor), [2, 1])
    XCTAssertEqual(both[0].beacons[0].proximity, .immediate)
    XCTAssertEqual(both[0].beacons[1].proximity, .far)
    // One range line per second while inside.
    let ranges = events.filter { $0.kind == .range }.map(\.decided.micros)
    XCTAssertEqual(Set(ranges).count, ranges.count)
    XCTAssertTrue(ranges.allSatisfy { ($0 - s.start) % 1_000_000 == 0 })
  }

  func testRestartWithBeaconStillThereGivesNoEnter() {
    let c = config(region("desk", major: 1))
    var s = Scenario()
    s.duration = 600
    s.beacons = [beacon("desk", major: 1, minor: 10, interval: 1, loss: 0.3, present: [0..<600])]
    let (first, _) = runScenario(s, c, until: 200)
    let saved = try! MonitorSnapshot.decode(first.snapshot.encode())
    XCTAssertEqual(saved.regions.first?.known, .inside)
    // The agent comes back at 260 s; the beacon is still there.
    let (_, events) = runScenario(s, c, snapshot: saved, startAt: 260)
    let kinds = events.filter { $0.region == "desk" }.map { "\($0.kind)/\($0.state)" }
    XCTAssertEqual(kinds, ["state/unknown", "state/inside"])
  }

  func testRestartAfterBeaconLeftGivesExitAfterExitAfter() {
    let c = config(region("desk", major: 1, exitAfter: .seconds(30)))
    var s = Scenario()
    s.duration = 600
    s.beacons = [beacon("desk", major: 1, minor: 10, interval: 1, loss: 0.3, present: [0..<220])]
    let (first, _) = runScenario(s, c, until: 200)
    XCTAssertEqual(first.state(of: "desk"), .inside)
    let (_, events) = runScenario(s, c, snapshot: first.snapshot, startAt: 300)
    let desk = events.filter { $0.region == "desk" }
    XCTAssertEqual(desk.map(\.kind), [.state, .exit])
    XCTAssertEqual(desk[1].decided.micros, s.micros(330), "exit_after after the agent came back")
    // And a region that was outside, whose beacon came while we were down, enters.
    let outside = MonitorSnapshot(regions: [
      .init(name: "desk", identity: c.regions[0].identity, known: .outside, lastSeen: nil)
    ])
    let (_, again) = runScenario(s, c, snapshot: outside, startAt: 100)
    XCTAssertEqual(again.filter { $0.region == "desk" }.map(\.kind), [.state, .enter, .exit])
    // A region redefined since the snapshot starts afresh.
    var moved = c
    moved.regions[0].major = 9
    let (m, _) = runScenario(s, moved, snapshot: first.snapshot, startAt: 300, until: 301)
    XCTAssertEqual(m.state(of: "desk"), .unknown)
  }

  func testAdapterDownMakesRegionsUnknownAndUpSettlesWithoutFlapping() {
    let c = config(region("desk", major: 1, exitAfter: .seconds(30)))
    var s = Scenario()
    s.duration = 900
    s.adapterDown = [200..<260, 500..<560]
    // Present across the first outage; leaves during the second.
    s.beacons = [beacon("desk", major: 1, minor: 10, interval: 1, loss: 0.3, present: [0..<520])]
    let (_, events) = runScenario(s, c)
    let desk = events.filter { $0.region == "desk" }
    XCTAssertEqual(
      desk.map { "\($0.kind)/\($0.state)" },
      [
        "state/unknown", "state/inside", "state/unknown", "state/inside", "state/unknown",
        "exit/outside",
      ])
    XCTAssertEqual(desk[2].decided.micros, s.micros(200))
    XCTAssertEqual(desk[4].decided.micros, s.micros(500))
    XCTAssertEqual(
      desk[5].decided.micros, s.micros(590), "30 s of scanning after the adapter came back")
    XCTAssertFalse(desk.contains { $0.state == .outside && $0.decided.micros < s.micros(520) })
  }

  func testNeverSeenRegionBecomesOutsideAfterExitAfterAsState() {
    let c = config(region("desk", major: 1, exitAfter: .seconds(30)))
    var s = Scenario()
    s.duration = 100
    let (m, events) = runScenario(s, c)
    XCTAssertEqual(events.map { "\($0.kind)/\($0.state)" }, ["state/unknown", "state/outside"])
    XCTAssertEqual(events[1].decided.micros, s.micros(30))
    XCTAssertNil(m.nextDeadline)
  }

  func testSuspectMeasuredPowerStillMonitorsButNeverRanges() {
    let c = config(region("desk", major: 1, exitAfter: .seconds(20)))
    var s = Scenario()
    s.duration = 300
    var b = beacon("desk", major: 1, minor: 10, interval: 0.5, loss: 0.1, present: [40..<200])
    b.power = 116
    b.calibratedPower = -59
    s.beacons = [b]
    let (_, events) = runScenario(s, c, emitRange: true)
    assertMatchesTruth(
      events, region: "desk", truth: [40..<200], scenario: s, enterBound: 2, exitBound: 21)
    let ranges = events.filter { $0.kind == .range }
    XCTAssertGreaterThan(ranges.count, 150)
    for r in ranges {
      XCTAssertEqual(r.beacons.first?.proximity, .unknown)
      XCTAssertNil(r.beacons.first?.accuracy)
    }
  }

  func testCaptureStartingMidPresenceGivesStateNotEnter() {
    let c = config(region("desk", major: 1, minor: 10))
    var s = Scenario()
    s.duration = 600
    s.beacons = [beacon("desk", major: 1, minor: 10, interval: 1, loss: 0.3, present: [0..<300])]
    let (_, events) = runScenario(s, c, startAt: 120)
    let desk = events.filter { $0.region == "desk" }
    XCTAssertEqual(desk.map(\.kind), [.state, .state, .exit])
    XCTAssertEqual(desk[1].state, .inside)
    XCTAssertLessThan(desk[1].decided.micros, s.micros(125))
    XCTAssertGreaterThanOrEqual(desk[2].decided.micros, s.micros(300))
  }

  func testNextDeadlineIsTheOnlyTimerNeeded() {
    // Driving the monitor only at reports and at nextDeadline gives the same
    // events as advancing it every 10 ms: no polling is needed.
    let c = config(region("desk", major: 1, exitAfter: .seconds(15)))
    var s = Scenario()
    s.duration = 300
    s.beacons = [
      beacon("desk", major: 1, minor: 10, interval: 1, loss: 0.3, present: [10..<100, 150..<200])
    ]
    let (_, byDeadline) = runScenario(s, c, emitRange: true)
    var m = RegionMonitor(config: c, emitRange: true)
    var polled = m.start(at: DecisionTime(micros: s.start), scanning: true)
    var reports = s.events()[...]
    var t = s.start
    while t <= s.micros(300) {
      while let e = reports.first, e.t.micros <= t {
        if case .report(let rt, let b, let a, let r) = e {
          polled += m.report(at: DecisionTime(capture: rt), beacon: b, address: a, rssi: r)
        }
        reports.removeFirst()
      }
      polled += m.advance(to: DecisionTime(micros: t))
      t += 10_000
    }
    XCTAssertEqual(byDeadline, polled)
  }

  func testSnapshotRoundTripAndCorruptFile() throws {
    let snap = MonitorSnapshot(regions: [
      .init(
        name: "living room", identity: "8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182:1", known: .inside,
        lastSeen: WallTime(micros: 42)),
      .init(name: "b", identity: "X", known: .outside, lastSeen: nil),
    ])
    XCTAssertEqual(try MonitorSnapshot.decode(snap.encode()), snap)
    XCTAssertThrowsError(try MonitorSnapshot.decode("hello\n"))
    XCTAssertThrowsError(try MonitorSnapshot.decode("earshot-state 1\nregion\ta\tb\tmaybe\t-\n"))
  }

  /// Lines show the wall time, never the decision time (here a monotonic
  /// clock's, hours since boot).
  func testEventJSONShape() {
    let e = MonitorEvent(
      decided: DecisionTime(micros: 7_200_000_000), shown: WallTime(micros: 1_767_225_630_100_000),
      kind: .enter, region: "desk", state: .inside, beacons: [])
    XCTAssertEqual(
      MonitorEventFormatter.json(e),
      #"{"t":1767225630.10,"event":"enter","region":"desk","state":"inside"}"#)
    let b = RangedBeacon(
      id: TrackedID(uuid: testUUID, major: 1, minor: 10), address: BDAddress("C1:02:03:04:05:06")!,
      rssi: -67.4, accuracy: 1.8, proximity: .near)
    let r = MonitorEvent(
      decided: DecisionTime(micros: 7_200_900_000), shown: WallTime(micros: 1_767_225_631_000_000),
      kind: .range, region: "desk", state: .inside, beacons: [b])
    XCTAssertEqual(
      MonitorEventFormatter.json(r),
      #"{"t":1767225631.00,"event":"range","region":"desk","state":"inside","beacons":[{"uuid":"8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182","major":1,"minor":10,"address":"C1:02:03:04:05:06","rssi":-67,"accuracy":1.80,"proximity":"near"}]}"#
    )
  }

  /// What the proximity log keeps of monitor events: region events with
  /// their cause, one sighting per ranged beacon with accuracy as distance,
  /// at the time shown.
  func testMonitorEventsBecomeLogEvents() {
    let id = TrackedID(uuid: testUUID, major: 1, minor: 10)
    let address = BDAddress("C1:02:03:04:05:06")!
    let b = RangedBeacon(id: id, address: address, rssi: -67.4, accuracy: 1.8, proximity: .near)
    XCTAssertEqual(
      ProximityEvent.from(
        MonitorEvent(
          decided: DecisionTime(micros: 1), shown: WallTime(micros: 5), kind: .enter,
          region: "desk", state: .inside, beacons: [b])),
      [
        .region(
          RegionLogEvent(
            t: WallTime(micros: 5), region: "desk", kind: .enter, state: .inside, beacon: id))
      ])
    XCTAssertEqual(
      ProximityEvent.from(
        MonitorEvent(capture: 6, kind: .state, region: "lab", state: .unknown, beacons: [])),
      [
        .region(
          RegionLogEvent(
            t: WallTime(micros: 6), region: "lab", kind: .state, state: .unknown, beacon: nil))
      ])
    let other = RangedBeacon(
      id: TrackedID(uuid: testUUID, major: 1, minor: 11), address: address, rssi: nil,
      accuracy: nil,
      proximity: .unknown)
    XCTAssertEqual(
      ProximityEvent.from(
        MonitorEvent(
          decided: DecisionTime(micros: 2), shown: WallTime(micros: 7), kind: .range,
          region: "desk", state: .inside, beacons: [b, other])),
      [
        .sighting(
          BeaconSighting(
            t: WallTime(micros: 7), beacon: id, address: address, rssi: -67.4, distance: 1.8,
            region: "desk")),
        .sighting(
          BeaconSighting(
            t: WallTime(micros: 7), beacon: other.id.beacon!, address: address, rssi: nil,
            distance: nil,
            region: "desk")),
      ])
  }
}
