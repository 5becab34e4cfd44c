import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

#if canImport(FoundationXML)
  import FoundationXML
#endif

private let uuid = BeaconUUID("8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182")!
private let deskBeacon = TrackedID(uuid: uuid, major: 1, minor: 10)
private let doorBeacon = TrackedID(uuid: uuid, major: 2, minor: 1)
private let s = Int64(1_000_000)
/// 2026-01-01T08:00:00Z, in seconds.
private let t0 = Int64(1_767_254_400)

/// A day's scenario with known ground truth: what `earshot monitor` would
/// print for it (region events and range lines), and the presence
/// intervals it contains.
struct LogScenario {
  struct Interval: Equatable {
    let region: String
    let start: Int64  // seconds since t0
    let end: Int64?
    let ending: String
  }

  var events: [ProximityEvent] = []
  var lines: [String] = []

  /// desk: in 600-2430 (exit), 3000 until the adapter goes down at 3600,
  /// back (still there) at 3701 until 5030 (exit), in again from 6000 and
  /// still in at the end (ranged until 6300). door: in 1000-1230.
  static let intervals = [
    Interval(region: "desk", start: 600, end: 2430, ending: "exit"),
    Interval(region: "desk", start: 3000, end: 3600, ending: "unknown"),
    Interval(region: "desk", start: 3701, end: 5030, ending: "exit"),
    Interval(region: "desk", start: 6000, end: nil, ending: "open"),
    Interval(region: "door", start: 1000, end: 1230, ending: "exit"),
  ]
  /// The last sighting interval ends at 6310 (10 s rows aligned to the epoch).
  static let lastRecord: Int64 = 6310

  init() {
    state(0, "desk", .unknown)
    state(0, "door", .unknown)
    state(30, "desk", .outside)
    state(30, "door", .outside)
    region(600, "desk", .enter, .inside, deskBeacon)
    range(600..<2400, "desk", deskBeacon)
    region(1000, "door", .enter, .inside, doorBeacon)
    range(1000..<1200, "door", doorBeacon)
    region(1230, "door", .exit, .outside, doorBeacon)
    region(2430, "desk", .exit, .outside, deskBeacon)
    region(3000, "desk", .enter, .inside, deskBeacon)
    range(3000..<3600, "desk", deskBeacon)
    adapter(3600, .down)
    state(3600, "desk", .unknown)
    state(3600, "door", .unknown)
    adapter(3700, .up)
    state(3701, "desk", .inside)
    range(3701..<5000, "desk", deskBeacon)
    state(3730, "door", .outside)
    region(5030, "desk", .exit, .outside, deskBeacon)
    region(6000, "desk", .enter, .inside, deskBeacon)
    range(6000..<6301, "desk", deskBeacon)
    // Time-ordered, as the monitor prints.
    let order = events.enumerated().sorted { ($0.element.t, $0.offset) < ($1.element.t, $1.offset) }
    events = order.map(\.element)
    lines = order.map { lines[$0.offset] }
  }

  mutating func state(_ at: Int64, _ name: String, _ st: PresenceState) {
    region(at, name, .state, st, nil)
  }

  mutating func region(
    _ at: Int64, _ name: String, _ kind: RegionLogEvent.Kind, _ st: PresenceState, _ b: TrackedID?
  ) {
    events.append(
      .region(
        RegionLogEvent(
          t: WallTime(micros: (t0 + at) * s), region: name, kind: kind, state: st, beacon: b)))
    var line = "{\"t\":\(t0 + at).00,\"event\":\"\(kind.rawValue)\",\"region\":\"\(name)\","
    line += "\"state\":\"\(st.rawValue)\""
    if let b { line += ",\"uuid\":\"\(b.uuid)\",\"major\":\(b.major),\"minor\":\(b.minor)" }
    lines.append(line + "}")
  }

  mutating func range(_ seconds: Range<Int64>, _ name: String, _ b: TrackedID) {
    for k in seconds {
      let rssi = -60 - Int(k % 9)
      let distance = 1.0 + Double(k % 5) * 0.25
      let address = BDAddress("C1:02:03:04:05:0\(b.major)")!
      events.append(
        .sighting(
          BeaconSighting(
            t: WallTime(micros: (t0 + k) * s), beacon: b, address: address, rssi: Double(rssi),
            distance: distance,
            region: name)))
      lines.append(
        "{\"t\":\(t0 + k).00,\"event\":\"range\",\"region\":\"\(name)\",\"state\":\"inside\","
          + "\"beacons\":[{\"uuid\":\"\(b.uuid)\",\"major\":\(b.major),\"minor\":\(b.minor),"
          + "\"address\":\"\(address)\",\"rssi\":\(rssi),\"accuracy\":\(distance),\"proximity\":\"near\"}]}"
      )
    }
  }

  mutating func adapter(_ at: Int64, _ kind: AdapterLogEvent.Kind) {
    events.append(
      .adapter(AdapterLogEvent(t: WallTime(micros: (t0 + at) * s), adapter: "hci0", kind: kind)))
    lines.append(
      "{\"t\":\(t0 + at).00,\"event\":\"adapter\",\"adapter\":\"hci0\",\"state\":\"\(kind.rawValue)\"}"
    )
  }

  var text: String { lines.joined(separator: "\n") + "\n" }
}

final class ProximityLogTests: XCTestCase {
  var dir = ""

  override func setUpWithError() throws {
    dir = NSTemporaryDirectory() + "earshot-log-\(getpid())-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    setenv("TZ", "UTC", 1)  // the children print UTC times
  }

  override func tearDownWithError() throws {
    try? FileManager.default.removeItem(atPath: dir)
  }

  func importScenario() throws -> String {
    let db = dir + "/scenario.sqlite"
    let r = try Earshot.run(["log", "import", "--db", db], stdin: LogScenario().text)
    XCTAssertEqual(r.status, 0, r.stderr)
    XCTAssertTrue(r.stdout.contains("imported \(LogScenario().lines.count) line(s)"), r.stdout)
    return db
  }

