import XCTest

@testable import EarshotCore

/// The room rule under fading that lasts longer than its window (issue 28):
/// synthetic sightings whose path loss per link drifts as a first-order
/// autoregressive process, in message time. Properties, over several seeds.
final class RoomFadingTests: XCTestCase {
  let tag = TrackedID(uuid: testUUID, major: 1, minor: 20)

  /// One link's fade: standard deviation `sigma` dB, correlation time `tau` s.
  struct Fade {
    var rng: SplitMix
    var value: Double
    let sigma: Double
    let tau: Double
    init(seed: UInt64, sigma: Double, tau: Double) {
      rng = SplitMix(seed: seed)
      self.sigma = sigma
      self.tau = tau
      value = sigma * rng.gaussian()
    }
    /// One second later.
    mutating func step() -> Double {
      let rho = exp(-1 / tau)
      value = rho * value + (1 - rho * rho).squareRoot() * sigma * rng.gaussian()
      return value
    }
  }

  /// Two rooms; `loss(sec)` gives each room's mean path loss in dB at that
  /// second. One sighting per room per second, 40 % of them lost, distances
  /// from dB with the rule's exponent (2). Returns the rule's changes.
  func run(
    seconds: Int, seed: UInt64, sigma: Double, tau: Double, settings: RoomRule.Settings = .init(),
    loss: (Int) -> (kitchen: Double, living: Double)
  ) -> [RoomChange] {
    var rule = RoomRule(settings: settings)
    var fades = [
      Fade(seed: seed &* 3 &+ 1, sigma: sigma, tau: tau),
      Fade(seed: seed &* 3 &+ 2, sigma: sigma, tau: tau),
    ]
    var drop = SplitMix(seed: seed &* 3 &+ 3)
    var out: [RoomChange] = []
    for sec in 0..<seconds {
      let mean = loss(sec)
      for (k, room) in ["kitchen", "living"].enumerated() {
        let db = (k == 0 ? mean.kitchen : mean.living) + fades[k].step()
        guard drop.unit() >= 0.4 else { continue }
        let t = Int64(sec) * 1_000_000 + Int64(k) * 400_000
        out += rule.sighting(
          RoomSighting(
            t: WallTime(micros: t), beacon: tag, room: room, rssi: nil, distance: pow(10, db / 20),
            count: 1))
      }
    }
    return out
  }

  /// Changes after the first placement.
  func moves(_ changes: [RoomChange]) -> Int { max(0, changes.count - 1) }

  func testABeaconAtAWallHoldsStillUnderSlowFading() {
    // Kitchen 6 dB closer on average (a wall and a metre); each link fades
    // 4 dB over 20 s, the house-fading-a kind: two hours, five seeds.
    var changes: [Int] = []
    var before: [Int] = []
    var old = RoomRule.Settings()
    old.confidence = 0
    old.quickWindow = 0
    for seed in UInt64(1)...5 {
      let c = run(seconds: 7200, seed: seed, sigma: 4, tau: 20) { _ in (14, 20) }
      changes.append(moves(c))
      XCTAssertEqual(c.last?.room, "kitchen", "seed \(seed)")
      before.append(
        moves(run(seconds: 7200, seed: seed, sigma: 4, tau: 20, settings: old) { _ in (14, 20) }))
    }
    // The goal, at most one change an hour, over the ten hours (corrections
    // of a first placement made during a fade count too).
    XCTAssertLessThanOrEqual(changes.reduce(0, +), 10, "per seed: \(changes)")
    // The fixed window and margin alone flap (that is what this is about).
    XCTAssertGreaterThan(before.reduce(0, +), 10 * 5, "per seed: \(before)")
  }

  func testABeaconAtAWallHoldsStillUnderFastFading() {
    for seed in UInt64(1)...5 {
      let c = run(seconds: 7200, seed: seed, sigma: 4, tau: 1) { _ in (14, 20) }
      // At most the correction of a first placement.
      XCTAssertLessThanOrEqual(moves(c), 1, "seed \(seed): \(c)")
      XCTAssertEqual(c.last?.room, "kitchen", "seed \(seed)")
    }
  }

