import EarshotTestSupport
import Foundation
import XCTest

/// The `earshot scan` front door, run as a user would run it.
final class ScanCommandTests: XCTestCase {
  var tmp: String { NSTemporaryDirectory() + "earshot-scan-\(getpid())-\(name.hashValue)" }

  func testDocumentedLineForEachIBeacon() throws {
    let capture = try SharedData.url("ble/captures/mtoslalibu_ec521.btsnoop").path
    let r = try Earshot.run(["scan", "--input", capture])
    XCTAssertEqual(r.status, 0, r.stderr)
    let lines = r.stdout.split(separator: "\n")
    XCTAssertEqual(lines.count, 33)
    let json = try XCTUnwrap(
      JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
    XCTAssertEqual(json["uuid"] as? String, "56DB0365-A001-4062-9E4D-499D3B8ECCF3")
    XCTAssertEqual(json["major"] as? Int, 4096)
    XCTAssertEqual(json["minor"] as? Int, 14388)
    XCTAssertEqual(json["power"] as? Int, -54)
    XCTAssertEqual(json["address"] as? String, "88:4A:EA:96:8D:D2")
    XCTAssertEqual(json["event_type"] as? String, "adv_nonconn_ind")
    XCTAssertNotNil(json["rssi"] as? Int)
    XCTAssertGreaterThan(json["t"] as? Double ?? 0, 1_500_000_000)
    // Keys in the documented order.
    XCTAssertTrue(lines[0].hasPrefix("{\"t\":"))
    let order = [
      "\"address\"", "\"address_type\"", "\"uuid\"", "\"major\"", "\"minor\"", "\"power\"",
      "\"rssi\"", "\"event_type\"",
    ]
    let positions = order.map { lines[0].range(of: $0)!.lowerBound }
    XCTAssertEqual(positions, positions.sorted())
  }

  func testWriteThenBtmonReadsIt() throws {
    let input = try SharedData.url("ble/captures/wangdalian_btsnooper.btsnoop").path
    let out = tmp + ".btsnoop"
    defer { try? FileManager.default.removeItem(atPath: out) }
    let convert = try Earshot.run(["scan", "--input", input, "--write", out])
    XCTAssertEqual(convert.status, 0, convert.stderr)
    // Earshot reads back the same iBeacon lines.
    let again = try Earshot.run(["scan", "--input", out])
    XCTAssertEqual(again.stdout, convert.stdout)
    XCTAssertEqual(again.stdout.split(separator: "\n").count, 8)
    guard let btmon = Earshot.tool("btmon") else { try requireResource("btmon (package bluez)") }
    let decoded = try Earshot.run(["-r", out], executable: btmon)
    XCTAssertEqual(decoded.status, 0, decoded.stderr)
    XCTAssertEqual(
      decoded.stdout.components(separatedBy: "LE Extended Advertising Report").count - 1, 465)
    XCTAssertTrue(decoded.stdout.contains("Company: Apple, Inc. (76)"))
  }

  func testSnifferCaptureConvertsToHCIEvents() throws {
    let input = try SharedData.url("ble/captures/blakete_boston-mesh.le-ll-phdr.pcap").path
    let out = tmp + ".btsnoop"
    defer { try? FileManager.default.removeItem(atPath: out) }
    let all = try Earshot.run(["scan", "--all", "--input", input])
    let convert = try Earshot.run(["scan", "--input", input, "--write", out])
    XCTAssertEqual(convert.status, 0, convert.stderr)
    let back = try Earshot.run(["scan", "--all", "--input", out])
    // Its packets that fail their CRC-24 (its one malformed type-7 PDU
    // among them) are counted and skipped: no reject line, no event.
    let reports = all.stdout.split(separator: "\n").filter { !$0.contains("\"reject\"") }
    XCTAssertEqual(all.stdout.split(separator: "\n").count, reports.count)
    XCTAssertTrue(
      all.stderr.contains("34 sniffed packet(s) failed their CRC-24 and were skipped"), all.stderr)
    XCTAssertEqual(back.stdout.split(separator: "\n").count, reports.count)
    XCTAssertEqual(reports.count, 81)
  }

  func testAllShowsADStructuresAndTheAdvertisementAScanResponseAnswers() throws {
    let input = try SharedData.url("ble/captures/csacca_horizon-74-at-ble.btsnoop").path
    let r = try Earshot.run(["scan", "--all", "--input", input])
    XCTAssertEqual(r.status, 0)
    let lines = r.stdout.split(separator: "\n")
    XCTAssertEqual(lines.count, 412)
    let beaconLines = lines.filter { $0.contains("\"uuid\"") }
    XCTAssertEqual(beaconLines.count, 11)
    XCTAssertTrue(
      beaconLines.allSatisfy { $0.contains("\"adv_ad\"") },
      "scan responses carry their ADV_IND data")
    XCTAssertTrue(lines[0].contains("\"ad\":[{\"type\":"))
  }

  func testCorruptEventsAreCountedShownAndSkipped() throws {
    // A good capture with one event's length byte broken.
    var bytes = try [UInt8](
      Data(contentsOf: SharedData.url("ble/captures/mtoslalibu_ec521.btsnoop")))
    let path = tmp + ".btsnoop"
    defer { try? FileManager.default.removeItem(atPath: path) }
    // First record starts at 16; its H4 payload at 16 + 24.
    var offset = 16
    var broken = 0
    while offset + 24 < bytes.count, broken < 3 {
      let len =
        Int(bytes[offset + 4]) << 24 | Int(bytes[offset + 5]) << 16 | Int(bytes[offset + 6]) << 8
        | Int(bytes[offset + 7])
      let p = offset + 24
      if bytes[p] == 0x04 && bytes[p + 1] == 0x3E && bytes[p + 3] == 0x02 {
        bytes[p + 2] &+= 1
        broken += 1
      }
      offset = p + len
    }
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    let r = try Earshot.run(["scan", "--all", "--input", path])
    XCTAssertEqual(r.status, 0)
    XCTAssertEqual(r.stdout.split(separator: "\n").filter { $0.contains("\"reject\"") }.count, 3)
    XCTAssertTrue(r.stderr.contains("3 malformed"), r.stderr)
  }

  func testErrorsSayWhatIsWrong() throws {
    let missing = try Earshot.run(["scan", "--input", "/nonexistent.btsnoop"])
    XCTAssertEqual(missing.status, 1)
    XCTAssertTrue(missing.stderr.contains("/nonexistent.btsnoop"), missing.stderr)
    let notCapture = tmp + ".txt"
    try Data("hello".utf8).write(to: URL(fileURLWithPath: notCapture))
    defer { try? FileManager.default.removeItem(atPath: notCapture) }
    let junk = try Earshot.run(["scan", "--input", notCapture])
    XCTAssertEqual(junk.status, 1)
    XCTAssertTrue(junk.stderr.contains("not a btsnoop, pcap or pcapng capture"), junk.stderr)
    let usage = try Earshot.run(["scan", "--bogus"])
    XCTAssertEqual(usage.status, 2)
    XCTAssertTrue(usage.stderr.contains("unknown option --bogus"), usage.stderr)
  }

  func testADeviceThatIsNoCaptureFailsAtOnce() throws {
    // It used to read /dev/zero until memory ran out.
    let r = try Earshot.run(["scan", "--input", "/dev/zero"])
    XCTAssertEqual(r.status, 1, r.stderr)
    XCTAssertTrue(r.stderr.contains("/dev/zero: not a btsnoop, pcap or pcapng capture"), r.stderr)
    XCTAssertEqual(r.stdout, "")
  }

  func testStandardInputIsReadAsItComes() throws {
    let r = try Earshot.run(["scan", "--input", "-"], stdin: "neither btsnoop nor pcap")
    XCTAssertEqual(r.status, 1, r.stderr)
    XCTAssertTrue(r.stderr.contains("-: not a btsnoop, pcap or pcapng capture"), r.stderr)
  }

  /// One packet of `linkType` (4 bytes: DE AD BE EF), as pcap and as pcapng.
  func onePacket(_ linkType: UInt8) -> (pcap: [UInt8], pcapng: [UInt8]) {
    let t = String(format: "%02X", linkType)
    let pcap = hex(
      "D4C3B2A1 0200 0400 00000000 00000000 00000400 \(t)\(linkType == 0x10 ? "01" : "00")0000"
        + "01000000 00000000 04000000 04000000 DEADBEEF")
    let pcapng = hex(
      "0A0D0D0A 1C000000 4D3C2B1A 0100 0000 FFFFFFFFFFFFFFFF 1C000000"
        + "01000000 14000000 \(t)\(linkType == 0x10 ? "01" : "00") 0000 00000400 14000000"
        + "06000000 24000000 00000000 00000000 01000000 04000000 04000000 DEADBEEF 24000000")
    return (pcap, pcapng)
  }

  func testNordicSnifferCaptureIsReadAndABadRecordCounted() throws {
    // Link type 272 (0x110): read; its 4-byte record cannot hold the nRF
    // Sniffer's header, so it is counted and skipped, and the scan succeeds.
    let (pcap, pcapng) = onePacket(0x10)
    for (bytes, ext) in [(pcap, "pcap"), (pcapng, "pcapng")] {
      let path = tmp + "." + ext
      try Data(bytes).write(to: URL(fileURLWithPath: path))
      defer { try? FileManager.default.removeItem(atPath: path) }
      let r = try Earshot.run(["scan", "--all", "--input", path])
      XCTAssertEqual(r.status, 0, r.stderr)
      XCTAssertTrue(r.stdout.contains("an nRF Sniffer record of 4 bytes"), r.stdout)
      XCTAssertTrue(r.stderr.contains("1 malformed event(s) or report(s) skipped"), r.stderr)
    }
    // A real ADV_IND (the shared HackRF capture's first) in a version 3
    // record: board 0, length 47, version 3, counter, ID 2 (advertising);
    // event header 10, flags CRC OK, channel 38, RSSI 55; then the packet.
    let record = hex(
      "00 2F00 03 0700 02 0A 01 26 37 0000 01020304"
        + "d6be898e601c18e09fec65d50319c103020104030312180a09524f4720415a4f54486d4fc9")
    var bytes = hex("D4C3B2A1 0200 0400 00000000 00000000 00000400 10010000")
    bytes +=
      hex("01000000 00000000") + [UInt8(record.count), 0, 0, 0, UInt8(record.count), 0, 0, 0]
    bytes += record
    let path = tmp + ".pcap"
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    defer { try? FileManager.default.removeItem(atPath: path) }
    let r = try Earshot.run(["scan", "--all", "--input", path])
    XCTAssertEqual(r.status, 0, r.stderr)
    XCTAssertEqual(r.stdout.split(separator: "\n").count, 1, r.stdout)
    XCTAssertTrue(r.stdout.contains("D5:65:EC:9F:E0:18"), r.stdout)
    XCTAssertTrue(r.stdout.contains("-55"), r.stdout)
    // The same record flagged "CRC bad" is skipped and said.
    bytes[24 + 16 + 8] = 0x00
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    let bad = try Earshot.run(["scan", "--all", "--input", path])
    XCTAssertEqual(bad.status, 0, bad.stderr)
    XCTAssertEqual(bad.stdout, "")
    XCTAssertTrue(bad.stderr.contains("1 sniffed packet(s) failed their CRC-24"), bad.stderr)
  }

  func testUnreadableLinkTypeFailsTheSameInPcapAndPcapng() throws {
    // One packet of link type 157 (the old Nordic sniffer's), as pcap and as pcapng.
    let (pcap, pcapng) = onePacket(157)
    var errors: [String] = []
    for (bytes, ext) in [(pcap, "pcap"), (pcapng, "pcapng")] {
      let path = tmp + "." + ext
      try Data(bytes).write(to: URL(fileURLWithPath: path))
      defer { try? FileManager.default.removeItem(atPath: path) }
      let r = try Earshot.run(["scan", "--all", "--input", path])
      XCTAssertEqual(r.status, 1, ext)
      XCTAssertEqual(r.stdout, "", ext)
      XCTAssertTrue(r.stderr.contains("link type 157 (Nordic BLE (old)"), r.stderr)
      XCTAssertTrue(r.stderr.contains("Earshot reads link types 187"), r.stderr)
      errors.append(r.stderr.replacingOccurrences(of: path, with: "FILE"))
    }
    XCTAssertEqual(errors[0], errors[1])
  }

  func testACorruptPcapngSaysWhyAndFails() throws {
    // A section header, then a packet with no interface described.
    let bytes = hex(
      "0A0D0D0A 1C000000 4D3C2B1A 0100 0000 FFFFFFFFFFFFFFFF 1C000000"
        + "06000000 24000000 00000000 00000000 01000000 04000000 04000000 DEADBEEF 24000000")
    let path = tmp + ".pcapng"
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    defer { try? FileManager.default.removeItem(atPath: path) }
    let r = try Earshot.run(["scan", "--input", path])
    XCTAssertEqual(r.status, 1)
    XCTAssertTrue(
      r.stderr.contains("corrupt capture: a pcapng packet before any interface description block"),
      r.stderr)
    XCTAssertFalse(r.stderr.contains("truncated"), r.stderr)
  }

  func testEveryCommandHasHelpAndTheToolAVersion() throws {
    let top = try Earshot.run(["--help"])
    XCTAssertEqual(top.status, 0)
    let names = top.stdout.split(separator: "\n", omittingEmptySubsequences: false).drop {
      !$0.hasPrefix("Commands:")
    }.dropFirst()
      .prefix { !$0.isEmpty }.map { String($0.split(separator: " ")[0]) }
    XCTAssertTrue(names.contains("scan"))
    for name in names {
      let help = try Earshot.run([name, "--help"])
      XCTAssertEqual(help.status, 0, name)
      XCTAssertTrue(help.stdout.hasPrefix("Usage: earshot \(name)"), "\(name): \(help.stdout)")
    }
    let version = try Earshot.run(["--version"])
    XCTAssertTrue(version.stdout.hasPrefix("earshot "))
  }
}
