import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotCore

/// An independent reading of the facts in docs/trackers.md, written apart
/// from the table (its own walk, its own byte tests), so the decoder is
/// checked against the facts rather than against itself.
enum TrackerOracle {
  struct Verdict: Hashable, CustomStringConvertible {
    var family: TrackerProtocol.Family
    var kind: TrackerKind
    var state: TrackerState
    var description: String { "\(family.rawValue)/\(kind.rawValue)/\(state.rawValue)" }
  }

  static func verdict(_ data: [UInt8]) -> Verdict? {
    // Split into (type, value); a structure running past the end spoils all.
    var structures: [(UInt8, [UInt8])] = []
    var i = 0
    while i < data.count {
      let n = Int(data[i])
      if n == 0 { break }
      guard i + 1 + n <= data.count else { return nil }
      structures.append((data[i + 1], Array(data[i + 2..<i + 1 + n])))
      i += 1 + n
    }
    // Earliest rule wins, whatever the structures' order.
    var found: [(rank: Int, verdict: Verdict)] = []
    for (type, v) in structures {
      if let r = classify(type, v) { found.append(r) }
    }
    return found.min { $0.rank < $1.rank }?.verdict
  }

  private static func classify(_ type: UInt8, _ v: [UInt8]) -> (Int, Verdict)? {
    let apple: [TrackerKind] = [.appleDevice, .airTag, .findMyAccessory, .airPods]
    if type == 0xFF, v.starts(with: [0x4C, 0x00, 0x12, 0x19]), v.count == 29 {
      return (0, Verdict(family: .findMy, kind: apple[Int(v[4] >> 4 & 3)], state: .separated))
    }
    if type == 0xFF, v.starts(with: [0x4C, 0x00, 0x12, 0x02]), v.count == 6 {
      return (1, Verdict(family: .findMy, kind: apple[Int(v[4] >> 4 & 3)], state: .nearOwner))
    }
    if type == 0x16, v.count >= 3 {
      let uuid = UInt16(v[0]) | UInt16(v[1]) << 8
      switch uuid {
      case 0xFEAA where (v[2] == 0x40 || v[2] == 0x41) && (v.count == 24 || v.count == 36):
        return (
          2,
          Verdict(
            family: .findHub, kind: .findHubTag, state: v[2] == 0x41 ? .separated : .nearOwner)
        )
      case 0xFCB2 where (v[2] == 1 || v[2] == 2) && v.count <= 29:
        return (
          4, Verdict(family: .dult, kind: v[2] == 1 ? .dultApple : .dultGoogle, state: .unknown)
        )
      case 0xFD5A where v[2] >> 3 == 0x02 && (14...29).contains(v.count):
        let s: TrackerState =
          [2, 3].contains(v[2] & 7) ? .separated : v[2] & 7 == 5 ? .nearOwner : .unknown
        return (6, Verdict(family: .smartTag, kind: .smartTag, state: s))
      case 0xFE33 where (4...29).contains(v.count):
        return (
          9, Verdict(family: .chipolo, kind: .chipolo, state: v[3] & 1 == 1 ? .separated : .unknown)
        )
      default: break
      }
    }
    if type == 0x16, (2...29).contains(v.count) {
      let uuid = UInt16(v[0]) | UInt16(v[1]) << 8
      if uuid == 0xFEED || uuid == 0xFEEC {
        return (7, Verdict(family: .tile, kind: .tile, state: .unknown))
      }
      if uuid == 0xFA25 {
        return (10, Verdict(family: .pebblebee, kind: .pebblebee, state: .unknown))
      }
    }
    if type == 0x02 || type == 0x03, v.count % 2 == 0 {
      let uuids = stride(from: 0, to: v.count, by: 2).map { UInt16(v[$0]) | UInt16(v[$0 + 1]) << 8 }
      if uuids.contains(0xFEED) || uuids.contains(0xFEEC) {
        return (11, Verdict(family: .tile, kind: .tile, state: .unknown))
      }
      if uuids.contains(0xFE33) {
        return (13, Verdict(family: .chipolo, kind: .chipolo, state: .unknown))
      }
      if uuids.contains(0xFA25) {
        return (14, Verdict(family: .pebblebee, kind: .pebblebee, state: .unknown))
      }
    }
    return nil
  }
}

// The seeded generator is FindPhonePropertyTests' SeededRandom (SplitMix64).

final class TrackerFrameTests: XCTestCase {
  static let staticAddress = BDAddress("C7:11:22:33:44:55")!
  static let rotatingAddress = BDAddress("4A:11:22:33:44:55")!

