import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotCore

/// Sniffer captures replayed by Earshot give the reports Wireshark's tshark
/// reads in the same files, frame by frame: every LINKTYPE 256 capture in
/// ../shared/data/ble/captures (the HackRF ones fail their CRC-24 by the
/// hundred and say it was not checked), every LINKTYPE 272 capture there,
/// and, since shared holds no nRF Sniffer capture, LINKTYPE 272 files made
/// from those 256 ones in all four header versions by
/// scripts/nordic-capture.py (the packets' bytes unchanged; its header
/// says what it fills in).
///
/// tshark runs with the AD dissector off, so that a malformed AD structure
/// does not stop it before the CRC and the AD bytes come out whole.
final class SnifferConformanceTests: XCTestCase {
  static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

  /// One report as both readers see it: frame, PDU type, TxAdd, AdvA, RSSI, AD.
  struct Report: Hashable, CustomStringConvertible {
    var frame: Int
    var pdu: Int
    var random: Bool
    var address: String
    var rssi: Int?
    var data: String
    var description: String {
      "#\(frame) type \(pdu) \(address)\(random ? " random" : "") rssi \(rssi.map(String.init) ?? "-") \(data)"
    }
  }

  /// What tshark says about the advertising-channel frames of a capture.
  struct Expected {
    var reports: [Report] = []
    /// Frames whose CRC tshark found wrong (its own check, or the capture's word).
    var crcBad: Set<Int> = []
    /// Frames tshark could not dissect to their end (so it has no CRC verdict).
    var malformed: Set<Int> = []
    /// Frames whose nRF Sniffer header says "CRC bad", any access address.
    var nordicCRCBad = 0
  }

  struct Replayed {
    var reports: [Report] = []
    var crcBad: Set<Int> = []
    var crcFailures = 0
    var records = 0
  }

  func tshark() throws -> String {
    guard let path = Earshot.tool("tshark") else {
      try requireResource("tshark (package tshark, scripts/deps.sh test)")
    }
    return path
  }

  func expected(_ file: String) throws -> Expected {
    let fields = [
      "frame.number", "btle.access_address", "btle.advertising_header.pdu_type",
      "btle.advertising_header.randomized_tx", "btle.advertising_address", "btle_rf.signal_dbm",
      "nordic_ble.rssi", "data.data", "btle.crc.incorrect", "_ws.malformed", "nordic_ble.crcok",
    ]
    let r = try Earshot.run(
      ["--disable-protocol", "btcommon", "-r", file, "-T", "fields", "-E", "occurrence=f"]
        + fields.flatMap { ["-e", $0] }, executable: tshark())
    XCTAssertEqual(r.status, 0, r.stderr)
    var e = Expected()
    for line in r.stdout.split(separator: "\n") {
      let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
      guard f.count == fields.count, let frame = Int(f[0]) else {
        XCTFail("tshark line: \(line)")
        continue
      }
      if f[10] == "0" { e.nordicCRCBad += 1 }
      guard f[1] == "0x8e89bed6" else { continue }
      if !f[8].isEmpty { e.crcBad.insert(frame) }
      if !f[9].isEmpty { e.malformed.insert(frame) }
      guard f[8].isEmpty, f[9].isEmpty, let pdu = Int(f[2].dropFirst(2), radix: 16),
        [0, 1, 2, 4, 6, 7].contains(pdu)
      else { continue }
      e.reports.append(
        Report(
          frame: frame, pdu: pdu, random: f[3] == "1", address: f[4],
          rssi: Int(f[5]) ?? Int(f[6]), data: f[7]))
    }
    return e
  }

