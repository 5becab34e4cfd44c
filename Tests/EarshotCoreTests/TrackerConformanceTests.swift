import EarshotTestSupport
import XCTest

@testable import EarshotCore

/// Every tracker frame in ../shared/data/ble/captures is classified as the
/// facts say (docs/trackers.md), and nothing else in them is a tracker.
final class TrackerConformanceTests: XCTestCase {
  struct Seen {
    var reports = 0
    var crcFailures = 0
    /// "row name/kind/state" → frames.
    var classes: [String: Int] = [:]
    var trackers = 0
    var identities: Set<TrackerIdentity> = []
    var beaconsAmongTrackers = 0
    var beacons = 0
    /// Reports with Apple manufacturer data of other Continuity types
    /// (Nearby, Handoff, AirDrop, ...), and how many of them decode.
    var otherApple = 0
    var otherAppleAsTrackers = 0
    var disagreements: [String] = []
    var frames: [[UInt8]] = []
  }

  static let captures = [
    "ashmartian_happyleaf.btsnoop", "bertrandmartel_btsnoop-decoder.btsnoop",
    "blakete_boston-mesh.hackrf-20ch.le-ll-phdr.pcap", "blakete_boston-mesh.le-ll-phdr.pcap",
    "blakete_boston-mesh.take3-adv38.le-ll-phdr.pcap", "csacca_horizon-74-at-ble.btsnoop",
    "dandwhelan_fossibot-bluetooth.btsnoop", "mauricelam_btsnoop-extcap.btsnoop",
    "mtoslalibu_ec521.btsnoop", "nick0451_dsp408-tuner.btsnoop", "wangdalian_btsnooper.btsnoop",
    "whoisbe_pongbot-mcp.btsnoop",
  ]

  static func replay(_ name: String) throws -> Seen {
    let bytes = try SharedData.bytes("ble/captures/\(name)")
    var seen = Seen()
    var replay = CaptureReplay()
    try bytes.withUnsafeBytes { raw in
      try replay.run(raw) { _, report in
        let data = [UInt8](report.data)
        let frame = TrackerFrame.decode(advertisingData: report.data, address: report.address)
        let got = frame.map {
          TrackerOracle.Verdict(family: $0.family, kind: $0.kind, state: $0.state)
        }
        let want = TrackerOracle.verdict(data)
        if got != want {
          seen.disagreements.append(
            "\(report.address) \(data): \(String(describing: got)) vs \(String(describing: want))")
        }
        let beacons = BeaconClassifier.standard.frames(in: report.data)
        seen.beacons += beacons.count
        if Self.isOtherApple(data) {
          seen.otherApple += 1
          if frame != nil { seen.otherAppleAsTrackers += 1 }
        }
        guard let frame else { return }
        if !beacons.isEmpty { seen.beaconsAmongTrackers += 1 }
        seen.trackers += 1
        seen.classes[
          "\(frame.row.name)/\(frame.kind.rawValue)/\(frame.state.rawValue)", default: 0] += 1
        if let id = frame.identity { seen.identities.insert(id) }
        seen.frames.append(data)
      }
    }
    seen.reports = replay.decoder.stats.reports
    seen.crcFailures = replay.crcFailures
    return seen
  }

  /// Apple manufacturer data whose first message is not Find My (0x12).
  static func isOtherApple(_ data: [UInt8]) -> Bool {
    var i = 0
    while i + 1 < data.count, data[i] != 0 {
      let n = Int(data[i])
      if data[i + 1] == 0xFF, n >= 4, i + 4 < data.count, data[i + 2] == 0x4C,
        data[i + 3] == 0x00, data[i + 4] != 0x12
      {
        return true
      }
      i += 1 + n
    }
    return false
  }

