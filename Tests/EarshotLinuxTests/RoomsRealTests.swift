import EarshotTestSupport
import Foundation
import XCTest

/// scripts/rooms-real/sphere.py and `rooms evaluate --baseline` on a small
/// made-up sequence in SPHERE's layout (the real data has no licence to be
/// committed): the converter's captures and truth, through the binary.
final class RoomsRealTests: XCTestCase {
  static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
  var dir: String { NSTemporaryDirectory() + "earshot-real-\(getpid())-\(name.hashValue)" }

  override func setUpWithError() throws {
    try? FileManager.default.removeItem(atPath: dir)
    try FileManager.default.createDirectory(
      atPath: dir + "/train/00003", withIntermediateDirectories: true)
  }

  override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

  func testASphereSequenceIsConvertedAndScoredBesideTheSimpleRules() throws {
    // Four minutes: the kitchen's gateway 25 dB ahead for the first two,
    // the lounge's for the last two; the landing's hears every other packet, far
    // off. Four accelerometer rows a packet (0.2 s), the RSSI of the packet
    // on each; one row is malformed.
    var csv = "t,x,y,z,Kitchen_AP,Lounge_AP,Upstairs_AP,Study_AP\n"
    for row in 0..<4800 {
      let t = Double(row) * 0.05
      let packet = row / 4
      let jitter = packet % 2 == 0 ? 1 : -1
      let (kitchen, lounge) = t < 120 ? (-60 + jitter, -85) : (-85, -60 + jitter)
      let landing = packet % 2 == 0 ? "-92.0" : ""
      csv += "\(t),0.9,-0.3,0.1,\(kitchen).0,\(lounge).0,\(landing),\n"
      if row == 1000 { csv += "oops,0.9,-0.3,0.1,-60,,,\n" }
    }
    try csv.write(toFile: dir + "/train/00003/acceleration.csv", atomically: true, encoding: .utf8)
    let labels = "start,end,name,index\n0.5,119.8,kitchen,4\n120.3,239.9,living,5\n"
    try labels.write(toFile: dir + "/train/00003/location_0.csv", atomically: true, encoding: .utf8)

    let script = Self.repo.appendingPathComponent("scripts/rooms-real/sphere.py").path
    let c = try Earshot.run(
      [script, dir + "/train", dir + "/out"], executable: "/usr/bin/python3")
    XCTAssertEqual(c.status, 0, c.stderr)
    XCTAssertTrue(
      c.stdout.contains(
        "00003: kitchen 1200, living 1200, upstairs 600 reports; 3 truth lines, 1 malformed rows skipped"
      ),
      c.stdout)
    XCTAssertTrue(
      c.stdout.contains("group-3: sequences 00003; gateways kitchen, living, upstairs"), c.stdout)
    // Sequence 3 starts two hours after 2026-01-01; the gap under 2 s
    // between the labels is closed by the kitchen; after the last label the
    // tag is unlabelled (not scored).
    let truth = try String(contentsOfFile: dir + "/out/00003/truth.jsonl", encoding: .utf8)
    let beacon = "5F4E3D2C-1B0A-4987-8654-3210FEDCBA98:3:1"
    XCTAssertEqual(
      truth,
      """
      {"t":1767232800.5,"beacon":"\(beacon)","room":"kitchen"}
      {"t":1767232920.3,"beacon":"\(beacon)","room":"living"}
      {"t":1767233039.9,"beacon":"\(beacon)","room":"unlabelled"}

      """)

    let r = try Earshot.run(["rooms", "evaluate", dir + "/out/00003", "--baseline", "--changes"])
    XCTAssertEqual(r.status, 0, r.stderr)
    let lines = r.stdout.split(separator: "\n").map(String.init)
    let changes = lines.filter { $0.hasPrefix("{") }
    XCTAssertEqual(changes.count, 2, r.stdout)
    XCTAssertTrue(changes.first?.contains("\"room\":\"kitchen\"") ?? false, r.stdout)
    XCTAssertTrue(changes.last?.contains("\"room\":\"living\"") ?? false, r.stdout)
    for rule in ["rule:", "naive:", "strongest-5s:", "strongest-15s:", "mqtt_room:"] {
      let line = lines.first { $0.hasPrefix(rule) }
      XCTAssertNotNil(line, "\(rule) missing: \(r.stdout)")
      XCTAssertTrue(line?.contains("stay changes/h 0.00") ?? false, line ?? "")
    }
    // A 25 dB lead: the rule is right within 10 s of the move, and the
    // strongest over 5 s too (its mean crosses over in 2.5 s).
    XCTAssertTrue(
      lines.first { $0.hasPrefix("rule:") }?.contains("wrong-room 0.0 %") ?? false, r.stdout)
    XCTAssertTrue(
      lines.first { $0.hasPrefix("strongest-5s:") }?.contains("wrong-room 0.0 %") ?? false,
      r.stdout)
  }
}
