import CSQLite3
import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// The proximity log's SQLite file: schema, migrations, batched inserts,
/// retention and queries. Times are integer microseconds since the epoch;
/// beacons are stored as text UUIDs and integer major/minor so the file
/// reads well with the `sqlite3` tool.
public final class ProximityLogStore {
  public let connection: SQLiteConnection
  public var path: String { connection.path }

  /// Each entry upgrades the schema by one version; `PRAGMA user_version`
  /// records how many have run. Append, never edit, once released.
  public static let migrations: [String] = [
    // 1: the first schema.
    """
    CREATE TABLE region_events (
      id INTEGER PRIMARY KEY, t INTEGER NOT NULL, region TEXT NOT NULL,
      event TEXT NOT NULL, state TEXT NOT NULL, uuid TEXT, major INTEGER, minor INTEGER);
    CREATE INDEX region_events_by_time ON region_events(t);
    CREATE TABLE sightings (
      id INTEGER PRIMARY KEY, t INTEGER NOT NULL, t_end INTEGER NOT NULL,
      uuid TEXT NOT NULL, major INTEGER NOT NULL, minor INTEGER NOT NULL, address TEXT,
      count INTEGER NOT NULL, rssi_count INTEGER NOT NULL,
      rssi_mean REAL, rssi_min REAL, rssi_max REAL, distance REAL);
    CREATE INDEX sightings_by_time ON sightings(t);
    CREATE INDEX sightings_by_beacon ON sightings(uuid, major, minor, t);
    CREATE TABLE beacon_regions (
      region TEXT NOT NULL, uuid TEXT NOT NULL, major INTEGER NOT NULL, minor INTEGER NOT NULL,
      first_seen INTEGER NOT NULL, PRIMARY KEY (region, uuid, major, minor)) WITHOUT ROWID;
    CREATE TABLE adapter_events (
      id INTEGER PRIMARY KEY, t INTEGER NOT NULL, adapter TEXT NOT NULL, event TEXT NOT NULL);
    CREATE INDEX adapter_events_by_time ON adapter_events(t);
    CREATE TABLE find_phone_events (
      id INTEGER PRIMARY KEY, t INTEGER NOT NULL, event TEXT NOT NULL, device TEXT NOT NULL,
      detail TEXT);
    CREATE INDEX find_phone_events_by_time ON find_phone_events(t);
    CREATE TABLE volume_events (
      id INTEGER PRIMARY KEY, t INTEGER NOT NULL, volume REAL NOT NULL, muted INTEGER NOT NULL,
      source TEXT);
    CREATE INDEX volume_events_by_time ON volume_events(t);
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    // 2: the beacon's format (ibeacon, altbeacon, eddystone), so an
    // AltBeacon or Eddystone-UID reads back as itself; older rows are iBeacons.
    """
    ALTER TABLE region_events ADD COLUMN format TEXT NOT NULL DEFAULT 'ibeacon';
    ALTER TABLE sightings ADD COLUMN format TEXT NOT NULL DEFAULT 'ibeacon';
    CREATE TABLE beacon_regions_2 (
      region TEXT NOT NULL, format TEXT NOT NULL, uuid TEXT NOT NULL, major INTEGER NOT NULL,
      minor INTEGER NOT NULL, first_seen INTEGER NOT NULL,
      PRIMARY KEY (region, format, uuid, major, minor)) WITHOUT ROWID;
    INSERT INTO beacon_regions_2 SELECT region, 'ibeacon', uuid, major, minor, first_seen
      FROM beacon_regions;
    DROP TABLE beacon_regions;
    ALTER TABLE beacon_regions_2 RENAME TO beacon_regions;
    """,
    // 3: beacons' own telemetry (Eddystone-TLM), joined to the beacon.
    """
    CREATE TABLE beacon_telemetry (
      id INTEGER PRIMARY KEY, t INTEGER NOT NULL, format TEXT NOT NULL, uuid TEXT NOT NULL,
      major INTEGER NOT NULL, minor INTEGER NOT NULL, battery_mv INTEGER, temperature REAL,
      advertisements INTEGER NOT NULL, uptime_s REAL NOT NULL);
    CREATE INDEX beacon_telemetry_by_time ON beacon_telemetry(t);
    """,
    // 4: trackers that started to follow, and those cleared (docs/trackers.md).
    """
    CREATE TABLE tracker_events (
      id INTEGER PRIMARY KEY, t INTEGER NOT NULL, event TEXT NOT NULL, number INTEGER NOT NULL,
      protocol TEXT NOT NULL, kind TEXT NOT NULL, address TEXT NOT NULL, places INTEGER NOT NULL,
      sightings INTEGER NOT NULL);
    CREATE INDEX tracker_events_by_time ON tracker_events(t);
    """,
  ]

  public static var schemaVersion: Int { migrations.count }

  static let timedTables = [
    "region_events", "sightings", "adapter_events", "find_phone_events", "volume_events",
    "beacon_telemetry", "tracker_events",
  ]

  // MARK: Opening

  /// Opens for writing: creates the file and its directory, switches to
  /// WAL and brings the schema up to date. Waits at most `busyTimeoutMillis`
  /// for another connection's lock (the agent keeps this tiny).
  public static func openForWriting(path: String, busyTimeoutMillis: Int32 = 10) throws
    -> ProximityLogStore
  {
    try makeDirectories(for: path)
    let db = try SQLiteConnection(path: path, create: true, busyTimeoutMillis: busyTimeoutMillis)
    let mode = try db.text("PRAGMA journal_mode=WAL")
    guard mode == "wal" else {
      throw SQLiteError(
        code: SQLITE_ERROR, message: "journal mode is \(mode ?? "?"), not wal",
        context: "cannot use \(path) (is it on a file system without shared memory?)")
    }
    // In WAL, NORMAL loses nothing committed when the process dies; only
    // an OS crash or power loss can take the last commits.
    try db.exec("PRAGMA synchronous=NORMAL")
    let store = ProximityLogStore(db)
    try store.migrate()
    return store
  }

  /// Opens for queries. Never creates or migrates.
  public static func openForReading(path: String) throws -> ProximityLogStore {
    var st = stat()
    guard stat(path, &st) == 0 else {
      throw SystemError(
        errno: errno,
        "no proximity log at \(path) (enable [log] in earshot.conf, pass --db, "
          + "or fill one with 'earshot log import --db \(path)')")
    }
    let db = try SQLiteConnection(path: path, readOnly: true, busyTimeoutMillis: 2000)
    let store = ProximityLogStore(db)
    let version = try store.version()
    guard version <= schemaVersion else {
      throw SQLiteError(
        code: SQLITE_ERROR,
        message: "schema version \(version) is newer than this earshot's \(schemaVersion)",
        context: "cannot read \(path) (upgrade earshot)")
    }
    return store
  }

  init(_ connection: SQLiteConnection) { self.connection = connection }

  /// A file the writer has created but not yet given its tables reads as
  /// an empty log.
  func hasSchema() throws -> Bool { try version() > 0 }

  public func version() throws -> Int { Int(try connection.integer("PRAGMA user_version") ?? 0) }

  /// Runs the migrations this file has not had yet, each in a transaction.
  public func migrate() throws {
    let have = try version()
    guard have <= Self.schemaVersion else {
      throw SQLiteError(
        code: SQLITE_ERROR,
        message: "schema version \(have) is newer than this earshot's \(Self.schemaVersion)",
        context: "cannot write \(path) (upgrade earshot, or point [log] path elsewhere)")
    }
    for v in have..<Self.schemaVersion {
      try connection.exec("BEGIN IMMEDIATE")
      do {
        // Another writer may have migrated while we waited for the lock.
        if try version() <= v {
          try connection.exec(Self.migrations[v])
          try connection.exec("PRAGMA user_version = \(v + 1)")
        }
        try connection.exec("COMMIT")
      } catch {
        try? connection.exec("ROLLBACK")
        throw error
      }
    }
  }

  static func makeDirectories(for path: String) throws {
    var dir = ""
    let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropLast()
    for (i, part) in parts.enumerated() {
      dir += (i == 0 ? "" : "/") + part
      guard !dir.isEmpty, !part.isEmpty else { continue }
      if mkdir(dir, 0o755) != 0 && errno != EEXIST {
        throw SystemError(errno: errno, "cannot create directory \(dir) for the proximity log")
      }
    }
  }

  // MARK: Writing

  /// One row waiting to be written.
  public enum Row: Sendable, Equatable {
    case region(RegionLogEvent)
    case sightings(SightingSummary)
    case membership(region: String, beacon: TrackedID, firstSeen: WallTime)
    case adapter(AdapterLogEvent)
    case findPhone(FindPhoneLogEvent)
    case volume(VolumeLogEvent)
    case telemetry(TelemetryLogEvent)
    case tracker(TrackerLogEvent)
  }

  private var statements: [String: SQLiteStatement] = [:]

  private func statement(_ sql: String) throws -> SQLiteStatement {
    if let s = statements[sql] { return s }
    let s = try connection.prepare(sql)
    statements[sql] = s
    return s
  }

  /// Writes rows in one transaction: all or none.
  public func write(_ rows: [Row]) throws {
    guard !rows.isEmpty else { return }
    try connection.exec("BEGIN IMMEDIATE")
    do {
      for row in rows { try insert(row) }
      try connection.exec("COMMIT")
    } catch {
      if connection.inTransaction { try? connection.exec("ROLLBACK") }
      throw error
    }
  }

  private func insert(_ row: Row) throws {
    switch row {
    case .region(let e):
      let s = try statement(
        "INSERT INTO region_events(t, region, event, state, uuid, major, minor, format) "
          + "VALUES (?,?,?,?,?,?,?,?)")
      s.bind(1, e.t)
      s.bind(2, e.region)
      s.bind(3, e.kind.rawValue)
      s.bind(4, e.state.rawValue)
      s.bind(5, e.beacon?.uuid.description)
      s.bind(6, e.beacon.map { Int64($0.major) })
      s.bind(7, e.beacon.map { Int64($0.minor) })
      s.bind(8, (e.beacon?.kind ?? .iBeacon).name)
      try s.run()
    case .sightings(let r):
      let s = try statement(
        "INSERT INTO sightings(t, t_end, uuid, major, minor, address, count, rssi_count, "
          + "rssi_mean, rssi_min, rssi_max, distance, format) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)")
      s.bind(1, r.start)
      s.bind(2, r.end)
      s.bind(3, r.beacon.uuid.description)
      s.bind(4, Int64(r.beacon.major))
      s.bind(5, Int64(r.beacon.minor))
      s.bind(6, r.address?.description)
      s.bind(7, Int64(r.count))
      s.bind(8, Int64(r.rssiCount))
      s.bind(9, r.rssiMean)
      s.bind(10, r.rssiMin)
      s.bind(11, r.rssiMax)
      s.bind(12, r.distanceMean)
      s.bind(13, r.beacon.kind.name)
      try s.run()
    case .membership(let region, let b, let first):
      let s = try statement(
        "INSERT OR IGNORE INTO beacon_regions(region, uuid, major, minor, first_seen, format) "
          + "VALUES (?,?,?,?,?,?)")
      s.bind(1, region)
      s.bind(2, b.uuid.description)
      s.bind(3, Int64(b.major))
      s.bind(4, Int64(b.minor))
      s.bind(5, first)
      s.bind(6, b.kind.name)
      try s.run()
    case .adapter(let e):
      let s = try statement("INSERT INTO adapter_events(t, adapter, event) VALUES (?,?,?)")
      s.bind(1, e.t)
      s.bind(2, e.adapter)
      s.bind(3, e.kind.rawValue)
      try s.run()
    case .findPhone(let e):
      let s = try statement(
        "INSERT INTO find_phone_events(t, event, device, detail) VALUES (?,?,?,?)")
      s.bind(1, e.t)
      s.bind(2, e.kind.rawValue)
      s.bind(3, e.device)
      s.bind(4, e.detail)
      try s.run()
    case .tracker(let e):
      let s = try statement(
        "INSERT INTO tracker_events(t, event, number, protocol, kind, address, places, "
          + "sightings) VALUES (?,?,?,?,?,?,?,?)")
      s.bind(1, e.t)
      s.bind(2, e.kind.rawValue)
      s.bind(3, Int64(e.number))
      s.bind(4, e.protocolName)
      s.bind(5, e.trackerKind)
      s.bind(6, e.address.description)
      s.bind(7, Int64(e.places))
      s.bind(8, Int64(e.sightings))
      try s.run()
    case .volume(let e):
      let s = try statement("INSERT INTO volume_events(t, volume, muted, source) VALUES (?,?,?,?)")
      s.bind(1, e.t)
      s.bind(2, e.volume)
      s.bind(3, Int64(e.muted ? 1 : 0))
      s.bind(4, e.source)
      try s.run()
    case .telemetry(let e):
      let s = try statement(
        "INSERT INTO beacon_telemetry(t, format, uuid, major, minor, battery_mv, temperature, "
          + "advertisements, uptime_s) VALUES (?,?,?,?,?,?,?,?,?)")
      s.bind(1, e.t)
      s.bind(2, e.beacon.kind.name)
      s.bind(3, e.beacon.uuid.description)
      s.bind(4, Int64(e.beacon.major))
      s.bind(5, Int64(e.beacon.minor))
      s.bind(6, e.reading.batteryMillivolts.map { Int64($0) })
      s.bind(7, e.reading.temperature)
      s.bind(8, Int64(e.reading.advertisingCount))
      s.bind(9, e.reading.uptimeSeconds)
      try s.run()
    }
  }

  public func setMeta(_ key: String, _ value: String) throws {
    let s = try statement("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)")
    s.bind(1, key)
    s.bind(2, value)
    try s.run()
  }

  public func meta(_ key: String) throws -> String? {
    let s = try connection.prepare("SELECT value FROM meta WHERE key = ?")
    s.bind(1, key)
    return try s.step() ? s.string(0) : nil
  }

  /// Deletes rows older than `cutoff`, at most `chunk` per table per
  /// transaction so the lock is held briefly. Returns rows deleted; call
  /// again while it returns a full chunk's worth.
  public func deleteOlderThan(_ cutoff: Int64, chunk: Int = 5000) throws -> Int {
    var deleted = 0
    for table in Self.timedTables {
      try connection.exec("BEGIN IMMEDIATE")
      do {
        let s = try statement(
          "DELETE FROM \(table) WHERE id IN (SELECT id FROM \(table) WHERE t < ? LIMIT \(chunk))")
        s.bind(1, cutoff)
        try s.run()
        deleted += connection.changes
        try connection.exec("COMMIT")
      } catch {
        if connection.inTransaction { try? connection.exec("ROLLBACK") }
        throw error
      }
    }
    return deleted
  }

  // MARK: Reading

  /// Region events before `until` (all of them: presence needs the state
  /// at the window's start), oldest first.
  public func regionEvents(until: WallTime? = nil, region: String? = nil) throws -> [RegionLogEvent]
  {
    guard try hasSchema() else { return [] }
    let s = try connection.prepare(
      "SELECT t, region, event, state, uuid, major, minor, format FROM region_events "
        + "WHERE t < ?1 AND (?2 IS NULL OR region = ?2) ORDER BY t, id")
    s.bind(1, until?.micros ?? Int64.max)
    s.bind(2, region)
    var out: [RegionLogEvent] = []
    while try s.step() {
      guard let kind = RegionLogEvent.Kind(rawValue: s.string(2)),
        let state = PresenceState(rawValue: s.string(3))
      else { continue }  // a value a newer earshot wrote
      out.append(
        RegionLogEvent(
          t: s.wallTime(0), region: s.string(1), kind: kind, state: state,
          beacon: beacon(s, uuid: 4, major: 5, minor: 6, format: 7)))
    }
    return out
  }

  public func sightings(since: WallTime?, until: WallTime?, uuid: BeaconUUID? = nil) throws
    -> [SightingSummary]
  {
    guard try hasSchema() else { return [] }
    let s = try connection.prepare(
      "SELECT t, t_end, uuid, major, minor, address, count, rssi_count, rssi_mean, rssi_min, "
        + "rssi_max, distance, format FROM sightings WHERE t >= ?1 AND t < ?2 AND (?3 IS NULL OR uuid = ?3) "
        + "ORDER BY t, uuid, major, minor")
    s.bind(1, since?.micros ?? Int64.min)
    s.bind(2, until?.micros ?? Int64.max)
    s.bind(3, uuid?.description)
    var out: [SightingSummary] = []
    while try s.step() {
      guard let b = beacon(s, uuid: 2, major: 3, minor: 4, format: 12) else { continue }
      out.append(
        SightingSummary(
          beacon: b, start: s.wallTime(0), end: s.wallTime(1), count: Int(s.int64(6)),
          rssiCount: Int(s.int64(7)), rssiMean: s.optionalDouble(8), rssiMin: s.optionalDouble(9),
          rssiMax: s.optionalDouble(10), distanceMean: s.optionalDouble(11),
          address: s.optionalString(5).flatMap { BDAddress($0) }))
    }
    return out
  }

  /// Which regions each beacon has been ranged in.
  public func beaconRegions() throws -> [TrackedID: [String]] {
    guard try hasSchema() else { return [:] }
    let s = try connection.prepare(
      "SELECT region, uuid, major, minor, format FROM beacon_regions ORDER BY first_seen, region")
    var out: [TrackedID: [String]] = [:]
    while try s.step() {
      guard let b = beacon(s, uuid: 1, major: 2, minor: 3, format: 4) else { continue }
      out[b, default: []].append(s.string(0))
    }
    return out
  }

  /// Adapter, find-phone and volume events in the window.
  public func agentEvents(since: WallTime?, until: WallTime?) throws -> [LogRecord] {
    guard try hasSchema() else { return [] }
    var out: [LogRecord] = []
    let lo = since?.micros ?? Int64.min
    let hi = until?.micros ?? Int64.max
    let a = try connection.prepare(
      "SELECT t, adapter, event FROM adapter_events WHERE t >= ? AND t < ? ORDER BY t, id")
    a.bind(1, lo)
    a.bind(2, hi)
    while try a.step() {
      guard let k = AdapterLogEvent.Kind(rawValue: a.string(2)) else { continue }
      out.append(.adapter(AdapterLogEvent(t: a.wallTime(0), adapter: a.string(1), kind: k)))
    }
    let f = try connection.prepare(
      "SELECT t, event, device, detail FROM find_phone_events WHERE t >= ? AND t < ? ORDER BY t, id"
    )
    f.bind(1, lo)
    f.bind(2, hi)
    while try f.step() {
      guard let k = FindPhoneLogEvent.Kind(rawValue: f.string(1)) else { continue }
      out.append(
        .findPhone(
          FindPhoneLogEvent(
            t: f.wallTime(0), kind: k, device: f.string(2), detail: f.optionalString(3))))
    }
    let v = try connection.prepare(
      "SELECT t, volume, muted, source FROM volume_events WHERE t >= ? AND t < ? ORDER BY t, id")
    v.bind(1, lo)
    v.bind(2, hi)
    while try v.step() {
      out.append(
        .volume(
          VolumeLogEvent(
            t: v.wallTime(0), volume: v.double(1), muted: v.int64(2) != 0,
            source: v.optionalString(3))
        )
      )
    }
    // A reader may open a file an older writer has not migrated yet.
    guard try version() >= 4 else { return out }
    let k = try connection.prepare(
      "SELECT t, event, number, protocol, kind, address, places, sightings FROM tracker_events "
        + "WHERE t >= ? AND t < ? ORDER BY t, id")
    k.bind(1, lo)
    k.bind(2, hi)
    while try k.step() {
      // A row this earshot cannot read is skipped, not a failure.
      guard let kind = TrackerLogEvent.Kind(rawValue: k.string(1)),
        let address = BDAddress(k.string(5))
      else { continue }
      out.append(
        .tracker(
          TrackerLogEvent(
            t: k.wallTime(0), kind: kind, number: Int(k.int64(2)), protocolName: k.string(3),
            trackerKind: k.string(4), address: address, places: Int(k.int64(6)),
            sightings: Int(k.int64(7)))))
    }
    return out
  }

  /// Beacons' telemetry in the window, oldest first.
  public func telemetry(since: WallTime?, until: WallTime?) throws -> [TelemetryLogEvent] {
    guard try hasSchema(), try version() >= 3 else { return [] }
    let s = try connection.prepare(
      "SELECT t, uuid, major, minor, format, battery_mv, temperature, advertisements, uptime_s "
        + "FROM beacon_telemetry WHERE t >= ? AND t < ? ORDER BY t, id")
    s.bind(1, since?.micros ?? Int64.min)
    s.bind(2, until?.micros ?? Int64.max)
    var out: [TelemetryLogEvent] = []
    while try s.step() {
      guard let b = beacon(s, uuid: 1, major: 2, minor: 3, format: 4),
        let count = UInt32(exactly: s.int64(7))
      else { continue }
      out.append(
        TelemetryLogEvent(
          beacon: b,
          reading: BeaconTelemetry(
            // Read back, the log's time is the reading's capture time.
            decided: DecisionTime(capture: WallTime(micros: s.int64(0))),
            shown: WallTime(micros: s.int64(0)),
            batteryMillivolts: s.optionalInt(5).map { Int($0) },
            temperature: s.optionalDouble(6), advertisingCount: count,
            uptimeSeconds: s.double(8))))
    }
    return out
  }

  /// The sighting interval the writer used, in microseconds.
  public func sightingInterval() -> Int64? {
    guard (try? hasSchema()) == true else { return nil }
    return (try? meta("sighting_interval_us")).flatMap { $0.flatMap { Int64($0) } }
  }

  /// A row's beacon; `nil` for none, or a format a newer earshot wrote.
  private func beacon(
    _ s: SQLiteStatement, uuid: Int32, major: Int32, minor: Int32, format: Int32
  ) -> TrackedID? {
    guard let text = s.optionalString(uuid), let u = BeaconUUID(text),
      let ma = s.optionalInt(major), let mi = s.optionalInt(minor),
      let ma16 = UInt16(exactly: ma), let mi16 = UInt16(exactly: mi),
      let f = TrackedKind.allCases.first(where: { $0.name == s.string(format) })
    else { return nil }
    return TrackedID(kind: f, uuid: u, major: ma16, minor: mi16)
  }

  /// `ok`, or what SQLite found wrong.
  public func integrityCheck() throws -> String {
    try connection.text("PRAGMA integrity_check") ?? "no answer"
  }
}

extension ProximityLogStore {
  /// The latest time the log has anything for (an open presence interval
  /// is known to last at least until then).
  public func lastTime() throws -> WallTime? {
    try extreme("max", sightings: "t_end", keep: max).map(WallTime.init(micros:))
  }

  /// The earliest time the log has anything for.
  public func firstTime() throws -> WallTime? {
    try extreme("min", sightings: "t", keep: min).map(WallTime.init(micros:))
  }

  private func extreme(
    _ function: String, sightings: String, keep: (Int64, Int64) -> Int64
  ) throws -> Int64? {
    guard try hasSchema() else { return nil }
    // A reader may open a file an older writer has not migrated yet.
    let version = try version()
    var found: Int64? = nil
    for (table, column) in [
      ("region_events", "t"), ("sightings", sightings), ("adapter_events", "t"),
      ("find_phone_events", "t"), ("volume_events", "t"), ("beacon_telemetry", "t"),
      ("tracker_events", "t"),
    ]
    where (table != "beacon_telemetry" || version >= 3)
      && (table != "tracker_events" || version >= 4)
    {
      let s = try connection.prepare("SELECT \(function)(\(column)) FROM \(table)")
      if try s.step(), let v = s.optionalInt(0) { found = found.map { keep($0, v) } ?? v }
    }
    return found
  }
}

extension SQLiteStatement {
  /// A wall time as the log keeps it: microseconds since the Unix epoch.
  func bind(_ i: Int32, _ t: WallTime?) { bind(i, t?.micros) }
  func wallTime(_ c: Int32) -> WallTime { WallTime(micros: int64(c)) }
}

extension ProximityLogStore {
  public func journalMode() throws -> String? { try connection.text("PRAGMA journal_mode") }
}
