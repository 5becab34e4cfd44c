import XCTest

@testable import EarshotCore

/// The house simulator's pure core: geometry, propagation, randomness and
/// the ground truth.
final class HouseTests: XCTestCase {
  let uuid = BeaconUUID(high: 0x8F2C_1A3E_5B7D_4E90, low: 0xA1C2_3D4E_5F60_7182)

  /// living | kitchen side by side, a hall across the top, a bedroom above.
  func house() -> House {
    var h = House()
    h.duration = .seconds(600)
    h.rooms = [
      HouseRoom(name: "living", min: FloorPoint(0, 0), max: FloorPoint(5, 4)),
      HouseRoom(name: "kitchen", min: FloorPoint(5, 0), max: FloorPoint(9, 4)),
      HouseRoom(name: "hall", min: FloorPoint(0, 4), max: FloorPoint(9, 5.5)),
      HouseRoom(name: "bedroom", min: FloorPoint(0, 5.5), max: FloorPoint(6, 9.5)),
    ]
    h.receivers = [
      HouseReceiver(name: "living", position: FloorPoint(1.5, 2)),
      HouseReceiver(name: "kitchen", position: FloorPoint(8, 2.5)),
    ]
    return h
  }

  func beacon(_ name: String, minor: UInt16, at p: FloorPoint) -> HouseBeacon {
    HouseBeacon(name: name, id: TrackedID(uuid: uuid, major: 1, minor: minor), at: p)
  }

  func collect(_ h: House) -> [House.Report] {
    var out: [House.Report] = []
    h.reports { out.append($0) }
    return out
  }

  // MARK: Geometry

  func testWallsCrossedCountSharedWallsOnce() {
    let h = house()
    // Same room.
    XCTAssertEqual(h.walls(from: FloorPoint(1, 1), to: FloorPoint(4, 3)), 0)
    // Living to kitchen: the shared wall is two rooms' edges but one wall.
    XCTAssertEqual(h.walls(from: FloorPoint(1.5, 2), to: FloorPoint(8, 2.5)), 1)
    // Living to bedroom through the hall: two walls.
    XCTAssertEqual(h.walls(from: FloorPoint(2, 2), to: FloorPoint(2, 8)), 2)
    // Kitchen to bedroom, diagonally: kitchen/hall and hall/bedroom.
    XCTAssertEqual(h.walls(from: FloorPoint(8, 1), to: FloorPoint(3, 8)), 2)
    // From outside the house: the outer wall.
    XCTAssertEqual(h.walls(from: FloorPoint(-3, 2), to: FloorPoint(1.5, 2)), 1)
    // Symmetric.
    XCTAssertEqual(
      h.walls(from: FloorPoint(8, 1), to: FloorPoint(3, 8)),
      h.walls(from: FloorPoint(3, 8), to: FloorPoint(8, 1)))
    // Standing on a wall is not crossing it.
    XCTAssertEqual(h.walls(from: FloorPoint(5, 2), to: FloorPoint(8, 2)), 0)
    // Through the corner where living, kitchen and hall meet: one crossing point.
    XCTAssertEqual(h.walls(from: FloorPoint(4, 3), to: FloorPoint(6, 5)), 1)
  }

  func testRoomOfAPoint() {
    let h = house()
    XCTAssertEqual(h.room(at: FloorPoint(1, 1)), "living")
    XCTAssertEqual(h.room(at: FloorPoint(5.5, 2)), "kitchen")
    XCTAssertEqual(h.room(at: FloorPoint(7, 4.75)), "hall")
    XCTAssertEqual(h.room(at: FloorPoint(3, 8)), "bedroom")
    // The garden, and the empty corner beside the bedroom.
    XCTAssertNil(h.room(at: FloorPoint(-1, 1)))
    XCTAssertNil(h.room(at: FloorPoint(8, 8)))
  }