  func jsonLines(_ text: String) throws -> [[String: Any]] {
    try text.split(separator: "\n").map {
      try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
    }
  }

  func intervals(_ rows: [[String: Any]]) -> [LogScenario.Interval] {
    rows.map {
      LogScenario.Interval(
        region: $0["region"] as! String,
        start: Int64(($0["start"] as! Double).rounded()) - t0,
        end: ($0["end"] as? Double).map { Int64($0.rounded()) - t0 },
        ending: $0["ending"] as! String)
    }
  }

  // MARK: Presence from a scenario

  func testImportedScenarioGivesTheKnownPresenceIntervals() throws {
    let db = try importScenario()
    let r = try Earshot.run(["log", "presence", "--db", db, "--format", "json"])
    XCTAssertEqual(r.status, 0, r.stderr)
    let rows = try jsonLines(r.stdout)
    XCTAssertEqual(intervals(rows), LogScenario.intervals)
    // Durations: closed ones end minus start; the open one up to the log's last record.
    let durations = rows.map { $0["duration_s"] as! Double }
    XCTAssertEqual(durations, [1830, 600, 1329, Double(LogScenario.lastRecord - 6000), 230])
    // The table says the same, with totals.
    let table = try Earshot.run(["log", "presence", "--db", db])
    XCTAssertTrue(
      table.stdout.contains("2026-01-01 08:10:00  2026-01-01 08:40:30  30m 30s"), table.stdout)
    XCTAssertTrue(table.stdout.contains("total desk: 1h 07m 49s in 4 intervals"), table.stdout)
    XCTAssertTrue(table.stdout.contains("total door: 3m 50s in 1 interval"), table.stdout)
    // A window cuts intervals and knows the state at its start.
    let w = try Earshot.run([
      "log", "presence", "--db", db, "--format", "json", "--since", "2026-01-01T08:33:20Z",
      "--until", "@\(t0 + 3300)",
    ])
    XCTAssertEqual(w.status, 0, w.stderr)
    XCTAssertEqual(
      intervals(try jsonLines(w.stdout)),
      [
        LogScenario.Interval(region: "desk", start: 2000, end: 2430, ending: "exit"),
        LogScenario.Interval(region: "desk", start: 3000, end: 3300, ending: "window_end"),
      ])
    let door = try Earshot.run([
      "log", "presence", "--db", db, "--format", "json", "--region", "door",
    ])
    XCTAssertEqual(intervals(try jsonLines(door.stdout)), [LogScenario.intervals[4]])
  }

  /// End to end with the real monitor: the office scenario capture, through
  /// `earshot monitor --input`, into the log; presence must match the
  /// scenario's ground truth within the monitor's bounds.
  func testMonitorOutputOfAScenarioCaptureGivesItsTruthWithinBounds() throws {
    let (capture, truthPath, conf) = try officeScenario()
    let monitor = try Earshot.run(["monitor", "--config", conf, "--input", capture])
    XCTAssertEqual(monitor.status, 0, monitor.stderr)
    let db = dir + "/office.sqlite"
    let imported = try Earshot.run(["log", "import", "--db", db], stdin: monitor.stdout)
    XCTAssertEqual(imported.status, 0, imported.stderr)
    try assertPresence(db: db, matchesTruth: truthPath)
  }

  /// The monitor writing the log itself (`--log`): the same presence, and
  /// sightings from its range events.
  func testMonitorLogOptionFillsALogThatMatchesTheScenarioTruth() throws {
    let (capture, truthPath, conf) = try officeScenario()
    let db = dir + "/monitor.sqlite"
    let monitor = try Earshot.run([
      "monitor", "--config", conf, "--input", capture, "--no-hooks", "--log", db,
    ])
    XCTAssertEqual(monitor.status, 0, monitor.stderr)
    try assertPresence(db: db, matchesTruth: truthPath)
    let rows = try jsonLines(
      try Earshot.run(["log", "--db", db, "--format", "json", "--region", "desk"]).stdout)
    let sightings = rows.filter { $0["type"] as? String == "sighting" }
    XCTAssertGreaterThan(sightings.count, 10, "range events become sighting rows")
    XCTAssertNotNil(sightings.first?["distance"] as? Double, "accuracy is the distance")
    let enters = rows.filter { $0["event"] as? String == "enter" }
    XCTAssertEqual(enters.first?["uuid"] as? String, uuid.description, "the cause is recorded")

    // [log] enabled = true in the config does the same without --log.
    let enabledDB = dir + "/enabled.sqlite"
    let enabledConf = dir + "/enabled.conf"
    try
      (try String(contentsOfFile: conf, encoding: .utf8)
      + "\n[log]\nenabled = true\npath = \(enabledDB)\n")
      .write(toFile: enabledConf, atomically: true, encoding: .utf8)
    let again = try Earshot.run([
      "monitor", "--config", enabledConf, "--input", capture, "--no-hooks", "--no-range",
    ])
    XCTAssertEqual(again.status, 0, again.stderr)
    try assertPresence(db: enabledDB, matchesTruth: truthPath)
  }

  private func officeScenario() throws -> (capture: String, truth: String, conf: String) {
    let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
    let spec = repo.appendingPathComponent("scenarios/office.scenario").path
    let conf = repo.appendingPathComponent("scenarios/office.conf").path
    let capture = dir + "/office.btsnoop"
    let truthPath = dir + "/office.truth"
    let sim = try Earshot.run([
      "simulate", "scenario", "--spec", spec, "--write", capture, "--truth", truthPath,
    ])
    XCTAssertEqual(sim.status, 0, sim.stderr)
    return (capture, truthPath, conf)
  }

