import XCTest

@testable import EarshotCore

/// `TrackedKind`'s table and what every place that names a tracked thing
/// derives from it: for every row, the written forms read back, a match of
/// the id's leading fields matches it and no id one byte away, and the
/// simulators' frame decodes to the same id.
final class TrackedKindTests: XCTestCase {
  /// The built-in rows. (User layouts' kinds, which other tests register
  /// in this process, are LayoutKindTests' subject.)
  let builtIn = TrackedKind.table.indices.map { TrackedKind(code: UInt8($0)) }

  func testRowsAreConsistent() {
    var names: Set<String> = []
    for kind in builtIn {
      let row = kind.row
      XCTAssertTrue(names.insert(row.name).inserted, "\(row.name) named twice")
      XCTAssertEqual(row.name, row.name.lowercased())
      XCTAssertFalse(row.fields.isEmpty, row.name)
      XCTAssertLessThanOrEqual(row.size, TrackedID.capacity, row.name)
      XCTAssertEqual(TrackedKind(name: row.name.uppercased()), kind)
      XCTAssertEqual(
        Set(row.fields.map(\.name)).count, row.fields.count, "\(row.name): field names")
      XCTAssertNoThrow(try TrackedMatch.parse(row.example, as: kind), row.name)
    }
    XCTAssertEqual(builtIn.filter { $0.row.bare }, [.iBeacon], "one bare kind")
    XCTAssertEqual(TrackedKind.iBeacon.row.form, "UUID[:MAJOR[:MINOR]]")
  }

  func testEveryFormReadsBack() throws {
    var rng = SystemRandomNumberGenerator()
    for kind in builtIn {
      for _ in 0..<200 {
        let bytes = (0..<kind.size).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let id = TrackedID(kind: kind, bytes: bytes)
        XCTAssertEqual(id.bytes, bytes)
        XCTAssertEqual(TrackedID.parse(id.description), id, id.description)
        XCTAssertEqual(TrackedID(slug: MQTTTopics.slug(id)), id, MQTTTopics.slug(id))
        XCTAssertEqual(TrackedMatch(id).single, id)
        // Every leading run of fields: reads back, matches the id, and
        // misses the id with one byte of a given field changed.
        for given in 1...kind.row.fields.count {
          let values = kind.row.fields.indices.map { $0 < given ? id.field($0) : nil }
          let m = TrackedMatch(kind: kind, values: values)
          XCTAssertEqual(try TrackedMatch.parse(m.description), m, m.description)
          XCTAssertTrue(m.matches(id), m.description)
          let flip = Int.random(in: 0..<kind.row.offset(of: given), using: &rng)
          var other = bytes
          other[flip] ^= 1 << UInt8.random(in: 0...7, using: &rng)
          XCTAssertFalse(m.matches(TrackedID(kind: kind, bytes: other)), m.description)
          // A byte of a field not given changes nothing.
          if given < kind.row.fields.count {
            var free = bytes
            free[kind.row.size - 1] &+= 1
            XCTAssertTrue(m.matches(TrackedID(kind: kind, bytes: free)), m.description)
          }
        }
        for k in builtIn where k != kind && k.size == kind.size {
          XCTAssertFalse(TrackedMatch(id).matches(TrackedID(kind: k, bytes: bytes)))
        }
      }
    }
  }

  func testTheSimulatorsFrameDecodesToTheSameID() {
    var rng = SystemRandomNumberGenerator()
    for kind in builtIn {
      for _ in 0..<100 {
        var bytes = (0..<kind.size).map { _ in UInt8.random(in: 0...255, using: &rng) }
        if kind == .iBeacon || kind == .altBeacon { bytes[0] |= 1 }  // not the null UUID
        let beacon = TrackedBeacon(
          id: TrackedID(kind: kind, bytes: bytes), measuredPower: Int8.random(in: -90 ... -40))
        let data = HCIEventEncoder.beaconAdvertisingData(beacon)
        let decoded = data.withUnsafeBytes { TrackedBeacon.decode(advertisingData: $0) }
        XCTAssertEqual(decoded, beacon, "\(kind): \(data)")
      }
    }
  }

  /// The written forms are the ones Earshot has always printed.
  func testWrittenFormsAreUnchanged() throws {
    let uuid = BeaconUUID("8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182")!
    let i = TrackedID(uuid: uuid, major: 1, minor: 10)
    XCTAssertEqual(i.description, "8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182:1:10")
    XCTAssertEqual(MQTTTopics.slug(i), "8f2c1a3e-5b7d-4e90-a1c2-3d4e5f607182-1-10")
    var j = JSONLine()
    i.addFields(to: &j)
    XCTAssertEqual(
      j.line, #"{"uuid":"8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182","major":1,"minor":10}"#)
    let e = try XCTUnwrap(TrackedID.parse("eddystone:8f2c1a3e5b7d4e90a1c2:0000000000a1"))
    XCTAssertEqual(MQTTTopics.slug(e), "eddystone-8f2c1a3e5b7d4e90a1c2-0000000000a1")
    var k = JSONLine()
    e.addFields(to: &k)
    XCTAssertEqual(
      k.line,
      #"{"format":"eddystone","namespace":"8f2c1a3e5b7d4e90a1c2","instance":"0000000000a1"}"#)
    XCTAssertEqual(e.kind.row.label(e), "Eddystone 0000000000a1")
    XCTAssertEqual(i.kind.row.label(i), "Beacon 1/10")
  }
}

extension TrackedKindTests {
  /// The beacon table keeps one per record: no bigger than iBeacon's triple.
  func testAnIdentityTakesWhatTheTripleTook() {
    XCTAssertEqual(MemoryLayout<TrackedID>.stride, 24)
  }
}

extension TrackedKindTests {
  /// A scenario's `id` takes any kind as Earshot prints it, and gives the
  /// same beacon as the kind's own key.
  func testAScenarioNamesAnyKindByItsID() throws {
    func beacons(_ keys: [String]) throws -> [TrackedID] {
      let text =
        "[scenario]\nstart = 1767225600\nduration = 60\nseed = 1\n"
        + keys.enumerated().map { "[beacon \"b\($0.offset)\"]\n\($0.element)\npresent = 0-60\n" }
        .joined()
      return try Scenario.build(document(text, file: "ids.scenario")).beacons.map(\.id)
    }
    let uuid = "2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6"
    let ns = "8f2c1a3e5b7d4e90a1c2"
    XCTAssertEqual(
      try beacons(["id = altbeacon:\(uuid):1:2", "id = eddystone:\(ns):0000000000a1"]),
      try beacons(["altbeacon = \(uuid):1:2", "eddystone = \(ns):0000000000a1"]))
    XCTAssertEqual(
      try beacons(["id = \(uuid):7:8"]).map(\.description), ["\(uuid):7:8"])
    XCTAssertThrowsError(try beacons(["id = eddystone:\(ns)"])) {
      XCTAssertTrue("\($0)".contains("every field given"), "\($0)")
    }
  }
}
