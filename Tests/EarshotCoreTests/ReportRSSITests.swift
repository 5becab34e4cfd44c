import EarshotTestSupport
import XCTest

@testable import EarshotCore

final class ReportRSSITests: XCTestCase {
  func testOneTwentySevenIsNotAvailableInEveryReportType() {
    for report in [ReportRSSI.Report.legacy, .directed, .extended] {
      XCTAssertNil(ReportRSSI.decode(127, in: report))
      XCTAssertEqual(ReportRSSI.decode(-127, in: report), -127, "the spec's lowest reading")
      XCTAssertEqual(ReportRSSI.decode(20, in: report), 20, "the spec's highest reading")
    }
  }

  func testMinus128IsNotAvailableOnlyInLegacyReports() {
    XCTAssertNil(ReportRSSI.decode(-128, in: .legacy))
    XCTAssertEqual(ReportRSSI.decode(-128, in: .directed), -128)
    XCTAssertEqual(ReportRSSI.decode(-128, in: .extended), -128)
  }

  func testEncodeWritesTheSentinelForNoMeasurement() {
    XCTAssertEqual(ReportRSSI.encode(nil), 127)
    XCTAssertEqual(ReportRSSI.encode(-60), -60)
  }

  /// The decoder and the encoder use the rule: an encoded report without
  /// RSSI decodes without RSSI, in both report types; a legacy report with
  /// -128 decodes without.
  func testDecoderAndEncoderAgree() throws {
    let none = UnsafeRawBufferPointer(start: nil, count: 0)
    for rssi: Int8? in [nil, -60] {
      let report = AdvertisingReport(
        pdu: .advInd, address: BDAddress(raw: 0x0102_0304_0506), addressType: .public,
        rssi: rssi, data: none)
      for event in [HCIEventEncoder.legacyReport(report), HCIEventEncoder.extendedReport(report)] {
        let bytes = try XCTUnwrap(event)
        var decoder = AdvertisingEventDecoder()
        var got: [Int8?] = []
        _ = bytes.withUnsafeBytes { decoder.decode(event: $0) { got.append($0.rssi) } }
        XCTAssertEqual(got, [rssi])
      }
    }
    var legacy = try XCTUnwrap(
      HCIEventEncoder.legacyReport(
        AdvertisingReport(
          pdu: .advInd, address: BDAddress(raw: 1), addressType: .public, rssi: -1, data: none)))
    legacy[legacy.count - 1] = 0x80  // RSSI -128
    var decoder = AdvertisingEventDecoder()
    var got: [Int8?] = []
    _ = legacy.withUnsafeBytes { decoder.decode(event: $0) { got.append($0.rssi) } }
    XCTAssertEqual(got, [nil])
  }
}