  func replayed(_ file: String) throws -> Replayed {
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
    var out = Replayed()
    var replay = CaptureReplay()
    try bytes.withUnsafeBytes { raw in
      var reader = try CaptureReader(raw)
      var frame = 0
      while let record = reader.next() {
        frame += 1
        let before = replay.crcFailures
        replay.handle(record) { _, r in
          let type: Int
          switch r.pdu {
          case .advInd: type = 0
          case .advDirectInd: type = 1
          case .advNonconnInd: type = 2
          case .scanRsp: type = 4
          case .advScanInd: type = 6
          case .extended: type = 7
          }
          out.reports.append(
            Report(
              frame: frame, pdu: type, random: r.addressType == .random,
              address: r.address.description.lowercased(), rssi: r.rssi.map(Int.init),
              data: r.data.map { String(format: "%02x", $0) }.joined()))
        }
        if replay.crcFailures > before, case .linkLayer(let p, _, _, _) = record.packet {
          var b = ByteReader(p)
          if b.u32le() == LinkLayer.advertisingAccessAddress { out.crcBad.insert(frame) }
        }
      }
      try replay.finish(reader)
    }
    out.crcFailures = replay.crcFailures
    out.records = replay.records
    return out
  }

  /// Compares one capture; returns a line of figures.
  func compare(_ file: String, nordic: Bool) throws -> String {
    let want = try expected(file)
    let got = try replayed(file)
    let name = URL(fileURLWithPath: file).lastPathComponent
    XCTAssertGreaterThan(want.reports.count, 50, name)
    XCTAssertEqual(got.reports.count, want.reports.count, name)
    for (a, b) in zip(got.reports, want.reports) where a != b {
      XCTFail("\(name): Earshot \(a), tshark \(b)")
      break
    }
    // Every frame tshark finds CRC-bad Earshot skips for its CRC; the ones
    // only Earshot counts are frames tshark gave up on before the CRC.
    XCTAssertEqual(want.crcBad.subtracting(got.crcBad), [], "\(name): CRC failures Earshot missed")
    XCTAssertEqual(
      got.crcBad.subtracting(want.crcBad).subtracting(want.malformed), [],
      "\(name): CRC failures tshark does not see")
    if nordic { XCTAssertEqual(got.crcFailures, want.nordicCRCBad, name) }
    XCTAssertGreaterThan(got.crcFailures, 0, "\(name): the capture was chosen for its bad CRCs")
    return
      "\(name): \(got.records) packets, \(got.crcFailures) CRC failures skipped "
      + "(tshark: \(want.crcBad.count) advertising-channel), \(got.reports.count) reports compared"
  }

  func captures(linkType: UInt32) throws -> [String] {
    let dir = try SharedData.url("ble/captures")
    return try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted().compactMap {
      name -> String? in
      let path = dir.appendingPathComponent(name).path
      guard name.hasSuffix(".pcap"),
        let head = FileManager.default.contents(atPath: path)?.prefix(24), head.count == 24
      else { return nil }
      let bytes = [UInt8](head)
      let le = bytes[0] == 0xD4 || bytes[0] == 0x4D
      let raw = bytes[20..<24].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
      return (le ? raw.byteSwapped : raw) & 0x0FFF_FFFF == linkType ? path : nil
    }
  }

  func testLinkType256CapturesWithBadCRCsMatchTshark() throws {
    let files = try captures(linkType: 256)
    XCTAssertGreaterThanOrEqual(files.count, 3, "the shared LINKTYPE 256 captures")
    for file in files { print(try compare(file, nordic: false)) }
  }

  func testNordicCapturesMatchTshark() throws {
    _ = try tshark()
    let shared = try captures(linkType: 272)
    for file in shared { print(try compare(file, nordic: true)) }
    // None in shared today: made from the real packets of the 256 ones.
    print("LINKTYPE 272 captures in shared: \(shared.count); made from the 256 ones:")
    let dir = FileManager.default.temporaryDirectory
      .appendingPathComponent("earshot-nordic-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let script = Self.repo.appendingPathComponent("scripts/nordic-capture.py").path
    guard let python = Earshot.tool("python3") else { try requireResource("python3") }
    var made = 0
    for source in try captures(linkType: 256) {
      for version in 0...3 {
        let out = dir.appendingPathComponent(
          URL(fileURLWithPath: source).deletingPathExtension().lastPathComponent
            + ".nordic-v\(version).pcap"
        ).path
        let r = try Earshot.run([script, source, out, "\(version)"], executable: python)
        XCTAssertEqual(r.status, 0, r.stderr)
        print(try compare(out, nordic: true))
        made += 1
      }
    }
    XCTAssertGreaterThanOrEqual(made, 12)
  }
}
