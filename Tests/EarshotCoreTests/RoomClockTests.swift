import XCTest

@testable import EarshotCore

/// Rooms across agents whose clocks differ: the rule runs on the
/// aggregator's clock (`RoomClock`, `RoomJudge`), so a sighting's own `t`
/// changes nothing.
final class RoomClockTests: XCTestCase {
  let walker = TrackedID(uuid: testUUID, major: 1, minor: 20)
  let keys = TrackedID(uuid: testUUID, major: 1, minor: 21)
  let t0: Int64 = 1_767_225_600_000_000
  let rooms = ["living", "kitchen", "bedroom"]

  /// A sighting heard at `at` seconds (true time) and when it arrives.
  struct Heard {
    var sighting: RoomSighting
    var arrival: MonotonicTime
  }

  /// Ten minutes, one sighting per agent per beacon per second (some lost)
  /// with a few milliseconds of delivery delay: the walker 150 s in each
  /// room in turn and then gone; the keys in the kitchen throughout.
  func house(skew: (String, Double) -> Double) -> [Heard] {
    var out: [Heard] = []
    var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
    func random() -> Double {
      seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return Double(seed >> 11) / Double(1 << 53)
    }
    let boot = MonotonicTime(nanos: 5_000_000_000_000)  // the aggregator's uptime: any
    for sec in 0..<600 {
      let at = Double(sec)
      let walkerRoom: String? = sec < 450 ? rooms[sec / 150] : nil
      for (k, room) in rooms.enumerated() {
        for (id, inRoom) in [(walker, walkerRoom), (keys, "kitchen")] {
          guard let inRoom, random() > 0.2 else { continue }
          let heard = at + Double(k) * 0.21 + (id == keys ? 0.5 : 0)
          let d = (room == inRoom ? 1.2 : 6.0) * (0.8 + 0.4 * random())
          let delay = 0.002 + 0.03 * random()
          let t = t0 + Int64(((heard + skew(room, heard)) * 1e6).rounded())
          out.append(
            Heard(
              sighting: RoomSighting(
                t: WallTime(micros: t), beacon: id, room: room, rssi: nil, distance: d, count: 1),
              arrival: boot.adding(seconds: heard + delay)))
        }
      }
    }
    return out.sorted { $0.arrival < $1.arrival }
  }

  func judged(_ heard: [Heard]) -> [RoomChange] {
    let boot = MonotonicTime(nanos: 5_000_000_000_000)
    var judge = RoomJudge(
      settings: .init(), clock: RoomClock(origin: .wall(WallTime(micros: t0), at: boot)))
    var out: [RoomChange] = []
    for h in heard {
      out += judge.sighting(h.sighting, arrival: h.arrival).rule
      out += judge.advance(to: h.arrival).rule
    }
    out += judge.advance(to: boot.adding(seconds: 700)).rule
    return out
  }

  /// One agent an hour ahead, one ten minutes behind, one drifting (5 s
  /// fast at the start, 50 ppm plus 1 % on top, 11 s by the end).
  func skewed(_ room: String, _ at: Double) -> Double {
    switch room {
    case "kitchen": 3600
    case "living": -600
    default: 5 + at * (50e-6 + 0.01)
    }
  }

  func testSkewedAgentsPlaceBeaconsExactlyAsAgentsInStep() {
    let inStep = judged(house { _, _ in 0 })
    let skewed = judged(house(skew: skewed))
    // The in-step timeline is the truth's: the walker through the three
    // rooms and away, the keys in the kitchen once.
    XCTAssertEqual(
      inStep.filter { $0.beacon == walker }.map(\.room), ["living", "kitchen", "bedroom", nil])
    XCTAssertEqual(inStep.filter { $0.beacon == keys }.map(\.room), ["kitchen", nil])
    XCTAssertEqual(skewed.map(\.room), inStep.map(\.room), "\(skewed)")
    XCTAssertEqual(skewed.map(\.subject), inStep.map(\.subject))
    for (a, b) in zip(skewed, inStep) {
      XCTAssertLessThanOrEqual(
        abs(a.t.micros - b.t.micros), 1000, "within a millisecond: \(a) \(b)")
    }
    // Dated on the aggregator's clock: the walker reaches the kitchen
    // within the window and switch_after of 150 s.
    let kitchen = inStep.first { $0.beacon == walker && $0.room == "kitchen" }!
    XCTAssertGreaterThan(kitchen.t.micros, t0 + 150_000_000)
    XCTAssertLessThan(kitchen.t.micros, t0 + 160_000_000)
  }

  /// What the test guards against: the same skewed sightings judged on
  /// their own `t` (the old message time) lose the walker's rooms.
  func testTheSameSightingsOnMessageTimeGoWrong() {
    var rule = RoomRule(settings: .init())
    var changes: [RoomChange] = []
    for h in house(skew: skewed) { changes += rule.sighting(h.sighting) }
    XCTAssertNotEqual(
      changes.filter { $0.beacon == walker }.map(\.room), ["living", "kitchen", "bedroom", nil])
  }