  func testMeanRSSIFollowsPathLossWallsAndBias() {
    var h = house()
    h.exponent = 2.5
    h.wallLoss = 6
    var r = h.receivers[1]
    r.bias = -5
    // Kitchen receiver at (8, 2.5); the beacon 2 m away in the same room.
    XCTAssertEqual(
      h.meanRSSI(beaconPower: -59, at: FloorPoint(6, 2.5), receiver: r),
      -59 - 25 * log10(2.0) - 5, accuracy: 1e-9)
    // 4 m away, one wall between.
    XCTAssertEqual(
      h.meanRSSI(beaconPower: -59, at: FloorPoint(4, 2.5), receiver: r),
      -59 - 25 * log10(4.0) - 6 - 5, accuracy: 1e-9)
  }

  // MARK: Reports

  func testDeterministicForASeedAndIndependentPerReceiver() {
    var h = house()
    h.shadowing = 4
    h.shadowingTime = 2
    h.receivers[0].loss = 0.3
    h.receivers[1].loss = 0.3
    var walker = beacon("walker", minor: 1, at: FloorPoint(2, 2))
    walker.path = [(0, FloorPoint(2, 2)), (100, FloorPoint(7, 2)), (300, FloorPoint(3, 8))]
    h.beacons = [walker, beacon("keys", minor: 2, at: FloorPoint(5.5, 2))]
    let a = collect(h)
    XCTAssertEqual(a, collect(h))
    XCTAssertGreaterThan(a.count, 1000)
    // In time order.
    XCTAssertEqual(a.map(\.t), a.map(\.t).sorted())
    var other = h
    other.seed = 2
    XCTAssertNotEqual(a, collect(other))
    // A third receiver leaves the first two's reports as they were.
    var more = h
    more.receivers.append(HouseReceiver(name: "bedroom", position: FloorPoint(3, 8.5)))
    let b = collect(more)
    XCTAssertEqual(a, b.filter { $0.receiver < 2 })
    XCTAssertFalse(b.filter { $0.receiver == 2 }.isEmpty)
  }

  func testLossShadowingAndBiasAsSpecified() {
    var h = house()
    h.duration = .seconds(5_000)
    h.exponent = 2
    h.shadowing = 4
    h.receivers[0].loss = 0.3
    h.receivers[0].bias = 5
    h.receivers[1].loss = 0
    h.receivers[1].bias = -5
    h.beacons = [beacon("keys", minor: 2, at: FloorPoint(5.5, 2))]
    let reports = collect(h)
    for (j, r) in h.receivers.enumerated() {
      let mine = reports.filter { $0.receiver == j }.map { Double($0.rssi) }
      let expected = 1 - r.loss
      XCTAssertEqual(Double(mine.count) / 5_000, expected, accuracy: 0.025, r.name)
      let truth = h.meanRSSI(beaconPower: -59, at: FloorPoint(5.5, 2), receiver: r)
      let mean = mine.reduce(0, +) / Double(mine.count)
      let sd = (mine.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(mine.count))
        .squareRoot()
      XCTAssertEqual(mean, truth, accuracy: 0.25, r.name)
      // Rounding to whole dB adds 1/12 dB² of variance.
      XCTAssertEqual(sd, (16 + 1.0 / 12).squareRoot(), accuracy: 0.15, r.name)
    }
    // The bias difference shows in the readings (the geometry differs too).
    let gap =
      h.meanRSSI(beaconPower: -59, at: FloorPoint(5.5, 2), receiver: h.receivers[0])
      - h.meanRSSI(beaconPower: -59, at: FloorPoint(5.5, 2), receiver: h.receivers[1])
    var unbiased = h
    unbiased.receivers[0].bias = 0
    unbiased.receivers[1].bias = 0
    let rawGap =
      unbiased.meanRSSI(beaconPower: -59, at: FloorPoint(5.5, 2), receiver: unbiased.receivers[0])
      - unbiased.meanRSSI(
        beaconPower: -59, at: FloorPoint(5.5, 2), receiver: unbiased.receivers[1])
    XCTAssertEqual(gap - rawGap, 10, accuracy: 1e-9)
  }

