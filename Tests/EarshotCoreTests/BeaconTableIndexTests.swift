import XCTest

@testable import EarshotCore

/// The beacon table's index (`PositionIndex`, open addressing over the
/// records' own ids) against a dictionary, through random arrivals and
/// forgetting: every beacon tracked is found at its record, and none that
/// was forgotten.
final class BeaconTableIndexTests: XCTestCase {
  private func key(_ n: Int) -> TrackKey {
    .beacon(
      TrackedID(uuid: BeaconUUID(high: 7, low: UInt64(n / 1000)), major: UInt16(n % 1000), minor: 1)
    )
  }

  func testEveryTrackedBeaconIsFoundAndNoForgottenOne() {
    var rng = SystemRandomNumberGenerator()
    for round in 0..<4 {
      var table = BeaconTable()
      var lastSeen: [TrackKey: Int64] = [:]
      var t: Int64 = 0
      for step in 0..<6_000 {
        t += 1_000
        let k = key(Int.random(in: 0..<(round == 0 ? 50 : 3_000), using: &rng))
        let at = table.observe(
          k, address: BDAddress(raw: UInt64(step)), rssi: -60, measuredPower: -59, at: t)
        XCTAssertEqual(table.withRecord(at: at) { $0.track.id }, k)
        lastSeen[k] = t
        if step % 500 == 499 {
          // Forget the older half (and keep one of them), as forgetting does.
          let horizon = t - 250_000
          let kept = lastSeen.keys.first { lastSeen[$0]! < horizon }
          table.forget(seenBefore: horizon, keep: kept.map { [$0] } ?? [])
          lastSeen = lastSeen.filter { $0.value >= horizon || $0.key == kept }
        }
      }
      XCTAssertEqual(table.count, lastSeen.count)
      for (k, _) in lastSeen {
        let p = table.position(of: k)
        XCTAssertNotNil(p, "\(k) lost")
        if let p { XCTAssertEqual(table.withRecord(at: p) { $0.track.id }, k) }
      }
      for n in 0..<3_000 where lastSeen[key(n)] == nil {
        XCTAssertNil(table.position(of: key(n)), "\(key(n)) was forgotten")
      }
    }
  }

  func testRemovalKeepsACollidingRunReachable() {
    // Ids in one small table collide often: removing from the middle of a
    // probe run must leave the later ones findable.
    var table = BeaconTable()
    for n in 0..<12 {
      table.observe(key(n), address: BDAddress(raw: 1), rssi: nil, measuredPower: -59, at: Int64(n))
    }
    table.forget(seenBefore: 6, keep: [])
    XCTAssertEqual(table.count, 6)
    for n in 0..<12 { XCTAssertEqual(table.position(of: key(n)) != nil, n >= 6, "\(n)") }
  }

  func testDevicePositionsAreTheDeviceRecordsThroughForgetting() {
    // Beacons and devices mixed, forgotten in random halves: the list a
    // device region ranges from is exactly where the device records are.
    func device(_ n: Int) -> TrackKey {
      .device(DeviceIdentity(address: BDAddress(raw: 0xC000_0000_0000 | UInt64(n)), irk: nil))
    }
    var rng = SystemRandomNumberGenerator()
    var table = BeaconTable()
    var t: Int64 = 0
    for step in 0..<4_000 {
      t += 1_000
      let n = Int.random(in: 0..<600, using: &rng)
      let k = n % 5 == 0 ? device(n) : key(n)
      table.observe(k, address: BDAddress(raw: UInt64(step)), rssi: -60, measuredPower: -59, at: t)
      if step % 300 == 299 {
        table.forget(seenBefore: t - Int64.random(in: 50_000...250_000, using: &rng), keep: [])
      }
      if step % 100 == 99 {
        var expected: [Int32] = []
        for p in 0..<table.count {
          if case .device = table.withRecord(at: p, { $0.track.id }) { expected.append(Int32(p)) }
        }
        XCTAssertEqual(table.devicePositions.sorted(), expected, "step \(step)")
      }
    }
    XCTAssertFalse(table.devicePositions.isEmpty)
  }
  func testAStaleHintNeverFindsAnothersRecord() {
    // Each key's last position kept as the hint, as the monitor keeps a
    // device's; forgetting moves records under the hints. Every report
    // must land in its own key's record, and the table must hold one
    // record per key (a hint taken at face value would update another's
    // record, or the index's lookup skipped would add a second).
    var rng = SystemRandomNumberGenerator()
    var table = BeaconTable()
    var hints: [TrackKey: Int] = [:]
    var reports: [TrackKey: Int] = [:]
    var t: Int64 = 0
    for step in 0..<5_000 {
      t += 1_000
      let k = key(Int.random(in: 0..<300, using: &rng))
      // Now and then a hint past the end or at a random record.
      let hint =
        step % 97 == 0
        ? table.count + 3
        : step % 89 == 0 ? Int.random(in: 0..<max(table.count, 1), using: &rng) : hints[k]
      let at = table.observe(
        k, address: BDAddress(raw: UInt64(step)), rssi: -60, measuredPower: -59, at: t, hint: hint)
      XCTAssertEqual(table.withRecord(at: at) { $0.track.id }, k, "step \(step)")
      XCTAssertEqual(table.position(of: k), at, "step \(step)")
      hints[k] = at
      reports[k, default: 0] += 1
      if step % 400 == 399 {
        let horizon = t - Int64.random(in: 50_000...200_000, using: &rng)
        table.forget(seenBefore: horizon, keep: [])
        reports = reports.filter { table.position(of: $0.key) != nil }
      }
    }
    XCTAssertEqual(table.count, reports.count)
    XCTAssertGreaterThan(table.count, 50)
  }
}