  /// Made-up frames, one per row, as whole advertising data (flags first).
  static let madeUp: [(name: String, hex: String)] = [
    // AirTag separated: status 0x10 (AirTag, full), 22 key bytes, key bits, hint.
    ("airtag separated", "020106 1eff4c00 1219 10" + String(repeating: "a5", count: 22) + "02 7e"),
    // Find My accessory near owner, battery low (status 0xa0).
    ("accessory near", "07ff4c00 1202 a0 3c"),
    ("airpods near", "07ff4c00 1202 31 00"),
    ("find hub", "020106 1916aafe 40" + String(repeating: "5a", count: 20) + "9c"),
    ("find hub separated", "1916aafe 41" + String(repeating: "c3", count: 20) + "11"),
    ("find hub 32-byte eid", "2516aafe 41" + String(repeating: "0f", count: 32) + "22"),
    ("dult google", "0916b2fc 02 80 010203 04"),
    ("smarttag offline", "1416 5afd 12 070000 0102030405060708 42 00000000"),
    ("smarttag connected", "1016 5afd 15 ffffff 1112131415161718 02"),
    ("tile data", "020106 0303edfe 0d16edfe 0200 0102030405060708"),
    ("tile list", "020106 0303edfe"),
    ("chipolo separated", "0716 33fe 00 01 0203"),
    ("pebblebee", "0503 0f18 25fa"),
    ("dult apple", "0d16b2fc 01 00 0102030405060708"),
    ("tile feec data", "0c16ecfe 0102030405060708 00"),
    ("pebblebee data", "0516 25fa 0a0b"),
    ("tile feec list", "0502 0f18 ecfe"),
    ("chipolo list", "0303 33fe"),
  ]

  func decode(_ hexText: String, _ address: BDAddress = staticAddress) -> TrackerFrame? {
    TrackerFrame.decode(advertisingData: hex(hexText), address: address)
  }

  func testEachMadeUpFrameDecodesAsItsRowSays() throws {
    let airtag = try XCTUnwrap(decode(Self.madeUp[0].hex))
    XCTAssertEqual(airtag.row.name, "Find My (separated)")
    XCTAssertEqual(airtag.kind, .airTag)
    XCTAssertEqual(airtag.state, .separated)
    XCTAssertEqual(airtag.battery, .full)
    XCTAssertEqual(airtag.identity, .address(Self.staticAddress))
    // A separated frame from an address that cannot hold the key: no handle.
    XCTAssertNil(decode(Self.madeUp[0].hex, Self.rotatingAddress)?.identity)
    XCTAssertEqual(decode(Self.madeUp[0].hex, Self.rotatingAddress)?.state, .separated)

    let accessory = try XCTUnwrap(decode(Self.madeUp[1].hex))
    XCTAssertEqual([accessory.kind], [.findMyAccessory])
    XCTAssertEqual(accessory.state, .nearOwner)
    XCTAssertEqual(accessory.battery, .low)
    XCTAssertNil(accessory.identity, "near its owner the address rotates with the key")
    // The same bytes under a wrong AD length do not walk: nothing.
    XCTAssertNil(decode(Self.madeUp[1].hex.replacingOccurrences(of: "07ff", with: "1eff")))

    XCTAssertEqual(decode(Self.madeUp[2].hex)?.kind, .airPods)

    let hub = try XCTUnwrap(decode(Self.madeUp[3].hex))
    XCTAssertEqual([hub.kind], [.findHubTag])
    XCTAssertEqual(hub.state, .nearOwner)
    XCTAssertNil(hub.identity)
    XCTAssertNil(hub.battery, "the hashed flags need the owner's key")
    let utp = try XCTUnwrap(decode(Self.madeUp[4].hex))
    XCTAssertEqual(utp.state, .separated)
    XCTAssertEqual(utp.identity, .address(Self.staticAddress))
    XCTAssertEqual(decode(Self.madeUp[5].hex)?.state, .separated)

    let dult = try XCTUnwrap(decode(Self.madeUp[6].hex))
    XCTAssertEqual(dult.kind, .dultGoogle)
    XCTAssertEqual(dult.state, .unknown)

    let tag = try XCTUnwrap(decode(Self.madeUp[7].hex))
    XCTAssertEqual(tag.kind, .smartTag)
    XCTAssertEqual(tag.state, .separated)
    XCTAssertEqual(tag.battery, .medium)
    XCTAssertEqual(tag.identity, .smartTag(SmartTagAging(counter: 7, id: 0x0102_0304_0506_0708)))
    let near = try XCTUnwrap(decode(Self.madeUp[8].hex))
    XCTAssertEqual(near.state, .nearOwner)
    XCTAssertEqual(near.battery, .medium)
    XCTAssertEqual(
      near.identity, .smartTag(SmartTagAging(counter: 0xFF_FFFF, id: 0x1112_1314_1516_1718)))

    let tile = try XCTUnwrap(decode(Self.madeUp[9].hex))
    XCTAssertEqual(tile.row.name, "Tile", "the service data row comes before the list's")
    XCTAssertEqual(tile.identity, .address(Self.staticAddress))
    XCTAssertEqual(decode(Self.madeUp[10].hex)?.row.name, "Tile (service list)")
    XCTAssertEqual(decode(Self.madeUp[11].hex)?.state, .separated)
    XCTAssertEqual(decode("0716 33fe 00 00 0203")?.state, .unknown)
    XCTAssertEqual(decode(Self.madeUp[12].hex)?.kind, .pebblebee)
    XCTAssertEqual(decode(Self.madeUp[13].hex)?.kind, .dultApple)
    XCTAssertEqual(decode(Self.madeUp[14].hex)?.row.name, "Tile")
    XCTAssertEqual(decode(Self.madeUp[15].hex)?.row.name, "Pebblebee")
    XCTAssertEqual(decode(Self.madeUp[16].hex)?.row.name, "Tile (service list)")
    XCTAssertEqual(decode(Self.madeUp[17].hex)?.row.name, "Chipolo (service list)")
  }

