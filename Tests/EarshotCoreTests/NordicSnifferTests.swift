import EarshotTestSupport
import XCTest

@testable import EarshotCore

/// LINKTYPE 272 records in every header version, and the CRC-24 checks, on
/// real packets: frames 1 and 23 of the shared HackRF capture
/// (blakete_boston-mesh.hackrf-20ch), whose CRCs tshark finds right and wrong.
final class NordicSnifferTests: XCTestCase {
  /// ADV_IND from d5:65:ec:9f:e0:18 ("ROG AZOTH"), CRC 6d 4f c9.
  static let good = hex(
    "d6be898e601c18e09fec65d50319c103020104030312180a09524f4720415a4f54486d4fc9")
  /// An ADV_IND whose CRC does not match its bytes.
  static let bad = hex(
    "d6be898e4025f4fd6cd83b5702011a1bff4c000c0e087f3410bf6dcee357fb4bed435b1006491de89a1478bbec45")

  func testCRC24OfRealPackets() {
    Self.good.withUnsafeBytes { p in
      XCTAssertEqual(LinkLayer.crc24(UnsafeRawBufferPointer(rebasing: p[4..<34])), 0xC9_4F6D)
      XCTAssertTrue(LinkLayer.crcPasses(p, .unchecked))
      XCTAssertFalse(LinkLayer.crcPasses(p, .invalid), "the capture's word wins")
    }
    Self.bad.withUnsafeBytes { p in
      XCTAssertFalse(LinkLayer.crcPasses(p, .unchecked))
      XCTAssertTrue(LinkLayer.crcPasses(p, .valid), "the capture's word wins")
    }
    XCTAssertEqual(LinkLayer.crcBytes(Array(Self.good[4..<34])), [0x6D, 0x4F, 0xC9])
    // A data-channel packet's CRC init is not known: it passes unchecked.
    let data = [0x11, 0x22, 0x33, 0x44] + Array(Self.bad[4...])
    data.withUnsafeBytes { XCTAssertTrue(LinkLayer.crcPasses($0, .unchecked)) }
    // Made PDUs carry a right CRC.
    let made = LinkLayer.legacyPDU(
      .advInd, address: BDAddress(raw: 0xC000_0000_0001), addressType: .random, data: [2, 1, 6])!
    made.withUnsafeBytes { XCTAssertTrue(LinkLayer.crcPasses($0, .unchecked)) }
  }

  /// The record the nRF Sniffer writes for `packet` in header `version`:
  /// flags (CRC OK), channel 38, RSSI 55 (−55 dBm).
  func record(_ packet: [UInt8], version: Int, crcOK: Bool = true, phy: UInt8 = 0, id: UInt8? = nil)
    -> [UInt8]
  {
    let event: [UInt8] = [(crcOK ? 1 : 0) | phy << 4, 38, 55, 0, 0, 1, 2, 3, 4]
    let packetID = id ?? (version == 3 ? 0x02 : 0x06)
    switch version {
    case 0:
      return [0xBE, 0xEF, packetID, 7, 0, 0, 0, UInt8(event.count + packet.count)] + event + packet
    case 1:
      let payload = [10] + event + packet
      return [0, 6, UInt8(payload.count), 1, 7, 0, packetID] + payload
    default:
      let payload = [10] + event + packet
      return [0, UInt8(payload.count), 0, UInt8(version), 7, 0, packetID] + payload
    }
  }

  func pcap272(_ records: [[UInt8]]) -> [UInt8] {
    func le(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }
    var out = le(0xA1B2_C3D4) + [2, 0, 4, 0] + le(0) + le(0) + le(262_144) + le(272)
    for (i, r) in records.enumerated() {
      out += le(1_754_198_671) + le(UInt32(i)) + le(UInt32(r.count)) + le(UInt32(r.count)) + r
    }
    return out
  }

  func replay(_ capture: [UInt8]) throws -> (CaptureReplay, [AdvertisingReport], [String]) {
    var replay = CaptureReplay()
    var reports: [AdvertisingReport] = []
    var rejects: [String] = []
    try capture.withUnsafeBytes {
      try replay.run($0, report: { reports.append($1) }, reject: { rejects.append($2) })
    }
    return (replay, reports, rejects)
  }

