import EarshotTestSupport
import XCTest

@testable import EarshotCore

/// Every capture in ../shared/data/ble/captures gives exactly the iBeacon
/// frames its README lists, and the report counts it states.
final class CaptureConformanceTests: XCTestCase {
  struct Seen {
    var reports = 0
    var events = 0
    var records = 0
    var malformed = 0
    var skipped = 0
    var crcFailures = 0
    var beacons: [(address: String, id: String, power: Int8, pdu: String)] = []
  }

  func replay(_ name: String) throws -> Seen {
    let bytes = try SharedData.bytes("ble/captures/\(name)")
    var seen = Seen()
    var replay = CaptureReplay()
    try bytes.withUnsafeBytes { raw in
      try replay.run(raw) { _, report in
        if let b = TrackedBeacon.iBeacon(advertisingData: report.data) {
          seen.beacons.append(
            (report.address.description, b.id.description, b.measuredPower, report.pdu.name))
        }
      }
    }
    XCTAssertFalse(replay.truncated, "\(name) ends in a truncated record")
    seen.reports = replay.decoder.stats.reports
    seen.events = replay.decoder.stats.events
    seen.records = replay.records
    seen.malformed =
      replay.decoder.stats.malformedEvents + replay.decoder.stats.malformedReports
      + replay.malformedLinkLayer
    seen.skipped = replay.skippedLinkLayer.values.reduce(0, +)
    seen.crcFailures = replay.crcFailures
    return seen
  }

  func testGoveeScanResponses() throws {
    let s = try replay("csacca_horizon-74-at-ble.btsnoop")
    XCTAssertEqual(s.reports, 412)
    XCTAssertEqual(s.malformed, 0)
    XCTAssertEqual(s.beacons.count, 11)
    XCTAssertEqual(Set(s.beacons.map(\.pdu)), ["scan_rsp"])
    XCTAssertEqual(
      s.beacons.filter { $0.id == "494E5445-4C4C-495F-524F-434B535F4857:20594:62207" }.count, 10)
    XCTAssertEqual(
      s.beacons.filter { $0.id == "494E5445-4C4C-495F-524F-434B535F4857:20597:62207" }.count, 1)
    XCTAssertTrue(s.beacons.allSatisfy { $0.power == -62 })
  }

  func testNonConnectableBeaconAmongFourteenThousandReports() throws {
    let s = try replay("mtoslalibu_ec521.btsnoop")
    XCTAssertEqual(s.reports, 14_166)
    XCTAssertEqual(s.malformed, 0)
    XCTAssertEqual(s.beacons.count, 33)
    for b in s.beacons {
      XCTAssertEqual(b.id, "56DB0365-A001-4062-9E4D-499D3B8ECCF3:4096:14388")
      XCTAssertEqual(b.power, -54)
      XCTAssertEqual(b.pdu, "adv_nonconn_ind")
      XCTAssertEqual(b.address, "88:4A:EA:96:8D:D2")
    }
  }

  func testLegacyPDUInsideExtendedReports() throws {
    let s = try replay("dandwhelan_fossibot-bluetooth.btsnoop")
    XCTAssertEqual(s.reports, 7426)
    XCTAssertEqual(s.malformed, 0)
    XCTAssertEqual(s.beacons.count, 3)
    for b in s.beacons {
      XCTAssertEqual(b.id, "74278BDA-B644-4520-8F0C-720EAF059935:0:11266")
      XCTAssertEqual(b.power, -59)
      XCTAssertEqual(b.pdu, "adv_ind", "event type 0x0013 is a legacy ADV_IND")
    }
  }

  func testSixAdvertisersOneUUID() throws {
    let s = try replay("wangdalian_btsnooper.btsnoop")
    XCTAssertEqual(s.reports, 465)
    XCTAssertEqual(s.malformed, 0)
    let got = s.beacons.map { "\($0.id.dropFirst(37)):\($0.power)" }.sorted()
    let want = [
      "100:19641:-59", "100:19641:-59", "100:19641:-59", "43240:6545:-57", "10240:180:-64",
      "43240:6694:-56",
      "39144:6686:-56", "102:19641:-59",
    ].sorted()
    XCTAssertEqual(got, want)
    XCTAssertTrue(s.beacons.allSatisfy { $0.id.hasPrefix("FDA50693-A4E2-4FB1-AFCF-C6EB07647825:") })
    XCTAssertEqual(Set(s.beacons.map(\.address)).count, 6)
  }

  func testTwoReportEvents() throws {
    let s = try replay("bertrandmartel_btsnoop-decoder.btsnoop")
    XCTAssertEqual(s.events, 32)
    XCTAssertEqual(s.reports, 59)
    XCTAssertEqual(s.malformed, 0)
    XCTAssertTrue(s.beacons.isEmpty)
  }

  func testExtendedReportsWithoutBeacons() throws {
    let s = try replay("mauricelam_btsnoop-extcap.btsnoop")
    XCTAssertEqual(s.reports, 12)
    XCTAssertEqual(s.malformed, 0)
    XCTAssertTrue(s.beacons.isEmpty)
  }

  func testLinkLayerSnifferPcap() throws {
    let s = try replay("blakete_boston-mesh.le-ll-phdr.pcap")
    XCTAssertEqual(s.records, 239)
    // Its pseudo-headers say no CRC was checked; 34 packets fail theirs,
    // among them its one type-7 PDU (header 57 1d, which says an extended
    // header of 54 bytes in a 29-byte PDU): counted, not read.
    XCTAssertEqual(s.crcFailures, 34)
    XCTAssertEqual(s.malformed, 0)
    XCTAssertEqual(s.skipped, 0)
    XCTAssertEqual(s.reports, 81, "ADV_* and SCAN_RSP PDUs become reports")
    XCTAssertTrue(s.beacons.isEmpty)
  }

  func testHackRFCapturesFailingTheirCRCAreCountedAndSkipped() throws {
    // Figures as the shared README gives them (215 of the 20-channel
    // capture's packets, 1,032 of 7,982 in the channel-38 take fail their
    // CRC-24); SnifferConformanceTests checks each verdict against tshark.
    let twenty = try replay("blakete_boston-mesh.hackrf-20ch.le-ll-phdr.pcap")
    XCTAssertEqual(twenty.records, 2536)
    XCTAssertEqual(twenty.crcFailures, 215)
    XCTAssertEqual(twenty.reports, 1939)
    let take3 = try replay("blakete_boston-mesh.take3-adv38.le-ll-phdr.pcap")
    XCTAssertEqual(take3.records, 8830)
    XCTAssertEqual(take3.crcFailures, 1032)
    XCTAssertEqual(take3.reports, 5783)
  }
}
