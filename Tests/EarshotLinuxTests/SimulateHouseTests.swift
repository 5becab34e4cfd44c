import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// `earshot simulate house` as a user runs it, on the bundled house.
final class SimulateHouseTests: XCTestCase {
  var dir: String { NSTemporaryDirectory() + "earshot-house-\(getpid())-\(name.hashValue)" }
  static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
  static let spec = repo.appendingPathComponent("scenarios/house.spec").path

  override func tearDown() {
    try? FileManager.default.removeItem(atPath: dir)
  }

  /// Every report of a capture: (capture time, minor, RSSI); and the first record's time.
  func read(_ path: String) throws -> (first: Int64?, reports: [(Int64, UInt16, Int8)]) {
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    var replay = CaptureReplay()
    var first: Int64?
    var out: [(Int64, UInt16, Int8)] = []
    try bytes.withUnsafeBytes { buf in
      try replay.run(
        buf,
        report: { t, r in
          if let b = TrackedBeacon.iBeacon(advertisingData: r.data), let rssi = r.rssi {
            out.append((t, b.minor, rssi))
          }
        }, event: { t, _ in if first == nil { first = t } })
    }
    return (first, out)
  }

  func testBundledHouseWritesACapturePerReceiverAndTheTruth() throws {
    let r = try Earshot.run(["simulate", "house", "--spec", Self.spec, "--write", dir])
    XCTAssertEqual(r.status, 0, r.stderr)
    let files = try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
    XCTAssertEqual(files, ["bedroom.btsnoop", "kitchen.btsnoop", "living.btsnoop", "truth.jsonl"])
    let start: Int64 = 1_767_225_600_000_000
    var counts: [String: Int] = [:]
    for name in ["bedroom", "kitchen", "living"] {
      let c = try read("\(dir)/\(name).btsnoop")
      // One timeline: every capture starts at the spec's start and stays within the hour.
      XCTAssertEqual(c.first, start, name)
      XCTAssertTrue(c.reports.allSatisfy { $0.0 >= start && $0.0 < start + 3_600_000_000 }, name)
      counts[name] = c.reports.count
      // The keys (minor 2) stand all hour at 1 s with 30 % lost: about 2,520 heard.
      let keys = c.reports.filter { $0.1 == 2 }.count
      XCTAssertEqual(Double(keys), 2520, accuracy: 150, name)
    }
    // The kitchen hears the keys (2.5 m, same room, 5 dB low) louder than
    // the living room does (4 m through a wall, 5 dB high) by only ~0.2 dB
    // on average: the case calibration exists for.
    func median(_ name: String) throws -> Double {
      let v = try read("\(dir)/\(name).btsnoop").reports.filter { $0.1 == 2 }.map { Double($0.2) }
        .sorted()
      return v[v.count / 2]
    }
    XCTAssertEqual(try median("kitchen") - median("living"), 0, accuracy: 1.5)

    let truth = try String(contentsOfFile: dir + "/truth.jsonl", encoding: .utf8)
      .split(separator: "\n").map {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
      }
    XCTAssertEqual(truth.count, 24)
    let walker = truth.filter { ($0["name"] as? String) == "walker" }
    XCTAssertEqual(
      walker.map { ($0["room"] as? String) ?? "-" },
      [
        "living", "kitchen", "hall", "bedroom", "hall", "living", "-", "living", "kitchen", "hall",
        "bedroom", "hall", "living", "kitchen", "hall", "bedroom", "hall", "living",
      ])
    // The walk enters the kitchen through x = 5 at 120 + 10 * 0.5 / 4.5 s.
    XCTAssertEqual(walker[1]["t"] as? Double ?? 0, 1_767_225_725.556, accuracy: 0.001)
    XCTAssertEqual(walker[6]["t"] as? Double, 1_767_226_200)
    XCTAssertEqual(
      truth.first { ($0["name"] as? String) == "keys" }?["beacon"] as? String,
      "8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182:1:2")
    // The same spec gives the same bytes.
    let again = dir + "/again"
    XCTAssertEqual(
      try Earshot.run(["simulate", "house", "--spec", Self.spec, "--write", again]).status, 0)
    for f in ["living.btsnoop", "truth.jsonl"] {
      XCTAssertEqual(
        try Data(contentsOf: URL(fileURLWithPath: "\(dir)/\(f)")),
        try Data(contentsOf: URL(fileURLWithPath: "\(again)/\(f)")), f)
    }
  }