  /// The figures per capture: tracker frames by row, kind and state, and
  /// the distinct identity handles among them. Captures not named here hold
  /// no tracker frame.
  static let expected: [String: (classes: [String: Int], identities: Int)] = [
    // The README's one Tile frame: 0xFEED in the service list, no data.
    "ashmartian_happyleaf.btsnoop": (["Tile (service list)/tile/unknown": 1], 1),
    // The README's 30 Find My frames; none of them fails its CRC-24. The
    // eight separated ones come from two addresses.
    "blakete_boston-mesh.hackrf-20ch.le-ll-phdr.pcap": (
      [
        "Find My (near owner)/apple_device/near_owner": 22,
        "Find My (separated)/apple_device/separated": 3,
        "Find My (separated)/find_my_accessory/separated": 5,
      ], 2
    ),
    // The README's 159 are the Find My frames on the advertising access
    // address before the CRC check: 10 of them fail it and are skipped.
    "blakete_boston-mesh.take3-adv38.le-ll-phdr.pcap": (
      ["Find My (near owner)/apple_device/near_owner": 149], 0
    ),
    // Not in the README: Tile frames (service data 0xFEED) from two tags.
    "csacca_horizon-74-at-ble.btsnoop": (["Tile/tile/unknown": 4], 2),
    // Not in the README: an Android phone's Find Hub frames (0x40), a Find
    // My frame near its owner, a Tile.
    "dandwhelan_fossibot-bluetooth.btsnoop": (
      [
        "Find Hub/find_hub_tag/near_owner": 281,
        "Find My (near owner)/apple_device/near_owner": 1,
        "Tile/tile/unknown": 5,
      ], 1
    ),
    // The README's 10 Find My frames: AirPods and a phone near their owner,
    // one AirTag separated.
    "nick0451_dsp408-tuner.btsnoop": (
      [
        "Find My (near owner)/airpods/near_owner": 8,
        "Find My (near owner)/apple_device/near_owner": 1,
        "Find My (separated)/airtag/separated": 1,
      ], 1
    ),
    // The README's 2 Find My frames, beside its 3 iBeacons.
    "whoisbe_pongbot-mcp.btsnoop": (["Find My (near owner)/apple_device/near_owner": 2], 0),
  ]

  func testEveryCaptureAgreesWithTheFacts() throws {
    var total: [String: Int] = [:]
    var otherApple = 0
    var beacons = 0
    for name in Self.captures {
      let seen = try Self.replay(name)
      XCTAssertEqual(seen.disagreements, [], name)
      XCTAssertEqual(seen.beaconsAmongTrackers, 0, "\(name): a beacon classed as a tracker")
      XCTAssertEqual(
        seen.otherAppleAsTrackers, 0, "\(name): other Apple messages classed as trackers")
      otherApple += seen.otherApple
      beacons += seen.beacons
      print(
        "\(name): \(seen.reports) reports, \(seen.crcFailures) CRC failures, \(seen.beacons) beacon frames, \(seen.trackers) trackers \(seen.classes.sorted { $0.key < $1.key }), \(seen.identities.count) identities"
      )
      XCTAssertEqual(seen.classes, Self.expected[name]?.classes ?? [:], name)
      XCTAssertEqual(seen.identities.count, Self.expected[name]?.identities ?? 0, name)
      for (k, v) in seen.classes { total[k, default: 0] += v }
    }
    print("all captures: \(total.sorted { $0.key < $1.key })")
    XCTAssertEqual(total.values.reduce(0, +), 483)
    print("beacon frames \(beacons), other Apple reports \(otherApple)")
    XCTAssertEqual(beacons, 58, "the iBeacons and Eddystone frames beside the trackers")
    XCTAssertEqual(otherApple, 12_950, "the captures' other Apple messages, none a tracker")
  }

  /// 500 seeded mutations of real tracker frames from the captures (one of
  /// each class per capture): no crash, each decoded as the facts say or not
  /// at all.
  func testFiveHundredMutatedRealFrames() throws {
    var pool: [(String, [UInt8])] = []
    for name in Self.captures {
      let seen = try Self.replay(name)
      var classes: Set<TrackerOracle.Verdict?> = []
      for frame in seen.frames where classes.insert(TrackerOracle.verdict(frame)).inserted {
        pool.append((name, frame))
      }
    }
    XCTAssertGreaterThanOrEqual(pool.count, 4)
    let tally = TrackerFrameTests.mutate(pool, count: 500, seed: 41)
    XCTAssertEqual(tally.total, 500)
    XCTAssertEqual(tally.disagreements, [])
    XCTAssertGreaterThan(tally.kept, 50)
    XCTAssertGreaterThan(tally.refused, 50)
    print("mutations (real, \(pool.count) frames): \(tally.summary)")
  }
}