  func testEveryHeaderVersion() throws {
    for version in 0...3 {
      let capture = pcap272([
        record(Self.good, version: version), record(Self.good, version: version, crcOK: false),
        record(Self.bad, version: version),
      ])
      try capture.withUnsafeBytes { raw in
        var reader = try CaptureReader(raw)
        guard case .linkLayer(let p, let rssi, let channel, let crc) = reader.next()?.packet else {
          return XCTFail("version \(version): not a link-layer packet")
        }
        XCTAssertEqual(Array(p), Self.good, "version \(version)")
        XCTAssertEqual(rssi, -55)
        XCTAssertEqual(channel, 38)
        XCTAssertEqual(crc, .valid)
      }
      let (replay, reports, rejects) = try replay(capture)
      XCTAssertEqual(reports.count, 2, "version \(version)")
      XCTAssertEqual(reports.first?.address.description, "D5:65:EC:9F:E0:18")
      XCTAssertEqual(reports.first?.rssi, -55)
      XCTAssertEqual(reports.first?.pdu, .advInd)
      XCTAssertEqual(reports.first.map { Array($0.data) }, Array(Self.good[12..<34]))
      // Its sniffer's CRC flag decides: a good CRC flagged bad is skipped,
      // and a bad one flagged good is believed.
      XCTAssertEqual(replay.crcFailures, 1)
      XCTAssertEqual(replay.malformedLinkLayer, 0, "\(rejects)")
      XCTAssertEqual(replay.records, 3)
    }
  }

  func testUnreadableRecordsAreCountedAndSkipped() throws {
    var short = record(Self.good, version: 2)
    short[1] += 1  // says a byte more than the record holds
    let cases: [([UInt8], String)] = [
      (short, "says \(short.count + 1) bytes in a record of \(short.count)"),
      (Array(record(Self.good, version: 3)[...16]), "no longer than its 17-byte header"),
      (
        {
          var r = record(Self.good, version: 2)
          r[3] = 9
          return r
        }(), "header version 9"
      ),
      (record(Self.good, version: 3, phy: 2), "LE Coded PHY"),
      (
        {
          var r = record(Self.good, version: 1)
          r[7] = 12
          return r
        }(), "event header of 12"
      ),
    ]
    for (bytes, why) in cases {
      let (replay, reports, rejects) = try replay(pcap272([bytes, record(Self.good, version: 3)]))
      XCTAssertEqual(reports.count, 1, why)
      XCTAssertEqual(replay.malformedLinkLayer, 1, why)
      XCTAssertEqual(rejects.count, 1, why)
      XCTAssertTrue(rejects.first?.contains(why) ?? false, "\(rejects) lacks \(why)")
    }
    // A record that is not a packet (a ping answer, ID 0x0E) is no report
    // and no fault.
    let (replay, reports, _) = try replay(pcap272([record(Self.good, version: 3, id: 0x0E)]))
    XCTAssertEqual(reports.count, 0)
    XCTAssertEqual(replay.malformedLinkLayer + replay.crcFailures, 0)
  }

  func testLinkType256CRCFlags() throws {
    // unchecked, checked and valid, checked and invalid: for a good and a bad CRC.
    var writer = CaptureWriter(
      container: .pcap(bigEndian: false, nanoseconds: false), linkType: 256)
    for packet in [Self.good, Self.bad] {
      for crc in [LinkLayerCRC.unchecked, .valid, .invalid] {
        packet.withUnsafeBytes {
          XCTAssertTrue(
            writer.append(CaptureRecord(timestamp: 1, packet: .linkLayer($0, rssi: -50, crc: crc))))
        }
      }
    }
    let (replay, reports, _) = try replay(writer.bytes)
    // good: unchecked and valid report; bad: unchecked and invalid fail, valid
    // is believed.
    XCTAssertEqual(reports.count, 3)
    XCTAssertEqual(replay.crcFailures, 3)
    XCTAssertEqual(replay.malformedLinkLayer, 0)
  }
}