  /// `earshot log presence` agrees with the scenario's ground truth within
  /// the monitor's bounds.
  private func assertPresence(
    db: String, matchesTruth truthPath: String
  ) throws {
    let presence = try Earshot.run(["log", "presence", "--db", db, "--format", "json"])
    let intervals = try jsonLines(presence.stdout)
    let truth = try jsonLines(try String(contentsOfFile: truthPath, encoding: .utf8))
    let scenarioEnd = truth.map { $0["to"] as! Double }.max()!
    // The scenario's beacons and the config's regions: desk is desk, tag is lab.
    let regionOf = ["desk": "desk", "tag": "lab"]
    XCTAssertEqual(intervals.count, truth.count)
    for t in truth {
      let region = regionOf[t["beacon"] as! String]!
      let from = t["from"] as! Double
      let to = t["to"] as! Double
      // The interval that starts nearest the truth's start.
      let match = intervals.filter { $0["region"] as? String == region }
        .min { abs(($0["start"] as! Double) - from) < abs(($1["start"] as! Double) - from) }
      let m = try XCTUnwrap(match, "\(region) from \(from)")
      let start = m["start"] as! Double
      XCTAssertGreaterThanOrEqual(start, from, region)
      XCTAssertLessThanOrEqual(start, from + 5, "enter within a few advertising intervals")
      if to >= scenarioEnd {
        XCTAssertEqual(m["ending"] as? String, "open", "still inside when the capture ends")
      } else {
        let end = try XCTUnwrap(m["end"] as? Double, region)
        XCTAssertEqual(m["ending"] as? String, "exit")
        XCTAssertGreaterThan(end, to, "never a false early exit")
        XCTAssertLessThanOrEqual(end, to + 60, "exit within exit_after = auto's bound")
      }
    }
  }

  func testTheWriterFedDirectlyKeepsTheSameHistory() throws {
    let db = dir + "/direct.sqlite"
    var reports: [String] = []
    let writer = ProximityLogWriter(
      settings: .init(path: db), report: { reports.append($0) }, clock: nil)
    for e in LogScenario().events { writer.record(e) }
    XCTAssertTrue(writer.close())
    XCTAssertEqual(reports, [])
    XCTAssertEqual(writer.stats.droppedSightings, 0)
    let reader = try ProximityLogReader(path: db)
    let p = try reader.presence(LogQuery())
    XCTAssertEqual(
      p.map {
        LogScenario.Interval(
          region: $0.region, start: $0.start.micros / s - t0,
          end: $0.end.map { $0.micros / s - t0 },
          ending: $0.ending.rawValue)
      }, LogScenario.intervals)
    // One sighting row per beacon per 10 s: desk 600-2399, 3000-3599, 3701-4999, 6000-6300.
    let rows = try reader.store.sightings(since: nil, until: nil)
    let deskRows = rows.filter { $0.beacon == deskBeacon }
    XCTAssertEqual(deskRows.count, 180 + 60 + 130 + 31)
    XCTAssertEqual(rows.filter { $0.beacon == doorBeacon }.count, 20)
    XCTAssertEqual(deskRows.reduce(0) { $0 + $1.count }, 1800 + 600 + 1299 + 301)
    let first = deskRows[0]
    XCTAssertEqual(first.start, WallTime(micros: (t0 + 600) * s))
    XCTAssertEqual(first.count, 10)
    XCTAssertEqual(first.rssiMin, -68)
    XCTAssertEqual(first.rssiMax, -60)
    XCTAssertEqual(try reader.store.beaconRegions(), [deskBeacon: ["desk"], doorBeacon: ["door"]])
    // Adapter events are kept and shown.
    let adapter = try reader.records(LogQuery()).filter {
      if case .adapter = $0 { return true } else { return false }
    }
    XCTAssertEqual(adapter.count, 2)
  }

  func testAltBeaconAndEddystoneReadBackAsThemselvesAndOldFilesMigrate() throws {
    let db = dir + "/formats.sqlite"
    // A version-1 file, as the previous earshot wrote it: its rows are iBeacons.
    let old = try SQLiteConnection(path: db, create: true, busyTimeoutMillis: 100)
    try old.exec(ProximityLogStore.migrations[0])
    try old.exec("PRAGMA user_version = 1")
    try old.exec(
      "INSERT INTO sightings(t, t_end, uuid, major, minor, count, rssi_count) "
        + "VALUES (1, 2, '\(uuid)', 1, 10, 1, 0)")
    try old.exec("INSERT INTO beacon_regions VALUES ('desk', '\(uuid)', 1, 10, 1)")
    let alt = TrackedID(kind: .altBeacon, uuid: uuid, major: 1, minor: 10)
    let eddy = TrackedID(
      eddystoneNamespace: BeaconBytes(hex: "8f2c1a3e5b7d4e90a1c2")!,
      instance: BeaconBytes(hex: "000000000001")!)
    let writer = ProximityLogWriter(settings: .init(path: db), report: { _ in }, clock: nil)
    let t = (t0 + 100) * s
    for b in [alt, eddy] {
      writer.record(
        .sighting(BeaconSighting(t: WallTime(micros: t), beacon: b, rssi: -60, region: "desk")))
    }
    writer.record(
      .region(
        RegionLogEvent(
          t: WallTime(micros: t), region: "desk", kind: .enter, state: .inside, beacon: eddy)))
    XCTAssertTrue(writer.close())
    let reader = try ProximityLogReader(path: db)
    XCTAssertEqual(try reader.store.version(), ProximityLogStore.schemaVersion)
    XCTAssertEqual(
      Set(try reader.store.sightings(since: nil, until: nil).map(\.beacon)),
      [deskBeacon, alt, eddy])
    XCTAssertEqual(
      try reader.store.beaconRegions(), [deskBeacon: ["desk"], alt: ["desk"], eddy: ["desk"]])
    XCTAssertEqual(try reader.store.regionEvents().map(\.beacon), [eddy])
    // --beacon names each format, and a namespace finds its instances.
    for (text, want) in [
      ("altbeacon:\(uuid)", [alt]), ("\(uuid):1:10", [deskBeacon]),
      ("eddystone:8f2c1a3e5b7d4e90a1c2", [eddy]),
    ] {
      let rows = try reader.records(LogQuery(beacon: try TrackedMatch.parse(text))).compactMap {
        if case .sightings(let r) = $0 { return r.beacon } else { return nil }
      }
      XCTAssertEqual(rows, want, text)
    }
  }