  /// The fading houses (scenarios/house-fading-*.spec) are what
  /// docs/rooms-simulator.md says they are, since scripts/rooms-houses.sh
  /// scores each by its walker (1:1), its beacon 0.5 m from a wall between
  /// two covered rooms (1:2) and its beacon in a covered room (1:3).
  func testEveryFadingHouseIsShapedAsDocumented() throws {
    let dir = Self.repo.appendingPathComponent("scenarios").path
    let specs = try FileManager.default.contentsOfDirectory(atPath: dir)
      .filter { $0.hasPrefix("house-fading-") && $0.hasSuffix(".spec") }.sorted()
    XCTAssertGreaterThanOrEqual(specs.count, 33)
    for file in specs {
      let house = try House.build(try IniReader.read(path: "\(dir)/\(file)"))
      XCTAssertEqual(house.duration, .seconds(3600), file)
      XCTAssertTrue((3...6).contains(house.rooms.count), file)
      XCTAssertTrue((3...5.5).contains(house.shadowing), file)
      XCTAssertTrue((0.8...70).contains(house.shadowingTime), file)
      XCTAssertTrue((0...3).contains(house.fading), file)
      XCTAssertTrue(
        house.receivers.allSatisfy { (0.25...0.6).contains($0.loss) && abs($0.bias) <= 2 }, file)
      let covered = Set(house.receivers.compactMap { house.room(at: $0.position) })
      // `rooms evaluate` takes a capture's name as its receiver's room.
      for r in house.receivers {
        XCTAssertEqual(r.name, house.room(at: r.position), "\(file): receiver named after its room")
      }
      func beacon(_ minor: UInt16) -> HouseBeacon? {
        house.beacons.first { $0.id.major == 1 && $0.id.minor == minor }
      }
      XCTAssertFalse(house.beacons.contains { $0.id.major == 9 }, "\(file): no calibration beacon")
      guard let walker = beacon(1), let wall = beacon(2), let centre = beacon(3) else {
        XCTFail("\(file): walker 1:1, wall 1:2 and centre 1:3 expected")
        continue
      }
      let visited = Set(
        stride(from: 0.0, through: 3600, by: 1).compactMap {
          house.room(at: walker.position(at: $0))
        })
      XCTAssertTrue(covered.isSubset(of: visited), "\(file): the walker visits every covered room")
      XCTAssertEqual(wall.path.count, 1, file)
      XCTAssertEqual(centre.path.count, 1, file)
      XCTAssertTrue(house.room(at: centre.path[0].at).map(covered.contains) ?? false, file)
      // 0.5 m from an edge its covered room shares with another covered room.
      let p = wall.path[0].at
      guard let own = house.rooms.first(where: { $0.contains(p) }), covered.contains(own.name)
      else {
        XCTFail("\(file): the wall beacon is in a covered room")
        continue
      }
      let beside = house.rooms.filter { $0.name != own.name && covered.contains($0.name) }.contains
      { o in
        let across = [
          (p.x - own.min.x, FloorPoint(own.min.x - 0.01, p.y)),
          (own.max.x - p.x, FloorPoint(own.max.x + 0.01, p.y)),
          (p.y - own.min.y, FloorPoint(p.x, own.min.y - 0.01)),
          (own.max.y - p.y, FloorPoint(p.x, own.max.y + 0.01)),
        ]
        return across.contains { abs($0.0 - 0.5) < 0.1 && o.contains($0.1) }
      }
      XCTAssertTrue(beside, "\(file): the wall beacon is 0.5 m from a wall to another covered room")
    }
  }