  func testShadowingCorrelationTime() {
    var h = house()
    h.duration = .seconds(5_000)
    h.shadowing = 4
    h.shadowingTime = 5
    h.beacons = [beacon("keys", minor: 2, at: FloorPoint(2, 2))]
    h.receivers = [h.receivers[0]]
    let x = collect(h).map { Double($0.rssi) }
    let mean = x.reduce(0, +) / Double(x.count)
    let d = x.map { $0 - mean }
    let variance = d.map { $0 * $0 }.reduce(0, +)
    let lag1 = zip(d, d.dropFirst()).map { $0 * $1 }.reduce(0, +) / variance
    // One advertisement a second: exp(-1/5) = 0.82 (a little less with rounding).
    XCTAssertEqual(lag1, exp(-1.0 / 5), accuracy: 0.04)
    // Without a correlation time, successive advertisements are independent.
    h.shadowingTime = 0
    let y = collect(h).map { Double($0.rssi) }
    let my = y.reduce(0, +) / Double(y.count)
    let e = y.map { $0 - my }
    let lag1y = zip(e, e.dropFirst()).map { $0 * $1 }.reduce(0, +) / e.map { $0 * $0 }.reduce(0, +)
    XCTAssertEqual(lag1y, 0, accuracy: 0.05)
  }

  func testFastFadingOnTopOfSlowShadowing() {
    var h = house()
    h.duration = .seconds(20_000)
    h.shadowing = 4
    h.shadowingTime = 30
    h.beacons = [beacon("keys", minor: 2, at: FloorPoint(2, 2))]
    h.receivers = [h.receivers[0]]
    let slow = collect(h).map { Double($0.rssi) }
    h.fading = 3
    let x = collect(h).map { Double($0.rssi) }
    XCTAssertEqual(x.count, slow.count, "no loss: every advertisement heard")
    let mean = x.reduce(0, +) / Double(x.count)
    let d = x.map { $0 - mean }
    let variance = d.map { $0 * $0 }.reduce(0, +) / Double(d.count)
    // Both add up: 16 + 9 dB² (and 1/12 of rounding).
    XCTAssertEqual(variance, 25 + 1.0 / 12, accuracy: 2.5)
    // One advertisement to the next: the slow part stays (16 e^(-1/30)),
    // the fast part does not.
    let lag1 = zip(d, d.dropFirst()).map { $0 * $1 }.reduce(0, +) / Double(d.count) / variance
    XCTAssertEqual(lag1, 16 * exp(-1.0 / 30) / 25, accuracy: 0.05)
    // Without it the reports are those of before, byte for byte: houses
    // written before `fading` keep their captures.
    h.fading = 0
    XCTAssertEqual(collect(h).map { Double($0.rssi) }, slow)
  }

  func testFadingIsReadFromTheSpec() throws {
    func spec(fading: String) -> ConfigDocument {
      var doc = ConfigDocument(file: "t.spec")
      doc.headers = [
        SectionHeader(name: "house", line: 1), SectionHeader(name: "receiver \"r\"", line: 3),
      ]
      doc.entries = [
        ConfigEntry(section: "house", key: "fading", value: fading, line: 2),
        ConfigEntry(section: "receiver \"r\"", key: "position", value: "1 1", line: 4),
      ]
      return doc
    }
    XCTAssertEqual(try House.build(spec(fading: "2.5")).fading, 2.5)
    XCTAssertThrowsError(try House.build(spec(fading: "40")))
  }

  func testAbsentOrInaudibleBeaconsAreNotHeard() {
    var h = house()
    h.duration = .seconds(100)
    var away = beacon("away", minor: 1, at: FloorPoint(2, 2))
    away.present = [10..<20, 50..<60]
    // Far out in the street: under the sensitivity.
    let street = beacon("street", minor: 2, at: FloorPoint(-400, 2))
    h.beacons = [away, street]
    let reports = collect(h)
    XCTAssertTrue(reports.allSatisfy { $0.beacon == 0 })
    XCTAssertTrue(
      reports.allSatisfy { r in
        let t = Double(r.t.micros - h.start.micros) / 1e6
        return (10..<20).contains(t) || (50..<60).contains(t)
      })
    XCTAssertEqual(reports.count, 40)
  }

  // MARK: Truth

