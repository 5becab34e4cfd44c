import EarshotTestSupport
import Foundation
import XCTest

/// scripts/rooms-real/sphere.py and flat.py, and `rooms evaluate --baseline`,
/// on small made-up recordings in the layouts of SPHERE and of the flat's
/// dataset (neither is committed: SPHERE's has no licence, and the
/// converters are tested on what they cannot tell apart from it): the
/// converters' captures and truth, through the binary.
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
    let changes = lines.filter { $0.hasPrefix("{") && !$0.contains("\"rule\":") }
    XCTAssertEqual(changes.count, 2, r.stdout)
    // --changes prints each simple rule's changes too, marked, and `rooms
    // score` leaves them out of the rule's.
    let simple = lines.filter { $0.contains("\"rule\":\"strongest-5s\"") }
    XCTAssertEqual(simple.count, 2, r.stdout)
    XCTAssertTrue(simple.last?.contains("\"room\":\"living\"") ?? false, r.stdout)
    // A simple rule's line in the middle of the kitchen stay naming the
    // lounge: the rule's would be wrong for a minute if it were counted.
    let marked =
      "{\"t\":1767232860.0,\"event\":\"room\",\"beacon\":\"\(beacon)\",\"room\":\"living\",\"rule\":\"mqtt_room\"}\n"
    try (r.stdout + marked).write(toFile: dir + "/timeline", atomically: true, encoding: .utf8)
    let s = try Earshot.run([
      "rooms", "score", dir + "/timeline", "--truth", dir + "/out/00003/truth.jsonl",
    ])
    XCTAssertEqual(s.status, 0, s.stderr)
    func confirm(_ out: String) -> String? {
      let rule = out.split(separator: "\n").first { $0.hasPrefix("rule:") }
      return rule?.components(separatedBy: ", ").first { $0.hasPrefix("median confirm") }
    }
    XCTAssertNotNil(confirm(r.stdout), r.stdout)
    XCTAssertEqual(confirm(s.stdout), confirm(r.stdout), s.stdout)
    XCTAssertTrue(
      s.stdout.split(separator: "\n").first { $0.hasPrefix("rule:") }?.contains(
        "wrong-room 0.0 %") ?? false, s.stdout)
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

  func testFlatRobotRunsAreConvertedIntoRoomsAndScored() throws {
    // Anchors 1, 4 and 6 stand in the east room, 2 in the west, 3 in the
    // corridor, 5 in the south room (made-up coordinates in the same rooms).
    try FileManager.default.createDirectory(
      atPath: dir + "/flat/calibration", withIntermediateDirectories: true)
    try FileManager.default.createDirectory(
      atPath: dir + "/flat/tests", withIntermediateDirectories: true)
    try "id,x,y,z\n1,5.0,2.5,2\n2,1.0,6.0,2\n3,3.0,0.5,2\n4,4.0,6.5,2\n5,5.5,0.5,2\n6,8.0,6.0,2\n"
      .write(toFile: dir + "/flat/anchors.csv", atomically: true, encoding: .utf8)
    // Two runs (rows stop for 200 s between them), a row every 1/3 s: the
    // first 60 s in the east room (a room reports its loudest anchor, 4 at
    // -50; anchor 1 alone, at -85, would lose to the corridor's -75), then
    // 60 s in the corridor (anchor 3 at -50, the east ones at -75 or
    // less); the second run 60 s in the west room. A silent anchor's cell
    // is empty; one row is malformed.
    func rows(_ start: Double, _ seconds: Int, x: Double, y: Double, _ rssi: [Int?]) -> String {
      (0..<(seconds * 3)).map { k in
        let ts = Int64((start + Double(k) / 3) * 1e9)
        let cells = rssi.map { $0.map { "\($0).2" } ?? "" }.joined(separator: ",")
        return "\(k),\(ts),\(x),0.1,\(y),\(cells)\n"
      }.joined()
    }
    let t0 = 1_627_997_452.0
    var csv = ",ts,x,heading,y,rssi_1,rssi_2,rssi_3,rssi_4,rssi_5,rssi_6\n"
    csv += rows(t0, 60, x: 5.5, y: 5.0, [-85, -80, -75, -50, -78, -60])
    csv += "180,oops,5.5,0.1,5.0,-58,,,,,\n"
    csv += rows(t0 + 60, 60, x: 2.0, y: 1.0, [-75, -80, -50, -76, -70, nil])
    csv += rows(t0 + 320, 60, x: 1.0, y: 5.0, [-80, -50, -72, -78, -85, -88])
    try csv.write(
      toFile: dir + "/flat/calibration/calibration_df.csv", atomically: true, encoding: .utf8)
    try
      (",ts,x,heading,y,rssi_1,rssi_2,rssi_3,rssi_4,rssi_5,rssi_6\n"
      + rows(t0 + 3600, 30, x: 5.0, y: 1.0, [-70, -85, -66, -80, -48, -90]))
      .write(toFile: dir + "/flat/tests/test_robot_df.csv", atomically: true, encoding: .utf8)

    let script = Self.repo.appendingPathComponent("scripts/rooms-real/flat.py").path
    let c = try Earshot.run([script, dir + "/flat", dir + "/out"], executable: "/usr/bin/python3")
    XCTAssertEqual(c.status, 0, c.stderr)
    for line in [
      "run-1 (calibration/calibration_df.csv): 120 s; corridor 360, east 360, south 360, west 360 reports; 3 truth lines",
      "run-2 (calibration/calibration_df.csv): 60 s; corridor 180, east 180, south 180, west 180 reports; 2 truth lines",
      "calibration/calibration_df.csv: 1 malformed rows skipped",
      "group-calibration: run-1, run-2",
      "run-3 (tests/test_robot_df.csv): 30 s; corridor 90, east 90, south 90, west 90 reports; 2 truth lines",
      "group-test-robot: run-3",
    ] {
      XCTAssertTrue(c.stdout.contains(line), "\(line) missing: \(c.stdout)")
    }
    // The robot's position names the room; a run ends `unlabelled` (not
    // scored) a third of a second after its last row.
    let truth = try String(contentsOfFile: dir + "/out/run-1/truth.jsonl", encoding: .utf8)
    let beacon = "5F4E3D2C-1B0A-4987-8654-3210FEDCBA98:101:1"
    XCTAssertEqual(
      truth,
      """
      {"t":1627997452.0,"beacon":"\(beacon)","room":"east"}
      {"t":1627997512.0,"beacon":"\(beacon)","room":"corridor"}
      {"t":1627997572.0,"beacon":"\(beacon)","room":"unlabelled"}

      """)

    let r = try Earshot.run([
      "rooms", "evaluate", dir + "/out/group-calibration", "--baseline", "--changes",
    ])
    XCTAssertEqual(r.status, 0, r.stderr)
    let lines = r.stdout.split(separator: "\n").map(String.init)
    // East (its loudest anchor, -50), then the corridor 25 dB ahead, then
    // away between the runs, then the west room.
    let rooms = lines.filter { $0.hasPrefix("{") && !$0.contains("\"rule\":") }.map { line in
      line.components(separatedBy: "\"room\":").last.map {
        $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"}"))
      } ?? ""
    }
    XCTAssertEqual(rooms, ["east", "corridor", "null", "west"], r.stdout)
    for rule in ["rule:", "strongest-5s:", "strongest-15s:", "mqtt_room:"] {
      let line = lines.first { $0.hasPrefix(rule) }
      XCTAssertTrue(line?.contains("wrong-room 0.0 % of 2 min") ?? false, "\(rule) \(r.stdout)")
    }
  }
  func testFadesMeasuresALinksSwingAndCorrelationDuringAStay() throws {
    // A four-minute kitchen stay: the kitchen's gateway swings between -57
    // and -63 dBm every 10 s (a packet every 0.2 s), the lounge's holds
    // -80. A 5 s mean of that square wave is flat for 5 s and ramps for 5
    // s, so its deviations about -60 have a variance of (9 + 3) / 2 dB²:
    // sd 2.45 dB; the lounge's does not move. One row is malformed.
    var csv = "t,x,y,z,Kitchen_AP,Lounge_AP,Upstairs_AP,Study_AP\n"
    for k in 0..<1200 {
      let t = Double(k) * 0.2 + 0.1
      let kitchen = Int(t / 10) % 2 == 0 ? -57 : -63
      csv += "\(t),0.9,-0.3,0.1,\(kitchen).0,-80.0,,\n"
      if k == 500 { csv += "oops,0.9,-0.3,0.1,-60,,,\n" }
    }
    try csv.write(toFile: dir + "/train/00003/acceleration.csv", atomically: true, encoding: .utf8)
    try "start,end,name,index\n0,240,kitchen,4\n".write(
      toFile: dir + "/train/00003/location_0.csv", atomically: true, encoding: .utf8)
    let script = Self.repo.appendingPathComponent("scripts/rooms-real/fades.py").path
    let r = try Earshot.run([script, dir + "/train"], executable: "/usr/bin/python3")
    XCTAssertEqual(r.status, 0, r.stderr)
    let lines = r.stdout.split(separator: "\n").map(String.init)
    let kitchen = try XCTUnwrap(lines.first { $0.contains("Kitchen_AP") }, r.stdout)
    let fields = kitchen.split(separator: " ").map(String.init)
    // sequence, room, stay, gateway, level, sd, correlation time
    XCTAssertEqual(fields.count, 7, kitchen)
    XCTAssertEqual(try XCTUnwrap(Double(fields[4])), -60, accuracy: 0.2, kitchen)
    XCTAssertEqual(try XCTUnwrap(Double(fields[5])), 2.45, accuracy: 0.05, kitchen)
    // Half a period (10 s) is anticorrelated: the 1/e crossing comes before.
    let tau = try XCTUnwrap(Int(fields[6]), kitchen)
    XCTAssertTrue((2...6).contains(tau), kitchen)
    let lounge = try XCTUnwrap(lines.first { $0.contains("Lounge_AP") }, r.stdout)
    XCTAssertTrue(lounge.hasSuffix(" 0.00              -"), lounge)
    XCTAssertTrue(lines.contains("1 malformed rows skipped"), r.stdout)
    // The kitchen leads the lounge by 17-23 dB: 20 over its swing's mean.
    XCTAssertTrue(
      r.stdout.contains("1st percentile 17.0 dB") && r.stdout.contains("behind 0.00 % of seconds"),
      r.stdout)

    let missing = try Earshot.run([script, dir + "/nowhere"], executable: "/usr/bin/python3")
    XCTAssertNotEqual(missing.status, 0)
    XCTAssertTrue(missing.stderr.contains("is not a directory"), missing.stderr)
  }
}
