import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotCore

/// `earshot scan --all` with the config's `[layout "NAME"]` sections, and
/// sniffed extended advertising, through the real binary.
final class ScanLayoutTests: XCTestCase {
  var tmp: String { NSTemporaryDirectory() + "earshot-layout-\(getpid())-\(name.hashValue)" }

  /// A btsnoop of one legacy report per AD payload, from 06:05:04:03:02:01.
  func capture(_ payloads: [[UInt8]]) -> [UInt8] {
    var out = BtsnoopWriter.header
    for (i, data) in payloads.enumerated() {
      data.withUnsafeBytes { d in
        let r = AdvertisingReport(
          pdu: .advNonconnInd, address: BDAddress(raw: 0x0605_0403_0201), addressType: .random,
          rssi: -60, data: d)
        let event = HCIEventEncoder.legacyReport(r)!
        event.withUnsafeBytes {
          out += BtsnoopWriter.record(event: $0, micros: 1_767_225_600_000_000 + Int64(i))
        }
      }
    }
    return out
  }

  func write(_ bytes: [UInt8], _ path: String) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
  }

  func frames(_ stdout: String) -> [String] {
    stdout.split(separator: "\n").compactMap { line in
      line.range(of: "\"frames\":").map { String(line[$0.upperBound...]) }
    }
  }

  func testAConfigLayoutDecodesThroughTheBinaryAndBuiltInsStillWin() throws {
    let acme = hex("0FFF ffff ac1e 010203040506 002a c5 07")
    let alt = hex("1BFF 1801 beac 2f234454cf6d4a0fadf2f4911ba9ffa6 0001 0002 c5 00")
    let input = tmp + ".btsnoop"
    let conf = tmp + ".conf"
    defer {
      try? FileManager.default.removeItem(atPath: input)
      try? FileManager.default.removeItem(atPath: conf)
    }
    try write(capture([acme, alt]), input)
    try """
    [layout "acme"]
    layout = m:2-3=ac1e,i:4-9,i:10-11,p:12-12,d:13-13

    [layout "greedy"]
    layout = m:2-3=beac,i:4-19,p:24-24
    """.write(toFile: conf, atomically: true, encoding: .utf8)

    let without = try Earshot.run(
      ["scan", "--all", "--input", input], environment: ["EARSHOT_CONFIG": "/nonexistent"])
    XCTAssertEqual(without.status, 0, without.stderr)
    XCTAssertEqual(frames(without.stdout).count, 1, "only the AltBeacon without the config")

    let with = try Earshot.run(["scan", "--all", "--input", input, "--config", conf])
    XCTAssertEqual(with.status, 0, with.stderr)
    let f = frames(with.stdout)
    XCTAssertEqual(f.count, 2, with.stdout)
    XCTAssertEqual(
      f.first,
      #"[{"frame":"acme","company":65535,"ids":["010203040506","002a"],"power":-59,"data":["07"]}]}"#
    )
    XCTAssertTrue(f.last?.hasPrefix(#"[{"frame":"AltBeacon""#) ?? false, "the built-in row wins")
  }

  func testABadLayoutIsRefusedByCheckConfigScanAndRun() throws {
    let conf = tmp + ".conf"
    defer { try? FileManager.default.removeItem(atPath: conf) }
    try "[layout \"acme\"]\nlayout = m:2-3=ac1e,i:4-9,p:12-13\n"
      .write(toFile: conf, atomically: true, encoding: .utf8)
    let expected =
      "\(conf):2: [layout \"acme\"] layout: beacon layout term 'p:12-13': the power is one signed byte"
    let check = try Earshot.run(["check-config", "--config", conf])
    XCTAssertEqual(check.status, 1)
    XCTAssertTrue(check.stderr.contains(expected), check.stderr)
    let scan = try Earshot.run(["scan", "--all", "--input", "/dev/null", "--config", conf])
    XCTAssertEqual(scan.status, 1)
    XCTAssertTrue(scan.stderr.contains(expected), scan.stderr)
    // The agent refuses it at start, before it opens anything.
    let run = try Earshot.run(["run", "--config", conf])
    XCTAssertEqual(run.status, 1)
    XCTAssertTrue(run.stderr.contains(expected), run.stderr)
  }

  func testSniffedExtendedHeaderOnlyIsCountedOnStandardError() throws {
    let aa: [UInt8] = [0xD6, 0xBE, 0x89, 0x8E]
    let adva: [UInt8] = [1, 2, 3, 4, 5, 6]
    // ADV_EXT_IND: AdvA, ADI, AuxPtr, no data; then an AUX_ADV_IND with data.
    let header = aa + [0x07, 13, 0x0C, 0x19] + adva + [0x00, 0x10, 1, 2, 3]
    let data: [UInt8] = [0x02, 0x01, 0x06]
    let aux = aa + [0x07, UInt8(10 + data.count), 0x09, 0x09] + adva + [0x00, 0x10] + data
    var writer = CaptureWriter(
      container: .pcap(bigEndian: false, nanoseconds: false), linkType: 256)
    for (i, p) in [header, aux].enumerated() {
      p.withUnsafeBytes {
        XCTAssertTrue(
          writer.append(CaptureRecord(timestamp: Int64(i), packet: .linkLayer($0, rssi: -50))))
      }
    }
    let input = tmp + ".pcap"
    defer { try? FileManager.default.removeItem(atPath: input) }
    try write(writer.bytes, input)
    let r = try Earshot.run(
      ["scan", "--all", "--input", input], environment: ["EARSHOT_CONFIG": "/nonexistent"])
    XCTAssertEqual(r.status, 0, r.stderr)
    let lines = r.stdout.split(separator: "\n")
    XCTAssertEqual(lines.count, 1, r.stdout)
    XCTAssertTrue(lines.first?.contains(#""event_type":"ext""#) ?? false, r.stdout)
    XCTAssertTrue(lines.first?.contains(#""sid":1"#) ?? false, r.stdout)
    XCTAssertEqual(
      r.stderr,
      "earshot scan: \(input): 1 link-layer PDU(s) skipped: extended advertising header only: "
        + "the data is in the AUX_ADV_IND\n")
  }
}
