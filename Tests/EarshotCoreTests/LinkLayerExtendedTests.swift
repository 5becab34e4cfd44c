import XCTest

@testable import EarshotCore

/// PDU type 7 (the Common Extended Advertising Payload Format) from sniffer
/// captures: every field combination, and every way the header can not fit.
final class LinkLayerExtendedTests: XCTestCase {
  let adva: [UInt8] = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06]  // 06:05:04:03:02:01
  let targeta: [UInt8] = [0x11, 0x12, 0x13, 0x14, 0x15, 0x16]
  let data: [UInt8] = [0x02, 0x01, 0x06, 0x03, 0xFF, 0x4C, 0x00]

  /// Access address, header (type 7, TxAdd as given), payload.
  func packet(_ payload: [UInt8], txAdd: Bool = false) -> [UInt8] {
    [0xD6, 0xBE, 0x89, 0x8E, 0x07 | (txAdd ? 0x40 : 0), UInt8(payload.count)] + payload
  }

  /// Payload: length|AdvMode, flags, fields, then AdvData.
  func payload(mode: UInt8, flags: UInt8, fields: [UInt8], acad: [UInt8] = [], data: [UInt8])
    -> [UInt8]
  {
    let header = [flags] + fields + acad
    return [mode << 6 | UInt8(header.count)] + header + data
  }

  struct Seen: Equatable {
    var pdu: String
    var address: UInt64
    var random: Bool
    var target: UInt64?
    var tx: Int8?
    var sid: UInt8?
    var status: DataStatus
    var data: [UInt8]
  }

  enum Result: Equatable {
    case report(Seen)
    case skipped(LinkLayer.Skip)
    case malformed(String)
    case ignored
  }

  func decode(_ bytes: [UInt8]) -> Result {
    bytes.withUnsafeBytes { raw in
      switch LinkLayer.decode(raw, rssi: -70) {
      case .report(let r):
        XCTAssertEqual(r.rssi, -70)
        return .report(
          Seen(
            pdu: r.pdu.name, address: r.address.raw, random: r.addressType == .random,
            target: r.directAddress?.raw, tx: r.txPower, sid: r.sid, status: r.dataStatus,
            data: Array(r.data)))
      case .skipped(let why): return .skipped(why)
      case .malformed(let f): return .malformed(f.description)
      case .ignored: return .ignored
      }
    }
  }

  func testAdvAAndDataIsAnExtendedReport() {
    let r = decode(packet(payload(mode: 0, flags: 0x01, fields: adva, data: data), txAdd: true))
    XCTAssertEqual(
      r,
      .report(
        Seen(
          pdu: "ext", address: 0x0605_0403_0201, random: true, target: nil, tx: nil, sid: nil,
          status: .complete, data: data)))
  }

  func testEveryFieldAndACAD() {
    // AdvA, TargetA, CTEInfo, ADI (DID 0x123, SID 5), AuxPtr, SyncInfo, TxPower -8.
    let fields =
      adva + targeta + [0x00] + [0x23, 0x51] + [0x01, 0x02, 0x03] + Array(repeating: 0, count: 18)
      + [0xF8]
    let r = decode(
      packet(payload(mode: 1, flags: 0x7F, fields: fields, acad: [0x02, 0x03], data: data)))
    XCTAssertEqual(
      r,
      .report(
        Seen(
          pdu: "ext_conn_directed", address: 0x0605_0403_0201, random: false,
          target: 0x1615_1413_1211, tx: -8, sid: 5, status: .truncated, data: data)),
      "with an AuxPtr the data continues in a chain that is not followed")
  }

  func testScannableWithADIAndTxPower() {
    let r = decode(
      packet(payload(mode: 2, flags: 0x49, fields: adva + [0x00, 0xF0] + [0x04], data: data)))
    XCTAssertEqual(
      r,
      .report(
        Seen(
          pdu: "ext_scan", address: 0x0605_0403_0201, random: false, target: nil, tx: 4,
          sid: 15, status: .complete, data: data)))
  }

  func testAdvAWithoutDataOrAuxPtrIsAnEmptyReport() {
    guard
      case .report(let s) = decode(packet(payload(mode: 0, flags: 0x01, fields: adva, data: [])))
    else { return XCTFail("expected a report") }
    XCTAssertEqual(s.data, [])
  }

  func testHeaderOnlyIsSkippedUnderItsReason() {
    // An ADV_EXT_IND: AdvA, ADI, AuxPtr and no data.
    let r = decode(
      packet(payload(mode: 0, flags: 0x19, fields: adva + [0, 0x10] + [1, 2, 3], data: [])))
    XCTAssertEqual(r, .skipped(.headerOnly))
    XCTAssertEqual(
      LinkLayer.Skip.headerOnly.description,
      "extended advertising header only: the data is in the AUX_ADV_IND")
  }

  func testNoAdvAIsSkipped() {
    XCTAssertEqual(
      decode(packet(payload(mode: 0, flags: 0x08, fields: [0, 0x10], data: data))),
      .skipped(.noAdvertiserAddress))
    // No extended header at all: AdvData only (an AUX_CHAIN_IND).
    XCTAssertEqual(decode(packet([0x00] + data)), .skipped(.noAdvertiserAddress))
  }

  func testEmptyPayloadIsMalformed() {
    guard case .malformed(let why) = decode(packet([])) else { return XCTFail() }
    XCTAssertTrue(why.contains("extended advertising PDU length 0"), why)
  }

  func testExtendedHeaderPastThePDUIsMalformed() {
    // Header length 10, 7 bytes follow.
    XCTAssertEqual(
      decode(packet([0x0A, 0x01] + adva)),
      .malformed(
        "extended advertising header length 10 runs past the PDU (7 bytes follow the length byte)"))
  }

  func testFlagsAnnouncingMoreThanTheHeaderHoldsIsMalformed() {
    // Flags say AdvA and TargetA (13 bytes with the flags); the header is 7.
    XCTAssertEqual(
      decode(packet([0x07, 0x03] + adva + data)),
      .malformed(
        "extended advertising header length 7 is too short for the fields its flags announce "
          + "(13 bytes)"))
    // SyncInfo alone needs 19.
    guard case .malformed = decode(packet([0x05, 0x20, 0, 0, 0, 0] + data)) else {
      return XCTFail("SyncInfo past the header")
    }
  }

  func testReservedAdvModeIsMalformed() {
    XCTAssertEqual(
      decode(packet(payload(mode: 3, flags: 0x01, fields: adva, data: data))),
      .malformed("extended advertising AdvMode 3 is reserved (connectable and scannable at once)"))
  }

  func testHeaderLengthByteHasAdvModeInItsTopBits() {
    // 0x87 = AdvMode 2, length 7: the mode bits must not count as length.
    guard case .report(let s) = decode(packet([0x87, 0x01] + adva + data)) else {
      return XCTFail("expected a report")
    }
    XCTAssertEqual(s.pdu, "ext_scan")
    XCTAssertEqual(s.data, data)
  }

  func testReplayCountsSkipsAndWritesExtendedEvents() throws {
    var writer = CaptureWriter(
      container: .pcap(bigEndian: false, nanoseconds: false), linkType: 256)
    let pdus = [
      packet(payload(mode: 0, flags: 0x19, fields: adva + [0, 0x10] + [1, 2, 3], data: [])),
      packet(payload(mode: 0, flags: 0x01, fields: adva, data: data)),
      packet([0x0A, 0x01] + adva),
    ]
    for (i, p) in pdus.enumerated() {
      p.withUnsafeBytes {
        XCTAssertTrue(
          writer.append(CaptureRecord(timestamp: Int64(i), packet: .linkLayer($0, rssi: -50))))
      }
    }
    var replay = CaptureReplay()
    var reports: [String] = []
    var events: [[UInt8]] = []
    var rejects: [String] = []
    try writer.bytes.withUnsafeBytes {
      try replay.run(
        $0, report: { _, r in reports.append(r.pdu.name) }, reject: { rejects.append($2) },
        event: { events.append(Array($1)) })
    }
    XCTAssertEqual(reports, ["ext"])
    XCTAssertEqual(replay.skippedLinkLayer, [.headerOnly: 1])
    XCTAssertEqual(replay.malformedLinkLayer, 1)
    XCTAssertEqual(rejects.count, 1)
    // The extended report goes out as an LE Extended Advertising Report.
    XCTAssertEqual(events.count, 1)
    XCTAssertEqual(Array(events.first?.prefix(3) ?? []), [0x3E, UInt8(26 + data.count), 0x0D])
  }
}
