import EarshotTestSupport
import XCTest

@testable import EarshotCore

final class AdvertisingEventDecoderTests: XCTestCase {
  struct Got {
    var outcome: AdvertisingEventDecoder.Outcome
    var reports:
      [(
        pdu: AdvertisingPDU, address: String, rssi: Int8?, tx: Int8?, data: [UInt8],
        status: DataStatus
      )]
  }

  func run(_ decoder: inout AdvertisingEventDecoder, _ event: [UInt8]) -> Got {
    var got = Got(outcome: .notAdvertising, reports: [])
    got.outcome = event.withUnsafeBytes { raw in
      decoder.decode(event: raw) { r in
        got.reports.append(
          (r.pdu, r.address.description, r.rssi, r.txPower, Array(r.data), r.dataStatus))
      }
    }
    return got
  }

  func run(_ event: [UInt8]) -> Got {
    var d = AdvertisingEventDecoder()
    return run(&d, event)
  }

  let beaconAD = hex(
    "0201061aff4c0002158f2c1a3e5b7d4e90a1c23d4e5f60718200010 00ac5".replacingOccurrences(
      of: " ", with: ""))

  func testOneLegacyReportFieldByField() throws {
    // 3E len 02 | 01 | 03 (ADV_NONCONN_IND) 01 (random) addr | len data | rssi
    let event =
      [
        0x3E, UInt8(12 + beaconAD.count), 0x02, 0x01, 0x03, 0x01, 0x06, 0x05, 0x04, 0x03, 0x02,
        0xC1,
        UInt8(beaconAD.count),
      ] + beaconAD + [0xBD]
    let got = run(event)
    XCTAssertEqual(got.outcome, .reports(1))
    let r = try XCTUnwrap(got.reports.first)
    XCTAssertEqual(r.pdu, .advNonconnInd)
    XCTAssertEqual(r.address, "C1:02:03:04:05:06")
    XCTAssertEqual(r.rssi, -67)
    XCTAssertEqual(r.data, beaconAD)
    let b = try XCTUnwrap(r.data.withUnsafeBytes { TrackedBeacon.iBeacon(advertisingData: $0) })
    XCTAssertEqual(b.id.description, "8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182:1:10")
    XCTAssertEqual(b.measuredPower, -59)
  }

  /// A controller resolving addresses itself reports the identity with
  /// address type 0x02 (public identity) or 0x03 (random static identity),
  /// in legacy and extended reports alike; 0x04 is not a type.
  func testResolvedIdentityAddressTypes() {
    func types(_ event: [UInt8]) -> [AddressType] {
      var got: [AddressType] = []
      var d = AdvertisingEventDecoder()
      _ = event.withUnsafeBytes { raw in d.decode(event: raw) { got.append($0.addressType) } }
      return got
    }
    let a: [UInt8] = [0x00, 0x02, 1, 2, 3, 4, 5, 6, 0, 0xC0]
    let b: [UInt8] = [0x00, 0x03, 1, 2, 3, 4, 5, 0xC6, 0, 0xC0]
    XCTAssertEqual(
      types([0x3E, UInt8(2 + a.count + b.count), 0x02, 0x02] + a + b),
      [.publicIdentity, .randomIdentity])
    var ext = extendedEvent(type: 0x13, data: [])
    ext[6] = 0x02
    XCTAssertEqual(types(ext), [.publicIdentity])
    ext[6] = 0x03
    XCTAssertEqual(types(ext), [.randomIdentity])
    XCTAssertEqual(types([0x3E, 0x0C, 0x02, 0x01, 0x00, 0x04, 1, 2, 3, 4, 5, 6, 0, 0xC0]), [])
  }

  func testTwoReportsLaidOutOneAfterAnother() {
    let a: [UInt8] = [0x00, 0x00, 1, 2, 3, 4, 5, 6, 3, 0x02, 0x01, 0x06, 0xC0]
    let b: [UInt8] = [0x04, 0x01, 9, 8, 7, 6, 5, 0xC4, 0, 0x7F]
    let event = [0x3E, UInt8(2 + a.count + b.count), 0x02, 0x02] + a + b
    let got = run(event)
    XCTAssertEqual(got.outcome, .reports(2))
    XCTAssertEqual(got.reports.map(\.pdu), [.advInd, .scanRsp])
    XCTAssertEqual(got.reports[0].address, "06:05:04:03:02:01")
    XCTAssertEqual(got.reports[0].rssi, -64)
    XCTAssertEqual(got.reports[1].data, [])
    XCTAssertNil(got.reports[1].rssi, "127 means unavailable")
  }