  func testTruthFollowsTheWalkAndPresence() {
    var h = house()
    var walker = beacon("walker", minor: 1, at: FloorPoint(2.5, 2))
    // Through the living/kitchen wall at x = 5: 10 + 10 * 2.5 / 4.5 s.
    walker.path = [(10, FloorPoint(2.5, 2)), (20, FloorPoint(7, 2)), (100, FloorPoint(7, 2))]
    walker.present = [0..<300, 400..<600]
    h.beacons = [walker, beacon("keys", minor: 2, at: FloorPoint(5.5, 2))]
    let truth = h.truth()
    XCTAssertEqual(
      truth,
      [
        .init(t: 0, beacon: 0, room: "living"),
        .init(t: 0, beacon: 1, room: "kitchen"),
        .init(t: 15.556, beacon: 0, room: "kitchen"),
        .init(t: 300, beacon: 0, room: nil),
        .init(t: 400, beacon: 0, room: "kitchen"),
      ])
    XCTAssertEqual(House.room(in: truth, beacon: 0, at: 15), "living")
    XCTAssertEqual(House.room(in: truth, beacon: 0, at: 16), "kitchen")
    XCTAssertNil(House.room(in: truth, beacon: 0, at: 350))
    XCTAssertEqual(House.room(in: truth, beacon: 1, at: 599), "kitchen")
  }

  func testTruthThroughAShortHallAndOutside() {
    var h = house()
    var walker = beacon("walker", minor: 1, at: FloorPoint(2, 2))
    // Up through the hall (y 4 to 5.5) into the bedroom, then out of the
    // house across the bedroom's top wall (y = 9.5).
    walker.path = [(0, FloorPoint(2, 2)), (10, FloorPoint(2, 8)), (20, FloorPoint(2, 12))]
    h.beacons = [walker]
    let truth = h.truth().map { ($0.t, $0.room) }
    XCTAssertEqual(truth.map(\.1), ["living", "hall", "bedroom", nil])
    XCTAssertEqual(truth[1].0, 10 * 2 / 6.0, accuracy: 0.0011)
    XCTAssertEqual(truth[2].0, 10 * 3.5 / 6.0, accuracy: 0.0011)
    XCTAssertEqual(truth[3].0, 10 + 10 * 1.5 / 4.0, accuracy: 0.0011)
  }

  func testTruthOfAStillBeaconOverAMonthIsItsPresenceEdges() {
    var h = house()
    h.duration = .seconds(30 * 86_400)
    var keys = beacon("keys", minor: 2, at: FloorPoint(5.5, 2))
    keys.present = [0..<86_400, 172_800..<2_000_000]
    h.beacons = [keys]
    XCTAssertEqual(
      h.truth(),
      [
        .init(t: 0, beacon: 0, room: "kitchen"), .init(t: 86_400, beacon: 0, room: nil),
        .init(t: 172_800, beacon: 0, room: "kitchen"), .init(t: 2_000_000, beacon: 0, room: nil),
      ])
  }

  // MARK: Captures

  func testCaptureStartsAtTheHouseStartAndHoldsEveryReport() throws {
    var h = house()
    h.duration = .seconds(60)
    h.receivers[0].loss = 0.3
    h.beacons = [beacon("keys", minor: 2, at: FloorPoint(5.5, 2))]
    var bytes = HouseCapture.header(h)
    let mine = collect(h).filter { $0.receiver == 0 }
    for r in mine { bytes += HouseCapture.record(h, r) }
    var replay = CaptureReplay()
    var events: [Int64] = []
    var seen: [(Int64, Int8?)] = []
    try bytes.withUnsafeBytes { buf in
      try replay.run(
        buf, report: { t, r in seen.append((t, r.rssi)) }, event: { t, _ in events.append(t) })
    }
    XCTAssertEqual(events.first, h.start.micros)
    XCTAssertEqual(seen.map(\.0), mine.map(\.t.micros))
    XCTAssertEqual(seen.map(\.1), mine.map(\.rssi))
    XCTAssertEqual(replay.decoder.stats.malformedEvents, 0)
  }

  func testTruthLinesFormat() {
    var h = house()
    h.duration = .seconds(10)
    h.beacons = [beacon("keys", minor: 2, at: FloorPoint(5.5, 2))]
    XCTAssertEqual(
      HouseCapture.truthLines(h),
      [
        #"{"t":1767225600.000000,"beacon":"8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182:1:2","name":"keys","room":"kitchen"}"#
      ])
  }
}