  /// Beacons' telemetry: written as rows of their own (schema 3, a
  /// version-2 file gains the table), read back with `--beacon` and
  /// `--region`, and shown by `earshot log` in every format.
  func testTelemetryIsLoggedAndReadBack() throws {
    let db = dir + "/telemetry.sqlite"
    let old = try SQLiteConnection(path: db, create: true, busyTimeoutMillis: 100)
    try old.exec(ProximityLogStore.migrations[0])
    try old.exec(ProximityLogStore.migrations[1])
    try old.exec("PRAGMA user_version = 2")
    let eddy = TrackedID(
      eddystoneNamespace: BeaconBytes(hex: "8f2c1a3e5b7d4e90a1c2")!,
      instance: BeaconBytes(hex: "000000000001")!)
    let writer = ProximityLogWriter(settings: .init(path: db), report: { _ in }, clock: nil)
    let t = (t0 + 100) * s
    writer.record(
      .sighting(BeaconSighting(t: WallTime(micros: t), beacon: eddy, rssi: -60, region: "desk")))
    let readings = [
      BeaconTelemetry(
        decided: DecisionTime(micros: t), shown: WallTime(micros: t), batteryMillivolts: 2840,
        temperature: 19.5, advertisingCount: 5223,
        uptimeSeconds: 1094.8),
      BeaconTelemetry(
        decided: DecisionTime(micros: t + 600 * s), shown: WallTime(micros: t + 600 * s),
        batteryMillivolts: nil, temperature: nil, advertisingCount: 11223,
        uptimeSeconds: 1694.8),
    ]
    for r in readings { writer.record(.telemetry(TelemetryLogEvent(beacon: eddy, reading: r))) }
    writer.record(
      .telemetry(TelemetryLogEvent(beacon: deskBeacon, reading: readings[0])))
    XCTAssertTrue(writer.close())

    let reader = try ProximityLogReader(path: db)
    XCTAssertEqual(try reader.store.version(), ProximityLogStore.schemaVersion)
    XCTAssertEqual(
      try reader.store.telemetry(since: nil, until: nil),
      [
        TelemetryLogEvent(beacon: eddy, reading: readings[0]),
        TelemetryLogEvent(beacon: deskBeacon, reading: readings[0]),
        TelemetryLogEvent(beacon: eddy, reading: readings[1]),
      ], "time, then the order written")
    func telemetry(_ q: LogQuery) throws -> [TelemetryLogEvent] {
      try reader.records(q).compactMap { if case .telemetry(let e) = $0 { e } else { nil } }
    }
    XCTAssertEqual(
      try telemetry(LogQuery(beacon: try TrackedMatch.parse("eddystone:8f2c1a3e5b7d4e90a1c2")))
        .map(\.reading), readings)
    XCTAssertEqual(try telemetry(LogQuery(region: "desk")).map(\.beacon), [eddy, eddy])
    XCTAssertEqual(
      try telemetry(LogQuery(since: WallTime(micros: t + 1))).map(\.reading), [readings[1]])
    XCTAssertEqual(try reader.store.lastTime(), WallTime(micros: t + 600 * s))

    let json = try Earshot.run(["log", "--db", db, "--format", "json", "--region", "desk"])
    XCTAssertEqual(json.status, 0, json.stderr)
    let rows = try jsonLines(json.stdout).filter { $0["type"] as? String == "telemetry" }
    XCTAssertEqual(rows.count, 2, json.stdout)
    XCTAssertEqual(rows[0]["battery_mv"] as? Int, 2840)
    XCTAssertEqual(rows[0]["temperature"] as? Double, 19.5)
    XCTAssertEqual(rows[0]["adv_count"] as? Int, 5223)
    XCTAssertNil(rows[1]["battery_mv"], "no battery reading: absent")
    let csv = try Earshot.run(["log", "--db", db, "--format", "csv", "--region", "desk"])
    let line = try XCTUnwrap(csv.stdout.split(separator: "\n").first { $0.contains(",telemetry,") })
    let header = LogFormatter.csvHeader.split(separator: ",").map(String.init)
    let cells = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
    XCTAssertEqual(cells.count, header.count, String(line))
    XCTAssertEqual(cells[header.firstIndex(of: "battery_mv")!], "2840")
    let table = try Earshot.run(["log", "--db", db, "--region", "desk"])
    XCTAssertTrue(table.stdout.contains("battery 2840 mV  19.5 °C"), table.stdout)
    XCTAssertTrue(table.stdout.contains("no battery reading"), table.stdout)
  }

  // MARK: Exports