  func testMalformedEventsAreCountedAndDeliverNothing() {
    var d = AdvertisingEventDecoder()
    // Length byte one too many.
    XCTAssertEqual(
      run(&d, [0x3E, 0x0D, 0x02, 0x01, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 0, 0xC0]).reports.count, 0)
    // Data length overruns the event.
    let overrun = run(&d, [0x3E, 0x0C, 0x02, 0x01, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 5, 0xC0])
    XCTAssertEqual(overrun.outcome, .malformed("advertising data overruns the event"))
    // Two reports announced, one present.
    let short = run(&d, [0x3E, 0x0C, 0x02, 0x02, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 0, 0xC0])
    XCTAssertTrue(short.reports.isEmpty)
    // Trailing garbage after the last report.
    let trailing = run(&d, [0x3E, 0x0D, 0x02, 0x01, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 0, 0xC0, 0xEE])
    XCTAssertEqual(trailing.outcome, .malformed("bytes left over after the last report"))
    XCTAssertEqual(d.stats.malformedEvents, 4)
    XCTAssertEqual(d.stats.reports, 0)
    // Other events are not errors.
    XCTAssertEqual(run(&d, [0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00]).outcome, .notAdvertising)
    XCTAssertEqual(d.stats.malformedEvents, 4)
  }

  func extendedEvent(type: UInt16, sid: UInt8 = 1, rssi: Int8 = -70, tx: Int8 = 127, data: [UInt8])
    -> [UInt8]
  {
    var w = ByteWriter()
    w.u8(0x3E)
    w.u8(UInt8(2 + 24 + data.count))
    w.u8(0x0D)
    w.u8(1)
    w.u16le(type)
    w.u8(0x01)
    w.append([0x11, 0x22, 0x33, 0x44, 0x55, 0xC6])
    w.u8(1)
    w.u8(2)
    w.u8(sid)
    w.i8(tx)
    w.i8(rssi)
    w.u16le(0)
    w.u8(0)
    w.append([0, 0, 0, 0, 0, 0])
    w.u8(UInt8(data.count))
    w.append(data)
    return w.bytes
  }

  func testExtendedFragmentsAreJoinedPerAdvertiser() {
    var d = AdvertisingEventDecoder()
    let part1 = Array(beaconAD.prefix(10))
    let part2 = Array(beaconAD.dropFirst(10))
    let first = run(&d, extendedEvent(type: 0x0000 | 1 << 5, data: part1))
    XCTAssertEqual(first.outcome, .reports(0), "an incomplete fragment waits")
    let last = run(&d, extendedEvent(type: 0x0000, tx: -4, data: part2))
    XCTAssertEqual(last.reports.count, 1)
    XCTAssertEqual(last.reports[0].data, beaconAD)
    XCTAssertEqual(last.reports[0].pdu, .extended([]))
    XCTAssertEqual(last.reports[0].pdu.name, "ext")
    XCTAssertEqual(last.reports[0].tx, -4)
    XCTAssertEqual(d.stats.fragments, 1)
  }

  func testTruncatedDataIsDeliveredAsTruncated() {
    var d = AdvertisingEventDecoder()
    _ = run(&d, extendedEvent(type: 1 << 5, data: [0x02, 0x01]))
    let last = run(&d, extendedEvent(type: 2 << 5, rssi: 127, data: [0x06]))
    XCTAssertEqual(last.reports.count, 1)
    XCTAssertEqual(last.reports[0].status, .truncated)
    XCTAssertEqual(last.reports[0].data, [0x02, 0x01, 0x06])
    XCTAssertNil(last.reports[0].rssi, "RSSI 127 is unavailable")
    XCTAssertEqual(d.stats.truncated, 1)
  }

  func testLegacyBitMapsToLegacyPDUNames() {
    let cases: [(UInt16, String)] = [
      (0x13, "adv_ind"), (0x15, "adv_direct_ind"), (0x12, "adv_scan_ind"),
      (0x10, "adv_nonconn_ind"),
      (0x1B, "scan_rsp"), (0x1A, "scan_rsp"), (0x01, "ext_conn"), (0x0A, "ext_scan_rsp"),
    ]
    for (type, name) in cases {
      XCTAssertEqual(
        AdvertisingPDU(extendedEventType: type)?.name, name, "type 0x\(String(type, radix: 16))")
    }
    XCTAssertNil(
      AdvertisingPDU(extendedEventType: 0x11), "legacy + connectable alone is not a legacy PDU")
  }

  func testDirectedReport() {
    let event: [UInt8] = [
      0x3E, 0x12, 0x0B, 0x01, 0x01, 0x01, 1, 2, 3, 4, 5, 0xC6, 0x00, 6, 5, 4, 3, 2, 1, 0xB0,
    ]
    let got = run(event)
    XCTAssertEqual(got.outcome, .reports(1))
    XCTAssertEqual(got.reports.first?.pdu, .advDirectInd)
    XCTAssertEqual(got.reports.first?.rssi, -80)
  }

