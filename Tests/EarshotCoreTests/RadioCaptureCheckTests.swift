import EarshotTestSupport
import XCTest

@testable import EarshotCore

/// The independent check of the closed loop: the air's capture, filtered by
/// the schedule the host wrote (read back from the btsnoop, nothing taken
/// from the simulation), gives exactly the PDUs the host reported.
final class RadioCaptureCheckTests: XCTestCase {
  func testTheAirFilteredByTheWrittenScheduleGivesTheReports() throws {
    let sim = RadioSimulation.house(hours: 0.2, seed: 3)
    var captures: [(air: [UInt8], scan: [UInt8])] = []
    for power in [PowerSupply.battery, .mains] {
      var capture = RadioCapture(sim)
      _ = sim.run(schedule: ScanScheduleSettings(), power: power) { capture.add($0) }
      captures.append(capture.takeBytes())
      XCTAssertEqual(
        capture.heardPDUs, try RadioCaptureCheck.readScan(captures.last!.scan).reports.count)
    }
    // The same air whatever the schedule.
    XCTAssertEqual(captures[0].air, captures[1].air)
    XCTAssertNotEqual(captures[0].scan, captures[1].scan)

    for (air, scan) in captures {
      let (spans, reports) = try RadioCaptureCheck.readScan(scan)
      let (heard, pdus) = try RadioCaptureCheck.filter(air: air, by: spans)
      // Not a trivial filter: sampled spans, most of the air not heard.
      XCTAssertTrue(spans.contains { $0.window < $0.interval })
      XCTAssertGreaterThan(spans.count, 5)
      XCTAssertGreaterThan(reports.count, 500)
      XCTAssertLessThan(heard.count, pdus / 2)
      XCTAssertEqual(heard.count, reports.count)
      XCTAssertEqual(heard.first(where: { !reports.contains($0) }), nil)
      XCTAssertTrue(heard == reports, "the filtered air is the reports, in order")
    }
  }

  func testTheCapturesReadAsTheyWereWritten() throws {
    // A PDU on each channel: the pseudo-header's RF channel maps back.
    for channel: UInt8 in [37, 38, 39, 0, 10, 11, 36] {
      let pdu = LinkLayer.legacyPDU(
        .advNonconnInd, address: BDAddress(raw: 0xC000_0000_0001), addressType: .random,
        data: [0x02, 0x01, 0x06])!
      var w = CaptureWriter(container: .pcap(bigEndian: false, nanoseconds: false), linkType: 256)
      pdu.withUnsafeBytes {
        _ = w.append(
          CaptureRecord(timestamp: 5, packet: .linkLayer($0, rssi: -60, channel: channel)))
      }
      try w.bytes.withUnsafeBytes { raw in
        var reader = try CaptureReader(raw)
        guard case .linkLayer(let back, let rssi, let c, _) = reader.next()?.packet,
          case .report(let r) = LinkLayer.decode(back, rssi: rssi)
        else { return XCTFail("channel \(channel)") }
        XCTAssertEqual(c, channel)
        XCTAssertEqual(r.address, BDAddress(raw: 0xC000_0000_0001))
        XCTAssertEqual(r.addressType, .random)
        XCTAssertEqual(r.pdu, .advNonconnInd)
        XCTAssertEqual(Array(r.data), [0x02, 0x01, 0x06])
      }
    }
    // Advertising channels sit at RF 0, 12 and 39 (2402, 2426, 2480 MHz).
    XCTAssertEqual([37, 38, 39].map { LinkLayer.rf(channel: $0) }, [0, 12, 39])
    XCTAssertNil(LinkLayer.channel(rf: 40))
  }
}