  func testEveryRowHasAMadeUpFrameAndTheOracleAgrees() {
    var rows: Set<Int> = []
    for (name, text) in Self.madeUp {
      let frame = decode(text)
      let want = TrackerOracle.verdict(hex(text))
      if let frame { rows.insert(frame.rowIndex) }
      XCTAssertEqual(
        frame.map { TrackerOracle.Verdict(family: $0.family, kind: $0.kind, state: $0.state) },
        want, name)
    }
    XCTAssertEqual(rows.count, TrackerProtocol.table.count, "a made-up frame for every row")
  }

  /// docs/trackers.md's table names every row of the code's table, with
  /// its carrier's UUID or company id.
  func testTheDocsTableNamesEveryRow() throws {
    let page = try String(
      contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/trackers.md"), encoding: .utf8)
    let table = page.components(separatedBy: "## The table")[1]
      .components(separatedBy: "\n## ")[0]
    for row in TrackerProtocol.table {
      let line = table.split(separator: "\n").first { $0.hasPrefix("| ") && $0.contains(row.name) }
      let number: UInt16 =
        switch row.carrier {
        case .manufacturerData(let c): c
        case .serviceData16(let u), .serviceUUID16(let u): u
        }
      let written = "0x" + String(number, radix: 16, uppercase: true).leftPadded(to: 4)
      XCTAssertNotNil(line, "docs/trackers.md's table has no row \(row.name)")
      XCTAssertTrue(line?.contains(written) ?? false, "\(row.name): \(written) not in its line")
    }
  }

  /// Eddystone's own frames share 0xFEAA with Find Hub: UID, URL, TLM,
  /// eTLM and EID are beacons, never trackers (AirGuard takes them all).
  func testEddystoneFramesAreNeverFindHub() {
    let eddystone = [
      "0303aafe 1516aafe 00e8 00112233445566778899 aabbccddeeff",  // UID, no reserved bytes
      "0303aafe 1716aafe 00e8 00112233445566778899 aabbccddeeff 0000",  // UID with them
      "0303aafe 0e16aafe 10eb 03 6578616d706c6507",  // URL https://example.com
      "0303aafe 1116aafe 2000 0bb8 1900 00000010 00000100",  // TLM
      "0303aafe 1516aafe 2001 000102030405060708090a0b 0c0d 0e0f",  // eTLM
      "0303aafe 0d16aafe 30e8 0011223344556677",  // EID
    ]
    for text in eddystone {
      XCTAssertNil(decode(text), text)
      let beacons = hex(text).withUnsafeBytes { BeaconClassifier.standard.frames(in: $0) }
      XCTAssertEqual(beacons.count, 1, "the made-up frame is a real Eddystone frame: \(text)")
    }
    // Every frame type but 0x40 and 0x41, at Find Hub's own lengths.
    var refused = 0
    for type in 0...255 where type != 0x40 && type != 0x41 {
      for eid in [20, 32] {
        let frame =
          [UInt8(eid + 4), 0x16, 0xAA, 0xFE, UInt8(type)] + [UInt8](repeating: 0x33, count: eid + 1)
        XCTAssertNil(TrackerFrame.decode(advertisingData: frame, address: Self.staticAddress))
        refused += 1
      }
    }
    XCTAssertEqual(refused, 508)
    // 0x40 at a length that is neither 24 nor 36 is no Find Hub frame either.
    XCTAssertNil(decode("1816aafe 40" + String(repeating: "5a", count: 20)))
  }

  /// 500 seeded mutations of the made-up frames: no crash, and each result is
  /// exactly the oracle's (the row's class, or nothing).
  func testFiveHundredMutatedMadeUpFrames() {
    let tally = Self.mutate(Self.madeUp.map { ($0.name, hex($0.hex)) }, count: 500, seed: 40)
    XCTAssertEqual(tally.total, 500)
    XCTAssertEqual(tally.disagreements, [])
    // Each outcome happens: some mutations keep the class, some lose it.
    XCTAssertGreaterThan(tally.kept, 50)
    XCTAssertGreaterThan(tally.refused, 50)
    print("mutations (made-up): \(tally.summary)")
  }

  /// A flip in a row's match bytes refuses the frame; a flip in Apple's key
  /// bytes or the Find Hub EID keeps its class.
  func testMatchBytesRefuseKeyBytesKeep() {
    let airtag = hex(Self.madeUp[0].hex)
    // Value starts after flags (3) and the AD header (2): 4c 00 12 19 at 5-8.
    for i in 5...8 {
      var m = airtag
      m[i] ^= 0x01
      XCTAssertNil(
        TrackerFrame.decode(advertisingData: m, address: Self.staticAddress), "byte \(i)")
    }
    for i in 10..<32 {
      var m = airtag
      m[i] ^= 0xFF
      let f = TrackerFrame.decode(advertisingData: m, address: Self.staticAddress)
      XCTAssertEqual(f?.kind, .airTag, "key byte \(i)")
      XCTAssertEqual(f?.state, .separated)
    }
    let hub = hex(Self.madeUp[3].hex)
    for i in 5...7 {  // aa fe 40
      var m = hub
      m[i] ^= 0x80
      XCTAssertNil(
        TrackerFrame.decode(advertisingData: m, address: Self.staticAddress), "byte \(i)")
    }
    for i in 8..<28 {
      var m = hub
      m[i] = ~m[i]
      XCTAssertEqual(
        TrackerFrame.decode(advertisingData: m, address: Self.staticAddress)?.family, .findHub)
    }
  }

  struct Tally {
    var total = 0, kept = 0, changed = 0, refused = 0
    var byMutation: [String: Int] = [:]
    var disagreements: [String] = []
    var summary: String {
      "\(total) mutated: \(kept) kept their class, \(changed) changed with the facts, \(refused) refused; "
        + byMutation.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(
          separator: ", ")
    }
  }

  /// Byte flips, truncations, AD length changes, inserted and dropped bytes.
  static func mutate(_ frames: [(String, [UInt8])], count: Int, seed: UInt64) -> Tally {
    var rng = SeededRandom(state: seed)
    var tally = Tally()
    for n in 0..<count {
      let (name, base) = frames[n % frames.count]
      var m = base
      let how: String
      switch Int.random(in: 0..<5, using: &rng) {
      case 0:
        how = "flip"
        m[Int.random(in: 0..<m.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
      case 1:
        how = "truncate"
        m = Array(m.prefix(Int.random(in: 0..<m.count, using: &rng)))
      case 2:
        how = "length"
        // An AD length byte: the first structure's, or the last one's.
        var starts: [Int] = []
        var i = 0
        while i < m.count, m[i] != 0 {
          starts.append(i)
          i += 1 + Int(m[i])
        }
        let at = starts.randomElement(using: &rng) ?? 0
        m[at] = UInt8(truncatingIfNeeded: Int(m[at]) + [-2, -1, 1, 2].randomElement(using: &rng)!)
      case 3:
        how = "insert"
        m.insert(
          UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0...m.count, using: &rng))
      default:
        how = "drop"
        m.remove(at: Int.random(in: 0..<m.count, using: &rng))
      }
      tally.total += 1
      tally.byMutation[how, default: 0] += 1
      let before = TrackerOracle.verdict(base)
      let want = TrackerOracle.verdict(m)
      let got = TrackerFrame.decode(advertisingData: m, address: Self.staticAddress).map {
        TrackerOracle.Verdict(family: $0.family, kind: $0.kind, state: $0.state)
      }
      if got != want {
        tally.disagreements.append(
          "\(name) \(how) \(m.map { String(format: "%02x", $0) }.joined()): got \(String(describing: got)), facts say \(String(describing: want))"
        )
      }
      if want == nil {
        tally.refused += 1
      } else if want == before {
        tally.kept += 1
      } else {
        tally.changed += 1
      }
    }
    return tally
  }
}

extension String {
  fileprivate func leftPadded(to n: Int) -> String {
    String(repeating: "0", count: max(0, n - count)) + self
  }
}
