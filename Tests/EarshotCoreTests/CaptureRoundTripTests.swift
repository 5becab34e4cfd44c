import EarshotTestSupport
import XCTest

@testable import EarshotCore

final class CaptureRoundTripTests: XCTestCase {
  struct Line: Equatable {
    let micros: Int64
    let address: BDAddress
    let pdu: String
    let rssi: Int8?
    let data: [UInt8]
  }

  func read(_ bytes: [UInt8]) throws -> [Line] {
    var lines: [Line] = []
    var replay = CaptureReplay()
    try bytes.withUnsafeBytes { raw in
      try replay.run(raw) { t, r in
        lines.append(
          Line(micros: t, address: r.address, pdu: r.pdu.name, rssi: r.rssi, data: Array(r.data)))
      }
    }
    return lines
  }

  func testWrittenCaptureReadsBackTheSameReports() throws {
    let original = SyntheticCapture.busyRoom(reports: 500)
    let first = try read(original.bytes)
    XCTAssertEqual(first.count, 500)
    // Re-record every event as the scanner does with --write.
    var rewritten = BtsnoopWriter.header
    var replay = CaptureReplay()
    try original.bytes.withUnsafeBytes { raw in
      try replay.run(
        raw, report: { _, _ in },
        event: { t, e in rewritten += BtsnoopWriter.record(event: e, micros: t) })
    }
    XCTAssertEqual(try read(rewritten), first)
    XCTAssertEqual(rewritten, original.bytes, "the writer is byte-exact")
  }

  func testTimestampsSurviveInMicroseconds() throws {
    var c = SyntheticCapture()
    let beacon = TrackedBeacon(
      id: TrackedID(uuid: BeaconUUID(high: 1, low: 2), major: 3, minor: 4), measuredPower: -59)
    c.appendBeacon(
      micros: 1_767_225_600_123_456, beacon: beacon, address: BDAddress(raw: 0xC102_0304_0506),
      rssi: -67)
    c.appendBeacon(
      micros: 1_767_225_601_000_001, beacon: beacon, address: BDAddress(raw: 0xC102_0304_0506),
      rssi: nil,
      extended: true)
    let lines = try read(c.bytes)
    XCTAssertEqual(lines.map(\.micros), [1_767_225_600_123_456, 1_767_225_601_000_001])
    XCTAssertEqual(lines.map(\.pdu), ["adv_nonconn_ind", "adv_nonconn_ind"])
    XCTAssertEqual(lines.map(\.rssi), [-67, nil])
    XCTAssertEqual(ReportFormatter.seconds(lines[0].micros), "1767225600.123456")
  }

  func testTruncatedCaptureDeliversWhatCameBefore() throws {
    let bytes = SyntheticCapture.busyRoom(reports: 10).bytes
    var replay = CaptureReplay()
    var n = 0
    try Array(bytes.dropLast(5)).withUnsafeBytes { raw in try replay.run(raw) { _, _ in n += 1 } }
    XCTAssertEqual(n, 9)
    XCTAssertTrue(replay.truncated)
  }

  func testUnknownFormatIsAClearError() {
    let junk = [UInt8]("hello world, not a capture".utf8)
    XCTAssertThrowsError(try junk.withUnsafeBytes { try CaptureReader($0).format }) {
      XCTAssertEqual("\($0)", "not a btsnoop, pcap or pcapng capture (unknown magic number)")
    }
  }
}
