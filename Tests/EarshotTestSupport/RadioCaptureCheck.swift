import EarshotCore
import XCTest

/// The independent check of a run through a simulated radio (docs/scanning.md):
/// the schedule is read back from the run's btsnoop (its HCI commands), and
/// the air's capture filtered by it must give the run's reports. Nothing
/// here comes from the simulation's code but the capture readers.
public enum RadioCaptureCheck {
  /// A scan enabled from `from` to `to` (µs on the captures' clock).
  public struct Span {
    public var from: Int64
    public var to: Int64
    public var interval: Int64
    public var window: Int64
  }

  public struct Heard: Equatable, CustomStringConvertible {
    public var t: Int64
    public var address: BDAddress
    public var description: String { "\(t) \(address)" }
  }

  /// The schedule and the reports in a scan capture.
  public static func readScan(_ bytes: [UInt8]) throws -> (spans: [Span], reports: [Heard]) {
    var spans: [Span] = []
    var reports: [Heard] = []
    var interval: Int64 = 0
    var window: Int64 = 0
    var enabledAt: Int64?
    try bytes.withUnsafeBytes { raw in
      var reader = try CaptureReader(raw)
      while let r = reader.next() {
        switch r.packet {
        case .hciCommand(let b):
          let opcode = UInt16(b[0]) | UInt16(b[1]) << 8
          let p = Array(b[3...])
          if opcode == 0x200B {  // LE Set Scan Parameters
            XCTAssertEqual(p[0], 0, "passive")
            interval = Int64(UInt16(p[1]) | UInt16(p[2]) << 8) * 625
            window = Int64(UInt16(p[3]) | UInt16(p[4]) << 8) * 625
          } else if opcode == 0x200C {  // LE Set Scan Enable
            if p[0] == 1 {
              enabledAt = r.timestamp
            } else if let from = enabledAt {
              spans.append(Span(from: from, to: r.timestamp, interval: interval, window: window))
              enabledAt = nil
            }
          }
        case .hciEvent(let b):
          // LE Meta, Advertising Report, one report: the address at 6.
          XCTAssertEqual(Array(b[0..<4]), [0x3E, b[1], 0x02, 1])
          let address = b[6..<12].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
          reports.append(Heard(t: r.timestamp, address: BDAddress(raw: address)))
        default:
          XCTFail("unexpected record")
        }
      }
      XCTAssertNil(reader.failure)
    }
    if let from = enabledAt {
      spans.append(Span(from: from, to: .max, interval: interval, window: window))
    }
    return (spans, reports)
  }

  /// The air's PDUs a controller following `spans` hears: one channel per
  /// scan interval, 37 first at each enable, for the window at its start.
  public static func filter(air: [UInt8], by spans: [Span]) throws -> (heard: [Heard], pdus: Int) {
    var heard: [Heard] = []
    var pdus = 0
    var s = 0
    try air.withUnsafeBytes { raw in
      var reader = try CaptureReader(raw)
      while let r = reader.next() {
        guard case .linkLayer(let pdu, _, let channel, _) = r.packet,
          case .report(let report) = LinkLayer.decode(pdu, rssi: nil)
        else {
          XCTFail("not an advertising PDU")
          continue
        }
        pdus += 1
        let t = r.timestamp
        while s < spans.count && spans[s].to <= t { s += 1 }
        guard s < spans.count, spans[s].from <= t else { continue }
        let span = spans[s]
        let k = (t - span.from) / span.interval
        if (t - span.from) - k * span.interval < span.window, channel == UInt8(37 + k % 3) {
          heard.append(Heard(t: t, address: report.address))
        }
      }
      XCTAssertNil(reader.failure)
    }
    return (heard, pdus)
  }
}
