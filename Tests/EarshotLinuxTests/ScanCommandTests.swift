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
    // The capture's one malformed type-7 PDU is a reject line, not an event.
    let reports = all.stdout.split(separator: "\n").filter { !$0.contains("\"reject\"") }
    XCTAssertEqual(all.stdout.split(separator: "\n").count - reports.count, 1)
    XCTAssertEqual(back.stdout.split(separator: "\n").count, reports.count)
    XCTAssertGreaterThan(reports.count, 50)
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

  func testUnreadableLinkTypeFailsTheSameInPcapAndPcapng() throws {
    // One nRF Sniffer (link type 272) packet, as pcap and as pcapng.
    let pcap = hex(
      "D4C3B2A1 0200 0400 00000000 00000000 00000400 10010000"
        + "01000000 00000000 04000000 04000000 DEADBEEF")
    let pcapng = hex(
      "0A0D0D0A 1C000000 4D3C2B1A 0100 0000 FFFFFFFFFFFFFFFF 1C000000"
        + "01000000 14000000 1001 0000 00000400 14000000"
        + "06000000 24000000 00000000 00000000 01000000 04000000 04000000 DEADBEEF 24000000")
    var errors: [String] = []
    for (bytes, ext) in [(pcap, "pcap"), (pcapng, "pcapng")] {
      let path = tmp + "." + ext
      try Data(bytes).write(to: URL(fileURLWithPath: path))
      defer { try? FileManager.default.removeItem(atPath: path) }
      let r = try Earshot.run(["scan", "--all", "--input", path])
      XCTAssertEqual(r.status, 1, ext)
      XCTAssertEqual(r.stdout, "", ext)
      XCTAssertTrue(r.stderr.contains("link type 272 (Nordic BLE"), r.stderr)
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