  func testAWalkersMovesAreStillFoundQuicklyUnderSlowFading() {
    // Five minutes in each room in turn: 15 dB better in the room it is
    // in, the change over 4 s of walking from each turn's start.
    var latencies: [Double] = []
    for seed in UInt64(1)...5 {
      let c = run(seconds: 3600, seed: seed, sigma: 4, tau: 20) { sec in
        let turn = sec / 300
        let f = min(1, Double(sec % 300) / 4)
        let towardsLiving = turn % 2 == 1 ? f : 1 - f
        let lead = turn == 0 ? -15 : -15 + 30 * towardsLiving
        return (10 + max(0, lead), 10 + max(0, -lead))
      }
      for turn in 1..<12 {
        let start = Int64(turn * 300) * 1_000_000
        let room = turn % 2 == 1 ? "living" : "kitchen"
        guard let hit = c.first(where: { $0.t.micros >= start && $0.room == room }),
          hit.t.micros < start + 300_000_000
        else {
          XCTFail("seed \(seed): the move at \(turn * 300) s was never found")
          continue
        }
        latencies.append(Double(hit.t.micros - start) / 1e6)
      }
      XCTAssertEqual(moves(c), 11, "seed \(seed): no change but the moves")
    }
    let sorted = latencies.sorted()
    XCTAssertEqual(sorted.count, 55)
    XCTAssertLessThanOrEqual(sorted[sorted.count / 2], 8, "median of \(sorted)")
    // A fade against the new room just after the move can hold it back until
    // the fade passes (the rule then needs its full lead): rarely.
    XCTAssertGreaterThanOrEqual(
      sorted.filter { $0 <= 15 }.count, sorted.count * 9 / 10, "\(sorted)")
    XCTAssertLessThanOrEqual(sorted.last ?? 999, 120, "\(sorted)")
  }

  func testAStayElsewhereNotYetRecognisedDoesNotTeachTheSpreads() {
    // Ten minutes in the kitchen (5 dB nearer than the living room), then
    // ten in the living room (5 dB nearer there): under 3 dB of fading over
    // 6 s a swing the rule cannot tell from a fade at once. Each link then
    // sits some dB from its settled level for minutes; learnt, that widens
    // its spread and hides this move and the next. Without learning it,
    // the settled levels find the move in more hours.
    func stay(_ settings: RoomRule.Settings, seed: UInt64) -> (room: String?, spreads: [Double]) {
      var rule = RoomRule(settings: settings)
      var fades = [
        Fade(seed: seed &* 7 &+ 1, sigma: 3, tau: 6), Fade(seed: seed &* 7 &+ 2, sigma: 3, tau: 6),
      ]
      var drop = SplitMix(seed: seed &* 7 &+ 3)
      for sec in 0..<1200 {
        for (k, room) in ["kitchen", "living"].enumerated() {
          let near = (k == 1) == (sec >= 600)
          let db = (near ? 10.0 : 15.0) + fades[k].step()
          guard drop.unit() >= 0.4 else { continue }
          let t = Int64(sec) * 1_000_000 + Int64(k) * 400_000
          _ = rule.sighting(
            RoomSighting(
              t: WallTime(micros: t), beacon: tag, room: room, rssi: nil,
              distance: pow(10, db / 20), count: 1))
        }
      }
      let spreads = ["kitchen", "living"].map { rule.spread(of: .beacon(tag), room: $0) ?? 0 }
      return (rule.room(of: tag), spreads)
    }
    var unguarded = RoomRule.Settings()
    unguarded.doubtAfter = .infinity
    var found = (guarded: 0, taught: 0)
    var compared = 0
    for seed in UInt64(1)...8 {
      let guarded = stay(RoomRule.Settings(), seed: seed)
      let taught = stay(unguarded, seed: seed)
      if guarded.room == "living" { found.guarded += 1 }
      if taught.room == "living" { found.taught += 1 }
      guard guarded.room == "kitchen", taught.room == "kitchen" else { continue }
      // Still in the kitchen either way: the spreads learnt during the stay.
      compared += 1
      for k in 0..<2 {
        XCTAssertLessThan(guarded.spreads[k], taught.spreads[k], "seed \(seed), link \(k)")
      }
    }
    XCTAssertGreaterThanOrEqual(compared, 3)
    XCTAssertGreaterThanOrEqual(found.guarded, found.taught + 2, "\(found)")
  }