  func testCSVAndJSONExportsParseAndAgree() throws {
    let db = try importScenario()
    let json = try Earshot.run(["log", "--db", db, "--format", "json"])
    let csv = try Earshot.run(["log", "--db", db, "--format", "csv"])
    XCTAssertEqual(json.status, 0, json.stderr)
    XCTAssertEqual(csv.status, 0, csv.stderr)
    let objects = try jsonLines(json.stdout)
    let csvLines = csv.stdout.split(separator: "\n").map(String.init)
    let header = csvLines[0].split(separator: ",", omittingEmptySubsequences: false).map(
      String.init)
    XCTAssertEqual(header.first, "t")
    let rows = csvLines.dropFirst().map {
      Dictionary(
        uniqueKeysWithValues: zip(
          header, $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init)))
    }
    XCTAssertEqual(rows.count, objects.count)
    XCTAssertEqual(objects.filter { $0["type"] as? String == "region" }.count, 15)
    XCTAssertEqual(objects.filter { $0["type"] as? String == "sighting" }.count, 401 + 20)
    XCTAssertEqual(objects.filter { $0["type"] as? String == "adapter" }.count, 2)
    for (o, r) in zip(objects, rows) {
      XCTAssertEqual(r.count, header.count)
      XCTAssertEqual(Double(r["t"]!)!, o["t"] as! Double, accuracy: 1e-6)
      for key in ["type", "time", "region", "event", "state", "uuid", "address"] {
        XCTAssertEqual(r[key]!, (o[key] as? String) ?? "", key)
      }
      for key in ["major", "minor", "count", "rssi_min", "rssi_max"] {
        XCTAssertEqual(r[key]!, (o[key] as? NSNumber).map { "\($0.intValue)" } ?? "", key)
      }
      if let mean = o["rssi_mean"] as? Double {
        XCTAssertEqual(Double(r["rssi_mean"]!)!, mean, accuracy: 1e-9)
      }
    }
    // Times are in order.
    let times = objects.map { $0["t"] as! Double }
    XCTAssertEqual(times, times.sorted())
    // Filters: a beacon keeps its sightings and its region's events.
    let door = try Earshot.run([
      "log", "--db", db, "--format", "json", "--beacon", "\(uuid):2",
    ])
    let doorRows = try jsonLines(door.stdout)
    XCTAssertEqual(doorRows.filter { $0["type"] as? String == "sighting" }.count, 20)
    XCTAssertTrue(doorRows.allSatisfy { ($0["region"] as? String ?? "door") == "door" })
    XCTAssertTrue(doorRows.allSatisfy { ($0["minor"] as? Int ?? 1) == 1 })
    let since = try Earshot.run([
      "log", "--db", db, "--format", "json", "--region", "desk", "--since", "2026-01-01T09:40Z",
    ])
    let late = try jsonLines(since.stdout)
    XCTAssertTrue(late.allSatisfy { ($0["t"] as! Double) >= Double(t0 + 6000) })
    XCTAssertEqual(late.filter { $0["type"] as? String == "region" }.count, 1)
    let bad = try Earshot.run(["log", "--db", db, "--since", "yesterday"])
    XCTAssertEqual(bad.status, 2)
    XCTAssertTrue(bad.stderr.contains("is not a time"), bad.stderr)
    let missing = try Earshot.run(["log", "--db", dir + "/nope.sqlite"])
    XCTAssertEqual(missing.status, 1)
    XCTAssertTrue(missing.stderr.contains("earshot log import"), missing.stderr)
  }

  func testImportReportsBadLinesAndKeepsTheGoodOnes() throws {
    let db = dir + "/bad.sqlite"
    let input =
      "{\"t\":\(t0),\"event\":\"enter\",\"region\":\"desk\",\"state\":\"inside\"}\nnot json\n"
      + "{\"t\":\(t0 + 5),\"event\":\"exit\",\"region\":\"desk\",\"state\":\"outside\"}\n"
    let r = try Earshot.run(["log", "import", "--db", db], stdin: input)
    XCTAssertEqual(r.status, 1)
    XCTAssertTrue(r.stderr.contains("line 2: not JSON"), r.stderr)
    XCTAssertTrue(r.stdout.contains("1 bad line(s) skipped"), r.stdout)
    let p = try ProximityLogReader(path: db).presence(LogQuery())
    XCTAssertEqual(p.map(\.ending), [.exit])
  }

  // MARK: The plot

  /// Without --day or --since the plot spans the data, not the whole day.
  func testPlotWithoutAWindowSpansTheData() throws {
    let db = try importScenario()
    let svgPath = dir + "/span.svg"
    let r = try Earshot.run(["plot", "--db", db, "--out", svgPath])
    XCTAssertEqual(r.status, 0, r.stderr)
    let store = try ProximityLogReader(path: db).store
    let first = try XCTUnwrap(try store.firstTime())
    let last = try XCTUnwrap(try store.lastTime())
    XCTAssertLessThan(last.micros - first.micros, 86_400 * s, "the scenario is shorter than a day")
    let layout = ProximityPlot.Layout(start: first, end: last)
    let doc = try XMLElements(try String(contentsOfFile: svgPath, encoding: .utf8))
    let shades = doc.filter { $0.attributes["class"] == "inside" }
    let interval = try XCTUnwrap(LogScenario.intervals.first)
    let shade = try XCTUnwrap(shades.first)
    XCTAssertEqual(
      Double(shade.attributes["x"]!)!, layout.x(WallTime(micros: (t0 + interval.start) * s)),
      accuracy: 0.01,
      "the first inside interval is placed on the data's span")
  }

  func testDataSpanIsAtLeastAMinuteAndAtMostADay() {
    let m: Int64 = 60_000_000
    XCTAssertEqual(
      ProximityPlot.dataSpan(first: WallTime(micros: 0), last: WallTime(micros: 20 * m)).since,
      WallTime(micros: 0))
    XCTAssertEqual(
      ProximityPlot.dataSpan(first: WallTime(micros: 0), last: WallTime(micros: 20 * m)).until,
      WallTime(micros: 20 * m))
    XCTAssertEqual(
      ProximityPlot.dataSpan(first: WallTime(micros: 5), last: WallTime(micros: 5)).until,
      WallTime(micros: 5 + m))
    XCTAssertEqual(
      ProximityPlot.dataSpan(first: WallTime(micros: 0), last: WallTime(micros: 3 * 1440 * m))
        .since, WallTime(micros: 2 * 1440 * m))
  }

  func testPlotIsValidSVGWithSeriesAndShadingAndRendersToPNG() throws {
    let db = try importScenario()
    let svgPath = dir + "/day.svg"
    let pngPath = dir + "/day.png"
    var args = ["plot", "--db", db, "--day", "2026-01-01", "--out", svgPath]
    let rsvg = Earshot.tool("rsvg-convert")
    if rsvg != nil { args += ["--png", pngPath] }
    let r = try Earshot.run(args)
    XCTAssertEqual(r.status, 0, r.stderr)
    let svg = try String(contentsOfFile: svgPath, encoding: .utf8)
    let doc = try XMLElements(svg)
    XCTAssertEqual(doc.first?.name, "svg")
    let rssi = doc.filter { $0.name == "path" && $0.attributes["class"] == "rssi" }
    XCTAssertEqual(
      Set(rssi.compactMap { $0.attributes["data-beacon"] }),
      [deskBeacon.description, doorBeacon.description])
    XCTAssertEqual(rssi.count, 2, "one series per beacon")
    let day = t0 - 8 * 3600  // 2026-01-01T00:00Z
    let layout = ProximityPlot.Layout(
      start: WallTime(micros: day * s), end: WallTime(micros: (day + 86_400) * s))
    // desk's panel is shaded over desk's inside intervals, door's over door's.
    let shades = doc.filter { $0.attributes["class"] == "inside" }
    let expected: [(String, Int64, Int64)] = LogScenario.intervals.map {
      ($0.region, $0.start, $0.end ?? LogScenario.lastRecord)
    }
    XCTAssertEqual(shades.count, expected.count)
    for (shade, (region, start, end)) in zip(shades, expected) {
      XCTAssertEqual(shade.attributes["data-region"], region)
      let x = Double(shade.attributes["x"]!)!
      let w = Double(shade.attributes["width"]!)!
      XCTAssertEqual(
        x, layout.x(WallTime(micros: (t0 + start) * s)), accuracy: 0.01, "\(region) \(start)")
      XCTAssertEqual(
        x + w, layout.x(WallTime(micros: (t0 + end) * s)), accuracy: 0.02, "\(region) \(end)")
      let panel = region == "desk" ? 0 : 1  // beacons sorted: desk (major 1) first
      XCTAssertEqual(Double(shade.attributes["y"]!)!, layout.panelTop(panel), accuracy: 0.01)
    }
    XCTAssertEqual(doc.filter { $0.attributes["class"] == "presence" }.count, 5)
    XCTAssertGreaterThanOrEqual(doc.filter { $0.attributes["class"] == "unknown" }.count, 3)
    guard rsvg != nil else { try requireResource("rsvg-convert (package librsvg2-bin)") }
    let png = try Data(contentsOf: URL(fileURLWithPath: pngPath))
    XCTAssertGreaterThan(png.count, 1000)
    XCTAssertEqual([UInt8](png.prefix(8)), [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
  }

  // MARK: Concurrency and failures

  /// An `earshot log import` fed through a pipe we keep open.
  final class StreamingImport {
    let process = Process()
    let input = Pipe()

    init(db: String, batch: Int) throws {
      process.executableURL = URL(fileURLWithPath: Earshot.binary)
      process.arguments = ["log", "import", "--db", db, "--batch", String(batch)]
      process.standardInput = input
      process.standardOutput = FileHandle.nullDevice
      process.standardError = FileHandle.nullDevice
      try process.run()
    }

    func send(_ lines: [String]) {
      input.fileHandleForWriting.write(Data((lines.joined(separator: "\n") + "\n").utf8))
    }

    func finish() throws -> Int32 {
      try input.fileHandleForWriting.close()
      process.waitUntilExit()
      return process.terminationStatus
    }
  }

  func toggles(_ range: Range<Int>) -> [String] {
    range.map {
      "{\"t\":\(t0 + Int64($0)),\"event\":\"\($0 % 2 == 0 ? "enter" : "exit")\",\"region\":\"r\","
        + "\"state\":\"\($0 % 2 == 0 ? "inside" : "outside")\"}"
    }
  }

  func regionRows(_ db: String) throws -> (status: Int32, count: Int) {
    let r = try Earshot.run(["log", "--db", db, "--format", "csv", "--region", "r"])
    let lines = r.stdout.split(separator: "\n")
    XCTAssertTrue(
      lines.dropFirst().allSatisfy {
        $0.split(separator: ",", omittingEmptySubsequences: false).count
          == LogFormatter.csvHeader.split(separator: ",").count
      },
      "every row complete")
    XCTAssertEqual(r.status, 0, r.stderr)
    return (r.status, max(0, lines.count - 1))
  }

  func waitFor(_ what: String, _ condition: () throws -> Bool) throws {
    // Not a speed limit: only a guard against hanging forever.
    for _ in 0..<600 {
      if try condition() { return }
      usleep(50_000)
    }
    XCTFail("gave up waiting for \(what)")
  }

  func testReadersWorkWhileAWriterWrites() throws {
    let db = dir + "/busy.sqlite"
    let writer = try StreamingImport(db: db, batch: 25)
    writer.send(toggles(0..<25))
    try waitFor("the first batch") { FileManager.default.fileExists(atPath: db) }
    var last = 0
    var reads = 0
    for chunk in 1..<40 {
      writer.send(toggles((chunk * 25)..<(chunk * 25 + 25)))
      let (status, count) = try regionRows(db)
      XCTAssertEqual(status, 0)
      XCTAssertGreaterThanOrEqual(count, last, "rows never go missing")
      XCTAssertEqual(count % 25, 0, "a reader sees whole batches only: \(count)")
      last = count
      reads += 1
    }
    XCTAssertEqual(try writer.finish(), 0)
    XCTAssertEqual(try regionRows(db).count, 1000)
    XCTAssertEqual(reads, 39)
  }

  func testAKilledWriterLosesAtMostTheOpenBatch() throws {
    let db = dir + "/killed.sqlite"
    let writer = try StreamingImport(db: db, batch: 50)
    writer.send(toggles(0..<200))
    try waitFor("four batches") {
      try FileManager.default.fileExists(atPath: db) && regionRows(db).count == 200
    }
    writer.send(toggles(200..<230))  // an open batch: 30 < 50
    usleep(300_000)
    kill(writer.process.processIdentifier, SIGKILL)
    writer.process.waitUntilExit()
    XCTAssertEqual(writer.process.terminationReason, .uncaughtSignal)
    let after = try regionRows(db)
    XCTAssertEqual(after.status, 0)
    XCTAssertEqual(after.count, 200, "the committed batches survive; only the open one is lost")
    let store = try ProximityLogStore.openForReading(path: db)
    XCTAssertEqual(try store.integrityCheck(), "ok")
    // And it takes writes again.
    let again = try Earshot.run(
      ["log", "import", "--db", db], stdin: toggles(230..<240).joined(separator: "\n"))
    XCTAssertEqual(again.status, 0, again.stderr)
    XCTAssertEqual(try regionRows(db).count, 210)
  }

  func testALockedDatabaseIsRetriedWithoutLosingRegionEvents() throws {
    let db = dir + "/locked.sqlite"
    var reports: [String] = []
    var settings = ProximityLogWriter.Settings(path: db)
    settings.maxBacklog = 100
    settings.flushRows = 10
    let writer = ProximityLogWriter(settings: settings, report: { reports.append($0) }, clock: nil)
    writer.record(
      .region(
        RegionLogEvent(t: WallTime(micros: t0 * s), region: "desk", kind: .state, state: .outside)))
    XCTAssertTrue(writer.flush(), "creates the file")

    let other = try SQLiteConnection(path: db, busyTimeoutMillis: 0)
    try other.exec("BEGIN IMMEDIATE")  // holds the write lock
    for k in 1...50 {
      writer.record(
        .region(
          RegionLogEvent(
            t: WallTime(micros: (t0 + Int64(k) * 20) * s), region: "desk",
            kind: k % 2 == 1 ? .enter : .exit,
            state: k % 2 == 1 ? .inside : .outside)))
      // A few beacons for 20 s each: many sighting rows.
      for j in 0..<20 {
        for m in 0..<5 {
          writer.record(
            .sighting(
              BeaconSighting(
                t: WallTime(micros: (t0 + Int64(k) * 20 + Int64(j)) * s),
                beacon: TrackedID(uuid: uuid, major: 9, minor: UInt16(m)), rssi: -70)))
        }
      }
    }
    XCTAssertFalse(writer.flush())
    XCTAssertGreaterThan(writer.stats.failedFlushes, 0)
    XCTAssertTrue(reports.first?.contains("locked") ?? false, "\(reports)")
    XCTAssertEqual(reports.count, 1, "reported once, not per attempt: \(reports)")
    XCTAssertGreaterThan(writer.stats.droppedSightings, 0, "the backlog is bounded")
    XCTAssertLessThanOrEqual(writer.backlog, 100 + 50)

    try other.exec("COMMIT")
    XCTAssertTrue(writer.close())
    XCTAssertTrue(reports.last?.contains("writing again") ?? false, "\(reports)")
    XCTAssertTrue(reports.last?.contains("dropped") ?? false, "\(reports)")
    let reader = try ProximityLogReader(path: db)
    let events = try reader.store.regionEvents()
    XCTAssertEqual(events.count, 51, "no region event lost")
    XCTAssertEqual(try reader.presence(LogQuery()).count, 25)
    let sightings = try reader.store.sightings(since: nil, until: nil)
    XCTAssertEqual(sightings.count + writer.stats.droppedSightings, 50 * 2 * 5)
  }

  func testSchemaVersionRetentionAndDefaultPath() throws {
    let db = dir + "/schema.sqlite"
    var settings = ProximityLogWriter.Settings(path: db)
    settings.keepDays = 1
    var reports: [String] = []
    let writer = ProximityLogWriter(settings: settings, report: { reports.append($0) }, clock: nil)
    let now = (t0 + 10 * 86_400) * s
    writer.record(
      .region(
        RegionLogEvent(
          t: WallTime(micros: now - 2 * 86_400 * s), region: "old", kind: .state, state: .inside)))
    writer.record(.volume(VolumeLogEvent(t: WallTime(micros: now - 2 * 86_400 * s), volume: 0.5)))
    writer.record(
      .region(
        RegionLogEvent(
          t: WallTime(micros: now - 3600 * s), region: "new", kind: .state, state: .inside)))
    XCTAssertTrue(writer.close())
    writer.enforceRetention(now: now)
    XCTAssertEqual(writer.stats.retentionDeleted, 2)
    let store = try ProximityLogStore.openForReading(path: db)
    XCTAssertEqual(try store.version(), ProximityLogStore.schemaVersion)
    XCTAssertEqual(try store.regionEvents().map(\.region), ["new"])
    XCTAssertEqual(try store.journalMode(), "wal")

    // A file from a newer earshot is refused with a clear message.
    let other = try SQLiteConnection(path: db, busyTimeoutMillis: 100)
    try other.exec("PRAGMA user_version = 99")
    XCTAssertThrowsError(try ProximityLogStore.openForReading(path: db)) {
      XCTAssertTrue("\($0)".contains("upgrade earshot"), "\($0)")
    }
    let w2 = ProximityLogWriter(settings: settings, report: { reports.append($0) }, clock: nil)
    w2.record(
      .region(RegionLogEvent(t: WallTime(micros: now), region: "x", kind: .state, state: .inside)))
    XCTAssertFalse(w2.close())
    XCTAssertTrue(reports.last?.contains("newer") ?? false, "\(reports)")
    XCTAssertEqual(w2.backlog, 1, "kept for a later retry")

    let path = ProximityLogPaths.defaultPath()
    if getuid() == 0 {
      XCTAssertEqual(path, "/var/lib/earshot/proximity.sqlite")
    } else {
      XCTAssertTrue(path.hasSuffix("/earshot/proximity.sqlite"), path)
    }
  }

  func testAClockSetAYearAheadPrunesNothingEarly() throws {
    final class Box: @unchecked Sendable { var clock = TestClock() }
    let box = Box()
    let db = dir + "/ahead.sqlite"
    var settings = ProximityLogWriter.Settings(path: db)
    settings.keepDays = 1
    let writer = ProximityLogWriter(
      settings: settings, report: { _ in }, clock: { box.clock.reading })
    let now = box.clock.wallMicros
    writer.record(
      .region(
        RegionLogEvent(
          t: WallTime(micros: now - 3 * 86_400 * s), region: "old", kind: .state, state: .inside)))
    writer.record(
      .region(
        RegionLogEvent(
          t: WallTime(micros: now - 2 * 3600 * s), region: "new", kind: .state, state: .inside)))
    XCTAssertTrue(writer.close())
    box.clock.advance(60)
    box.clock.step(365 * 86_400)
    let loop = try EventLoop()
    writer.attach(to: loop)  // retention runs at once
    writer.detach(from: loop)
    XCTAssertEqual(writer.stats.retentionDeleted, 1)
    let store = try ProximityLogStore.openForReading(path: db)
    XCTAssertEqual(try store.regionEvents().map(\.region), ["new"])
  }

  func testTheLoopFlushesOnItsTimer() throws {
    let db = dir + "/loop.sqlite"
    var settings = ProximityLogWriter.Settings(path: db)
    settings.flushSeconds = 0.05
    let writer = ProximityLogWriter(settings: settings, report: { _ in })
    let loop = try EventLoop()
    writer.attach(to: loop)
    let now = Clock.realtimeMicros()
    writer.record(
      .region(
        RegionLogEvent(t: WallTime(micros: now), region: "desk", kind: .enter, state: .inside)))
    writer.record(
      .sighting(BeaconSighting(t: WallTime(micros: now - 20 * s), beacon: deskBeacon, rssi: -60)))
    XCTAssertEqual(writer.backlog, 1, "recording does no I/O")
    loop.after(seconds: 0.2) { loop.stop() }
    try loop.run()
    writer.detach(from: loop)
    XCTAssertEqual(writer.backlog, 0)
    let store = try ProximityLogStore.openForReading(path: db)
    XCTAssertEqual(try store.regionEvents().count, 1)
    XCTAssertEqual(
      try store.sightings(since: nil, until: nil).count, 1, "the clock closed the interval")
  }
}

/// Elements of an XML document, read with Foundation's parser (a parse
/// error fails the test: the SVG must be well-formed).
func XMLElements(_ text: String) throws -> [(name: String, attributes: [String: String])] {
  final class Collector: NSObject, XMLParserDelegate {
    var elements: [(name: String, attributes: [String: String])] = []
    func parser(
      _ parser: XMLParser, didStartElement name: String, namespaceURI: String?,
      qualifiedName: String?, attributes: [String: String]
    ) {
      elements.append((name, attributes))
    }
  }
  let parser = XMLParser(data: Data(text.utf8))
  let c = Collector()
  parser.delegate = c
  guard parser.parse() else {
    XCTFail(
      "not well-formed XML: \(String(describing: parser.parserError)) at line \(parser.lineNumber)")
    return []
  }
  return c.elements
}

extension ProximityLogTests {
  /// A tracker that follows and is cleared: two rows, in a version-3 file
  /// the writer migrates, and `earshot log` shows them in each format.
  func testTrackerRowsAreLoggedAndOldFilesMigrate() throws {
    let db = dir + "/trackers.sqlite"
    let old = try SQLiteConnection(path: db, create: true, busyTimeoutMillis: 100)
    for m in ProximityLogStore.migrations[0..<3] { try old.exec(m) }
    try old.exec("PRAGMA user_version = 3")
    try old.exec("INSERT INTO volume_events(t, volume, muted) VALUES (\(t0 * s), 0.5, 0)")
    // A reader of the old file: no tracker table yet, and no error.
    let before = try ProximityLogStore.openForReading(path: db)
    XCTAssertEqual(try before.agentEvents(since: nil, until: nil).count, 1)

    let address = BDAddress("C3:11:22:33:44:55")!
    let writer = ProximityLogWriter(settings: .init(path: db), report: { _ in }, clock: nil)
    for (offset, kind, places, sightings) in [
      (2400, TrackerLogEvent.Kind.following, 2, 41), (5400, .cleared, 3, 90),
    ] {
      writer.record(
        .tracker(
          TrackerLogEvent(
            t: WallTime(micros: (t0 + Int64(offset)) * s), kind: kind, number: 1,
            protocolName: "Find My (separated)", trackerKind: "airtag", address: address,
            places: places, sightings: sightings)))
    }
    XCTAssertTrue(writer.close())
    let reader = try ProximityLogReader(path: db)
    XCTAssertEqual(try reader.store.version(), 4)
    XCTAssertEqual(ProximityLogStore.schemaVersion, 4)
    let trackers = try reader.records(LogQuery()).compactMap {
      if case .tracker(let e) = $0 { e } else { nil }
    }
    XCTAssertEqual(trackers.map(\.kind), [.following, .cleared])
    XCTAssertEqual(trackers.map(\.places), [2, 3])
    XCTAssertEqual(trackers.first?.address, address)

    let table = try Earshot.run(["log", "--db", db])
    XCTAssertEqual(table.status, 0, table.stderr)
    let rows = table.stdout.split(separator: "\n").filter { $0.contains("tracker 1") }
    XCTAssertEqual(rows.count, 2, table.stdout)
    XCTAssertTrue(rows.first?.contains("tracker 1 C3:11:22:33:44:55 ") == true, table.stdout)
    XCTAssertTrue(
      rows.first?.hasSuffix("following  Find My (separated): airtag, 2 places  n=41") == true,
      table.stdout)
    let json = try jsonLines(try Earshot.run(["log", "--db", db, "--format", "json"]).stdout)
      .filter { $0["type"] as? String == "tracker" }
    XCTAssertEqual(json.map { $0["event"] as? String }, ["following", "cleared"])
    XCTAssertEqual(json.first?["address"] as? String, "C3:11:22:33:44:55")
    XCTAssertEqual(json.first?["device"] as? String, "tracker 1")
    XCTAssertEqual((json.last?["count"] as? NSNumber)?.intValue, 90)
    let csv = try Earshot.run(["log", "--db", db, "--format", "csv"]).stdout
      .split(separator: "\n").filter { $0.contains(",tracker,") }
    XCTAssertEqual(csv.count, 2)
    XCTAssertTrue(
      csv.first?.contains(
        ",tracker,,following,,,,,C3:11:22:33:44:55,,41,") == true, "\(csv)")
  }
}