  func testAwayAndTheWindowRunOnTheAggregatorsClock() {
    let boot = MonotonicTime(nanos: 1_000_000_000)
    var judge = RoomJudge(
      settings: .init(window: 5, switchAfter: 3, awayAfter: .seconds(30)),
      clock: RoomClock(origin: .wall(WallTime(micros: t0), at: boot)))
    var placed: [RoomChange] = []
    // Only an agent an hour ahead hears the keys, for 10 s.
    for sec in 0..<10 {
      let s = RoomSighting(
        t: WallTime(micros: t0 + 3_600_000_000 + Int64(sec) * 1_000_000), beacon: keys,
        room: "kitchen", rssi: nil,
        distance: 1, count: 1)
      placed += judge.sighting(s, arrival: boot.adding(seconds: Double(sec))).rule
    }
    XCTAssertEqual(placed.map(\.room), ["kitchen"])
    XCTAssertEqual(placed.first?.t.micros, t0 + 2_000_000, "dated by arrival")
    // Away 30 s after the last arrival, on this clock: not before.
    XCTAssertEqual(judge.advance(to: boot.adding(seconds: 38.9)).rule, [])
    let away = judge.advance(to: boot.adding(seconds: 39.5)).rule
    XCTAssertEqual(
      away, [RoomChange(t: WallTime(micros: t0 + 39_000_000), beacon: keys, room: nil)])
  }

  func testAnAgentGoingOfflineCountsAtItsArrival() {
    let boot = MonotonicTime.zero
    var judge = RoomJudge(
      settings: .init(), clock: RoomClock(origin: .wall(WallTime(micros: t0), at: boot)),
      naive: true)
    for sec in 0..<10 {
      for (room, d, ahead) in [("kitchen", 1.0, 3600.0), ("living", 3.0, -600.0)] {
        let s = RoomSighting(
          t: WallTime(micros: t0 + Int64((Double(sec) + ahead) * 1e6)), beacon: keys, room: room,
          rssi: nil,
          distance: d, count: 1)
        _ = judge.sighting(s, arrival: boot.adding(seconds: Double(sec) + 0.1))
      }
    }
    XCTAssertEqual(judge.rule.room(of: keys), "kitchen")
    let moved = judge.agent("kitchen", online: false, at: boot.adding(seconds: 10))
    XCTAssertEqual(
      moved.rule, [RoomChange(t: WallTime(micros: t0 + 10_000_000), beacon: keys, room: "living")])
    XCTAssertEqual(moved.naive.map(\.room), ["living"])
  }

  /// A paced replay: `t` is capture time, the same on every agent, and
  /// sightings come `pace` times as fast; the axis starts at the first
  /// sighting's `t` and runs `pace` times the clock.
  func testAPacedReplayIsDatedInCaptureTime() {
    var clock = RoomClock(origin: .firstSighting, pace: 20)
    let boot = MonotonicTime(nanos: 42_000_000_000)
    XCTAssertNil(clock.time(at: boot))
    XCTAssertFalse(clock.isStarted)
    for sec in 0..<100 {
      let s = RoomSighting(
        t: WallTime(micros: t0 + Int64(sec) * 1_000_000), beacon: keys, room: "kitchen", rssi: nil,
        distance: 1,
        count: 1)
      let stamped = clock.stamp(s, arrival: boot.adding(seconds: Double(sec) / 20))
      XCTAssertLessThanOrEqual(abs(stamped.t.micros - s.t.micros), 1, "sighting \(sec)")
    }
    XCTAssertEqual(clock.time(at: boot.adding(seconds: 10))?.micros, t0 + 200_000_000)
  }

  /// Live, the axis is this machine's wall clock read once; a sighting's
  /// `t` shows only as its agent's skew.
  func testLiveSightingsAreDatedByArrivalAndTheirSkewShown() {
    let boot = MonotonicTime(nanos: 7_000_000_000)
    var clock = RoomClock(origin: .wall(WallTime(micros: t0), at: boot))
    let s = RoomSighting(
      t: WallTime(micros: t0 + 3_605_000_000), beacon: keys, room: "kitchen", rssi: nil,
      distance: 1, count: 1)
    let arrival = boot.adding(seconds: 5)
    XCTAssertEqual(clock.skew(of: s, arrival: arrival), 3600)
    XCTAssertEqual(clock.stamp(s, arrival: arrival).t, WallTime(micros: t0 + 5_000_000))
    // Never before its start, whatever the monotonic time says.
    XCTAssertEqual(clock.time(at: .zero)?.micros, t0)
  }
}