  /// Every prefix of a valid event, its length byte fixed to match (so
  /// the cut reaches the reports) and as cut (so it does not): each is
  /// malformed, delivers nothing and leaves no state behind; the whole
  /// event then decodes on the same decoder.
  func assertEveryTruncationIsMalformed(
    _ event: [UInt8], reports: Int, file: StaticString = #filePath, line: UInt = #line
  ) {
    var d = AdvertisingEventDecoder()
    var cuts = 0
    for cut in 0..<event.count {
      var fixed = Array(event.prefix(cut))
      if cut >= 2 { fixed[1] = UInt8(cut - 2) }
      for prefix in [fixed, Array(event.prefix(cut))] {
        let got = run(&d, prefix)
        guard case .malformed = got.outcome else {
          XCTFail("cut at \(cut): \(got.outcome)", file: file, line: line)
          continue
        }
        XCTAssertTrue(got.reports.isEmpty, "cut at \(cut)", file: file, line: line)
        cuts += 1
      }
    }
    XCTAssertEqual(d.stats.malformedEvents, cuts, file: file, line: line)
    XCTAssertEqual(d.stats.reports, 0, file: file, line: line)
    XCTAssertEqual(d.stats.malformedReports, 0, file: file, line: line)
    XCTAssertEqual(
      d.stats.fragments, 0, "no fragment kept from a cut event", file: file, line: line)
    XCTAssertEqual(d.pendingChains, 0, file: file, line: line)
    XCTAssertEqual(run(&d, event).outcome, .reports(reports), file: file, line: line)
  }

  func testEveryTruncationOfALegacyEventIsMalformed() {
    let a: [UInt8] = [0x00, 0x00, 1, 2, 3, 4, 5, 6, 3, 0x02, 0x01, 0x06, 0xC0]
    let b: [UInt8] = [0x04, 0x01, 9, 8, 7, 6, 5, 0xC4, 0, 0x7F]
    let c: [UInt8] =
      [0x03, 0x01, 0x06, 0x05, 0x04, 0x03, 0x02, 0xC1, UInt8(beaconAD.count)]
      + beaconAD + [0xBD]
    let event = [0x3E, UInt8(2 + a.count + b.count + c.count), 0x02, 0x03] + a + b + c
    XCTAssertEqual(run(event).reports.map(\.pdu), [.advInd, .scanRsp, .advNonconnInd])
    assertEveryTruncationIsMalformed(event, reports: 3)
  }

  /// Two fragments of one chain and a whole report from another set, in
  /// one event: cut anywhere, the first fragment is not kept either.
  func testEveryTruncationOfAnExtendedEventIsMalformed() {
    func report(_ event: [UInt8]) -> ArraySlice<UInt8> { event.dropFirst(4) }
    let part1 = Array(beaconAD.prefix(10))
    let part2 = Array(beaconAD.dropFirst(10))
    let reports =
      report(extendedEvent(type: 1 << 5, data: part1))
      + report(extendedEvent(type: 0, tx: -4, data: part2))
      + report(extendedEvent(type: 0x13, sid: 2, data: [0x02, 0x01, 0x06]))
    let event = [0x3E, UInt8(2 + reports.count), 0x0D, 3] + reports
    var d = AdvertisingEventDecoder()
    let whole = run(&d, event)
    XCTAssertEqual(whole.outcome, .reports(2))
    XCTAssertEqual(whole.reports.map(\.data), [beaconAD, [0x02, 0x01, 0x06]])
    assertEveryTruncationIsMalformed(event, reports: 2)
  }

  func testEveryTruncationOfADirectedEventIsMalformed() {
    let a: [UInt8] = [0x01, 0x01, 1, 2, 3, 4, 5, 0xC6, 0x00, 6, 5, 4, 3, 2, 1, 0xB0]
    let b: [UInt8] = [0x01, 0x00, 7, 7, 7, 7, 7, 7, 0x01, 6, 5, 4, 3, 2, 0xC1, 0xA0]
    let event = [0x3E, UInt8(2 + a.count + b.count), 0x0B, 0x02] + a + b
    assertEveryTruncationIsMalformed(event, reports: 2)
  }

  func testRandomBytesNeverCrashAndAreCounted() {
    var d = AdvertisingEventDecoder()
    var seed: UInt64 = 42
    var delivered = 0
    for _ in 0..<20_000 {
      seed = seed &* 6_364_136_223_846_793_005 &+ 1
      let n = Int(seed >> 58) + 2
      var bytes = [UInt8](repeating: 0, count: n)
      for i in 0..<n {
        seed = seed &* 6_364_136_223_846_793_005 &+ 1
        bytes[i] = UInt8(truncatingIfNeeded: seed >> 33)
      }
      bytes[0] = 0x3E
      if seed & 1 == 0 { bytes[1] = UInt8(n - 2) }
      if case .reports(let k) = run(&d, bytes).outcome { delivered += k }
    }
    XCTAssertEqual(delivered, d.stats.reports)
    XCTAssertGreaterThan(d.stats.malformedEvents, 1000)
  }
}
