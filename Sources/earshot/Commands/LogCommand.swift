import EarshotCore
import EarshotLinux

let logCommand = Command(
  name: "log",
  summary:
    "Query the proximity log: region events, beacon sightings, presence; import monitor output",
  arguments: "[presence|import]",
  details: """
    earshot log                 region events (enter, exit, state), beacon sightings (one row per
                                beacon per interval: count, mean/min/max RSSI, distance), adapter,
                                find-phone and volume events, oldest first.
    earshot log presence        the intervals each region was inside, with durations and totals.
    earshot log import          reads 'earshot monitor' JSON lines from standard input and writes
                                them to the log (region events, and range lines as sightings).

    TIME is ISO-8601 (2026-01-31, 2026-01-31T08:00, 2026-01-31T08:00:00Z, +01:00 zones; local
    time when no zone is given), a span ago (45s, 30m, 2h, 7d, 2w), @UNIXSECONDS or now.
    --since is inclusive, --until exclusive. --region keeps that region's events and the
    sightings of beacons ranged in it; --beacon keeps that beacon's sightings and the events of
    its regions. The default log is /var/lib/earshot/proximity.sqlite for root and
    $XDG_STATE_HOME/earshot/proximity.sqlite (~/.local/state/...) for a user.
    """,
  options: [
    .value("db", "FILE", "The proximity log (default: see below)"),
    .value("since", "TIME", "From this time on"),
    .value("until", "TIME", "Before this time"),
    .value("region", "NAME", "Only this region"),
    .value(
      "beacon", "BEACON",
      "Only this beacon (or these beacons): UUID[:MAJOR[:MINOR]], altbeacon:ID1[:ID2[:ID3]] or eddystone:NAMESPACE[:INSTANCE]"
    ),
    .value("format", "table|json|csv", "Output format (default table; json is one object a line)"),
    .value(
      "config", "FILE",
      "The agent's config, for beacons of its own [layout] formats (not read otherwise)"),
    .value("interval", "SECONDS", "import: one sighting row per beacon per this long (default 10)"),
    .value("batch", "ROWS", "import: rows written per transaction (default 500)"),
  ],
  run: runLog)

func runLog(_ args: Arguments) throws -> Int32 {
  switch args.positionals.first {
  case nil: return try runLogEvents(args)
  case "presence": return try runLogPresence(args)
  case "import": return try runLogImport(args)
  case let other?:
    throw UsageError("unknown 'earshot log \(other)': use presence or import, or nothing")
  }
}

/// What selects log records, as `earshot log` and `earshot plot` both take
/// it: --db, --since, --until (each as given; nil when absent), --region
/// and --beacon.
struct LogFilterOptions {
  let path: String
  let query: LogQuery
  let now: WallTime

  init(_ args: Arguments) throws {
    path = args.value("db") ?? ProximityLogPaths.defaultPath()
    // A config names the user's own beacon formats, so that their beacons
    // read back by name (`--beacon acme:…`, and in the rows).
    if args.value("config") != nil { _ = try loadConfig(args).0.trackedLayouts }
    let now = Clock.wallNow()
    self.now = now
    var q = LogQuery(region: args.value("region"))
    q.since = try args.value("since").map { try parseLogTime($0, "--since", now: now) }
    q.until = try args.value("until").map { try parseLogTime($0, "--until", now: now) }
    if let s = q.since, let u = q.until, s >= u {
      throw UsageError("--since must be before --until")
    }
    if let b = args.value("beacon") {
      do { q.beacon = try TrackedMatch.parse(b) } catch {
        throw UsageError("--beacon: \(error)")
      }
    }
    query = q
  }

  func open() throws -> ProximityLogReader {
    do { return try ProximityLogReader(path: path) } catch { throw CommandFailure("\(error)") }
  }
}

/// The options every `earshot log` query shares: the filter and --format.
struct LogQueryOptions {
  let filter: LogFilterOptions
  let format: LogFormat
  var path: String { filter.path }
  var query: LogQuery { filter.query }
  var now: WallTime { filter.now }

  init(_ args: Arguments) throws {
    guard args.positionals.count <= 1 else {
      throw UsageError("unexpected argument '\(args.positionals[1])'")
    }
    filter = try LogFilterOptions(args)
    let f = args.value("format") ?? "table"
    guard let format = LogFormat(rawValue: f) else {
      throw UsageError("--format must be table, json or csv, not '\(f)'")
    }
    self.format = format
  }

  func open() throws -> ProximityLogReader { try filter.open() }
}

func parseLogTime(_ text: String, _ option: String, now: WallTime) throws -> WallTime {
  do { return try LogTime.parse(text, now: now, offset: LocalTimeZone.offset) } catch {
    throw UsageError("\(option): \(error)")
  }
}

func runLogEvents(_ args: Arguments) throws -> Int32 {
  let o = try LogQueryOptions(args)
  let reader = try o.open()
  let records: [LogRecord]
  do { records = try reader.records(o.query) } catch { throw CommandFailure("\(error)") }
  let offset = LocalTimeZone.offset
  switch o.format {
  case .table:
    if records.isEmpty {
      Console.error("earshot log: nothing in \(o.path) for this query\n")
      return 0
    }
    Console.line(LogFormatter.tableHeader)
    for r in records { Console.line(LogFormatter.table(r, offset: offset)) }
  case .json:
    for r in records { Console.line(LogFormatter.json(r, offset: offset)) }
  case .csv:
    Console.line(LogFormatter.csvHeader)
    for r in records { Console.line(LogFormatter.csv(r, offset: offset)) }
  }
  return 0
}