  func testAMoveIsFoundWhenTheRoomLeftStrayedFarWithinIt() {
    // Ten minutes in the kitchen drifting to and from its receiver (0 to
    // 24 dB, over 100 s: a link whose window means stray 8-9 dB), heard
    // through a thick wall from the living room at a steady 34 dB; then
    // the move: 32 and 20 dB. The kitchen link alone strays 2.5 of its
    // deviations, the living one 9 of its own: a move beyond doubt, which
    // the two spreads added (9 dB) would hide for minutes.
    for seed in UInt64(1)...5 {
      var rule = RoomRule(settings: .init())
      var kitchen = Fade(seed: seed &* 5 &+ 1, sigma: 1, tau: 2)
      var living = Fade(seed: seed &* 5 &+ 2, sigma: 1.5, tau: 30)
      var heard = SplitMix(seed: seed &* 5 &+ 3)
      var changes: [RoomChange] = []
      for sec in 0..<900 {
        let drift = 12 - 12 * cos(2 * Double.pi * Double(sec) / 100)
        let db = sec < 600 ? (drift, 34.0) : (32.0, 20.0)
        for (k, room) in ["kitchen", "living"].enumerated() {
          let loss = k == 0 ? db.0 + kitchen.step() : db.1 + living.step()
          guard heard.unit() >= 0.4 else { continue }
          let t = Int64(sec) * 1_000_000 + Int64(k) * 400_000
          changes += rule.sighting(
            RoomSighting(
              t: WallTime(micros: t), beacon: tag, room: room, rssi: nil,
              distance: pow(10, loss / 20), count: 1))
        }
      }
      XCTAssertEqual(changes.map(\.room), ["kitchen", "living"], "seed \(seed)")
      if let moved = changes.last, moved.room == "living" {
        XCTAssertLessThanOrEqual(Double(moved.t.micros) / 1e6 - 600, 15, "seed \(seed)")
      }
    }
  }

  func testTheMoveScoreIsTheGrowthOverBothSpreadsWhenTheyAreAlike() {
    // Equal spreads: the growth over the two spreads added (the rule before).
    let equal = RoomRule.moveScore(drop: 12, rise: 8, spreadLeft: 16, spreadEntered: 16)
    XCTAssertEqual(equal, 20 / (16.0 + 16).squareRoot(), accuracy: 1e-12)
    // A quiet link's rise counts in its own deviations, not the noisy one's.
    let mixed = RoomRule.moveScore(drop: 20, rise: 14, spreadLeft: 72, spreadEntered: 2.25)
    XCTAssertGreaterThan(mixed, 4.5)
    XCTAssertLessThan(34 / (72 + 2.25).squareRoot(), 4.5)
    XCTAssertTrue(RoomRule.moveScore(drop: 0, rise: 0, spreadLeft: 0, spreadEntered: 0).isFinite)
  }

  func testABeaconRestoredToTheWrongRoomGoesBackAndStays() {
    // Restored (or placed during a fade) in the living room, though the
    // kitchen is 6 dB closer: the settled levels take it back within
    // minutes, and it stays.
    for seed in UInt64(1)...5 {
      var settings = RoomRule.Settings()
      settings.placeAfter = 0
      var restored = RoomRule(settings: settings)
      restored.restore(.beacon(tag), room: "living")
      var fades = [
        Fade(seed: seed &* 5 &+ 1, sigma: 4, tau: 20),
        Fade(seed: seed &* 5 &+ 2, sigma: 4, tau: 20),
      ]
      var changes: [RoomChange] = []
      for sec in 0..<7200 {
        for (k, room) in ["kitchen", "living"].enumerated() {
          let db = (k == 0 ? 14.0 : 20.0) + fades[k].step()
          let t = Int64(sec) * 1_000_000 + Int64(k) * 400_000
          changes += restored.sighting(
            RoomSighting(
              t: WallTime(micros: t), beacon: tag, room: room, rssi: nil,
              distance: pow(10, db / 20), count: 1))
        }
      }
      let back = changes.first { $0.room == "kitchen" }
      XCTAssertNotNil(back, "seed \(seed)")
      XCTAssertLessThan(back?.t.micros ?? .max, 600_000_000, "seed \(seed): \(changes)")
      XCTAssertLessThanOrEqual(changes.count, 3, "seed \(seed): \(changes)")
      XCTAssertEqual(changes.last?.room, "kitchen", "seed \(seed)")
    }
  }

  func testASpreadIsLearntFromTheLinkItself() {
    // A steady link strays by nothing; one fading slowly (4 dB, τ 20 s)
    // by about its whole depth, 16 dB², whatever the window averages.
    var steady = RoomRule.Spread()
    var fading = RoomRule.Spread()
    var fade = Fade(seed: 7, sigma: 4, tau: 20)
    for _ in 0..<3600 {
      steady.learn(0, dt: 1)
      fading.learn(Float(fade.step()), dt: 1)
    }
    XCTAssertEqual(steady.value, 0)
    XCTAssertGreaterThan(fading.value, 9)
    XCTAssertLessThan(fading.value, 25)
    // Until half a minute is learnt the prior (a link is thought to stray
    // 3 dB) counts for the seconds still missing: a new link does not start
    // out sure of itself, nor does its first stray count as its whole spread.
    var new = RoomRule.Spread()
    XCTAssertEqual(new.value, 9)
    for _ in 0..<10 { new.learn(0, dt: 1) }
    XCTAssertEqual(new.value, 6, accuracy: 1e-6)
    var first = RoomRule.Spread()
    first.learn(8, dt: 1)
    XCTAssertEqual(first.value, (64 + 29 * 9) / 30, accuracy: 1e-4)
    // A first stray beyond 2.5 times 4 dB is a move even before any is
    // learnt (the walk in that preceded the first placement): skipped.
    var walkIn = RoomRule.Spread()
    for _ in 0..<20 { walkIn.learn(15, dt: 1) }
    XCTAssertEqual(walkIn.value, 9)
  }