  func testABrokenSpecNamesFileLineAndKey() throws {
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let spec = dir + "/bad.spec"
    try """
    [house]
    duration = 60
    [room "a"]
    area = 0 0 4
    [room "b"]
    area = 2 2 6 6
    [room "c"]
    area = 3 3 5 5
    [receiver "x y"]
    position = 1 1
    [beacon "b"]
    uuid = 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182
    path = 10: 1 1, 5: 2 2

    """.write(toFile: spec, atomically: true, encoding: .utf8)
    let r = try Earshot.run(["simulate", "house", "--spec", spec, "--write", dir + "/out"])
    XCTAssertEqual(r.status, 1)
    XCTAssertTrue(
      r.stderr.contains("bad.spec:4: [room \"a\"] area: expected X1 Y1 X2 Y2"), r.stderr)
    XCTAssertTrue(r.stderr.contains("[room \"c\"] area: overlaps room \"b\""), r.stderr)
    XCTAssertTrue(r.stderr.contains("bad.spec:9: [receiver \"x y\"]"), r.stderr)
    XCTAssertTrue(r.stderr.contains("bad.spec:13: [beacon \"b\"] path:"), r.stderr)
    XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out"))
  }

  /// `rooms evaluate` with receivers' clocks skewed goes through the
  /// aggregator's judge (sightings count from when they are heard): the
  /// scores are the in-step ones; judged on the sightings' own `t` they
  /// are not.
  func testRoomsEvaluateWithSkewedReceiversScoresAsInStep() throws {
    XCTAssertEqual(
      try Earshot.run(["simulate", "house", "--spec", Self.spec, "--write", dir]).status, 0)
    func scores(_ extra: [String]) throws -> [String] {
      let r = try Earshot.run(["rooms", "evaluate", dir] + extra)
      XCTAssertEqual(r.status, 0, r.stderr)
      return r.stdout.split(separator: "\n").map(String.init).filter {
        $0.hasPrefix("rule:") || $0.hasPrefix("naive:")
      }
    }
    let inStep = try scores([])
    XCTAssertEqual(inStep.count, 2, "\(inStep)")
    let clocks = ["--skew", "kitchen=3600,living=-600,bedroom=3", "--drift", "bedroom=50"]
    XCTAssertEqual(try scores(clocks), inStep)
    let onT = try scores(clocks + ["--message-time"])
    XCTAssertEqual(onT.count, 2)
    XCTAssertNotEqual(onT.first, inStep.first, "judged on t, the hour-ahead kitchen wins time")
    XCTAssertEqual(try scores(["--message-time"]), inStep, "in step, t is the time heard")
    let bad = try Earshot.run(["rooms", "evaluate", dir, "--skew", "kitchen=soon"])
    XCTAssertNotEqual(bad.status, 0)
    XCTAssertTrue(bad.stderr.contains("--skew expects ROOM=NUMBER"), bad.stderr)
  }

  /// Captures named after devices rather than rooms score nothing: an
  /// error that says what to rename, not "0 % wrong of 0 min".
  func testRoomsEvaluateRefusesCapturesNamedAfterNoRoom() throws {
    XCTAssertEqual(
      try Earshot.run(["simulate", "house", "--spec", Self.spec, "--write", dir]).status, 0)
    for room in ["kitchen", "living", "bedroom"] {
      try FileManager.default.moveItem(
        atPath: "\(dir)/\(room).btsnoop", toPath: "\(dir)/\(room)-speaker.btsnoop")
    }
    let r = try Earshot.run(["rooms", "evaluate", dir])
    XCTAssertNotEqual(r.status, 0, r.stdout)
    XCTAssertTrue(r.stderr.contains("rename the captures ROOM.btsnoop"), r.stderr)
    XCTAssertTrue(r.stderr.contains("kitchen-speaker"), r.stderr)
    XCTAssertFalse(r.stdout.contains("wrong-room"), r.stdout)
    // A timeline scored against the truth with such names fails the same way.
    let timeline = "\(dir)/timeline.jsonl"
    let line =
      #"{"t":1767225601.0,"event":"room","beacon":"8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182:1:1","room":"kitchen-speaker"}"#
    try (line + "\n").write(toFile: timeline, atomically: true, encoding: .utf8)
    let s = try Earshot.run(["rooms", "score", timeline, "--truth", "\(dir)/truth.jsonl"])
    XCTAssertNotEqual(s.status, 0, s.stdout)
    XCTAssertTrue(s.stderr.contains("no room decided in"), s.stderr)
    // Whatever --covered says: every decision would be scored wrong.
    let c = try Earshot.run([
      "rooms", "score", timeline, "--truth", "\(dir)/truth.jsonl", "--covered", "kitchen",
    ])
    XCTAssertNotEqual(c.status, 0, c.stdout)
  }
}