  func testAMoveTheRuleMissedDoesNotWidenTheSpread() {
    // A link 20 dB off its settled level for minutes (a move not yet seen)
    // teaches nothing: a spread widened by it would hide the move for good.
    var spread = RoomRule.Spread()
    var fade = Fade(seed: 3, sigma: 2, tau: 5)
    for _ in 0..<600 { spread.learn(Float(fade.step()), dt: 1) }
    let before = spread.value
    for _ in 0..<300 { spread.learn(20 + Float(fade.step()), dt: 1) }
    XCTAssertEqual(spread.value, before)
    // A fade under 10 dB is always learnt, however calm the link was.
    var calm = RoomRule.Spread()
    for _ in 0..<600 { calm.learn(0.1, dt: 1) }
    calm.learn(9, dt: 1)
    XCTAssertGreaterThan(calm.value, 0.1)
  }

  func testASettledLevelStartsAgainAfterAMoveAndTakesInAFade() {
    var level = RoomRule.SettledLevel()
    XCTAssertNil(level.value)
    for sec in 0..<300 {
      level.add(sec % 2 == 0 ? 9 : 11, at: Int64(sec) * 1_000_000, pending: false)
    }
    XCTAssertEqual(level.value ?? 0, 10, accuracy: 0.2)
    XCTAssertEqual(level.age(at: 300_000_000), 300, accuracy: 0.01)
    // A room change at 300 s: the means after it are kept apart.
    var moved = level
    for sec in 300..<360 { moved.add(30, at: Int64(sec) * 1_000_000, pending: true) }
    XCTAssertEqual(moved.value ?? 0, 10, accuracy: 0.2)
    var faded = moved
    // A move: the level is the means since the change.
    moved.restart(since: 300_000_000, at: 360_000_000)
    XCTAssertEqual(moved.value, 30)
    XCTAssertEqual(moved.age(at: 360_000_000), 60, accuracy: 0.01)
    // A fade: its minute joins the five before it (one sixth of the weight).
    faded.join(since: 300_000_000, at: 360_000_000)
    XCTAssertEqual(faded.value ?? 0, 10 + 20.0 / 6, accuracy: 0.3)
    XCTAssertEqual(faded.age(at: 360_000_000), 360, accuracy: 0.01)
  }

  func testABeaconBackInTheRoomItLeftCannotWalkOnOnTheMargin() {
    // Three rooms, the kitchen 12 dB closer than the others and steady; the
    // other links stray 5 dB a second. A living-room fade 8 dB ahead wins
    // for 20 s, then the beacon is back in the kitchen. A bedroom fade that
    // leads the kitchen by 4 dB, more than the margin but less than the
    // rule's confidence (three of its learnt 2.2 dB), follows: the change to the living room was a fade, judged when the
    // beacon came back, so the bedroom must win as any challenger does (a
    // beacon walking on through a room needs the margin only).
    for seed in UInt64(1)...5 {
      var settings = RoomRule.Settings()
      settings.placeAfter = 0
      var rule = RoomRule(settings: settings)
      var noise = SplitMix(seed: seed)
      var changes: [RoomChange] = []
      for sec in 0..<300 {
        let kitchen = sec % 2 == 0 ? 9.75 : 10.25
        let living = (180..<200).contains(sec) ? 2.0 : 22 + 5 * noise.gaussian()
        let bedroom = (215..<260).contains(sec) ? 6.0 : 22 + 5 * noise.gaussian()
        for (k, (room, db)) in [("kitchen", kitchen), ("living", living), ("bedroom", bedroom)]
          .enumerated()
        {
          let t = Int64(sec) * 1_000_000 + Int64(k) * 300_000
          changes += rule.sighting(
            RoomSighting(
              t: WallTime(micros: t), beacon: tag, room: room, rssi: nil,
              distance: pow(10, db / 20), count: 1))
        }
      }
      XCTAssertEqual(
        changes.map { $0.room }, ["kitchen", "living", "kitchen"], "seed \(seed): \(changes)")
    }
  }
}
