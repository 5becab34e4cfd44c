import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

let plotCommand = Command(
  name: "plot",
  summary: "Draw the proximity log as an SVG: RSSI and distance per beacon, presence per region",
  details: """
    One panel per beacon: mean RSSI (solid, left axis) and distance (dashed, right axis) over
    time, with the inside intervals of the regions it was ranged in shaded. Below, a presence
    timeline: one bar row per region (coloured inside, grey unknown). By default the span
    that has data (at most the day before the latest record, at least a minute); --day for
    one local day, --since/--until for any window.
    --png also renders a PNG with rsvg-convert (Debian package librsvg2-bin).
    """,
  options: [
    .value("db", "FILE", "The proximity log (default as for 'earshot log')"),
    .value("day", "YYYY-MM-DD", "The local day to draw"),
    .value("since", "TIME", "Window start (as for 'earshot log')"),
    .value("until", "TIME", "Window end (default: since + 1 day)"),
    .value("region", "NAME", "Only this region and its beacons"),
    .value(
      "beacon", "BEACON",
      "Only this beacon (or these beacons): UUID[:MAJOR[:MINOR]], altbeacon:ID1[:ID2[:ID3]] or eddystone:NAMESPACE[:INSTANCE]"
    ),
    .value("out", "FILE.svg", "Where to write the SVG (required)"),
    .value(
      "config", "FILE",
      "The agent's config, for beacons of its own [layout] formats (not read otherwise)"),
    .value("png", "FILE.png", "Also render a PNG (needs rsvg-convert)"),
    .value("title", "TEXT", "Title (default: Proximity, and the day)"),
  ],
  run: runPlot)

func runPlot(_ args: Arguments) throws -> Int32 {
  guard args.positionals.isEmpty else {
    throw UsageError("unexpected argument '\(args.positionals[0])'")
  }
  guard let out = args.value("out") else { throw UsageError("--out FILE.svg is required") }
  if args.value("day") != nil && (args.value("since") != nil || args.value("until") != nil) {
    throw UsageError("--day and --since/--until exclude each other")
  }
  let offset = LocalTimeZone.offset
  let filter = try LogFilterOptions(args)
  let now = filter.now
  let reader = try filter.open()
  var q = filter.query
  var title = args.value("title")
  let day = 86_400_000_000 as Int64
  // The window: --day, or a day from whichever end is given, or the span
  // that has data (a 20-minute log fills the plot, not a sliver of a day).
  if let name = args.value("day") {
    do { (q.since, q.until) = try LogTime.day(name, offset: offset) } catch {
      throw UsageError("--day expects YYYY-MM-DD, not '\(name)'")
    }
    if title == nil { title = "Proximity, \(name)" }
  } else if let since = q.since {
    q.until = q.until ?? since + .microseconds(day)
  } else if let until = q.until {
    q.since = until - .microseconds(day)
  } else {
    let latest = ((try? reader.store.lastTime()) ?? nil) ?? now
    let first = ((try? reader.store.firstTime()) ?? nil) ?? latest
    (q.since, q.until) = ProximityPlot.dataSpan(first: first, last: latest)
  }
  guard q.since! < q.until! else { throw UsageError("--since must be before --until") }
  if title == nil {
    let c = LogTime.components(q.since!, offset: offset)
    let d = "\(c.year)-\(LogTime.pad(c.month))-\(LogTime.pad(c.day))"
    title =
      q.until!.micros - q.since!.micros == day && c.hour == 0 ? "Proximity, \(d)" : "Proximity"
  }
  let svg: String
  do {
    svg = ProximityPlot.svg(try reader.plotInput(q, title: title!, offset: offset))
  } catch { throw CommandFailure("\(error)") }
  try writeOut(svg, to: out, png: args.value("png"))
  return 0
}

/// Writes a command's output to the file `out`; with `png`, the output is
/// an SVG drawing, also rendered as a PNG by rsvg-convert (`earshot plot`,
/// `earshot trackers --plot`).
func writeOut(_ text: String, to out: String, png: String? = nil) throws {
  do {
    let sink = try FileSink(creating: out)
    try sink.write(Array(text.utf8))
    try sink.flush()
  } catch { throw CommandFailure("\(error)") }
  guard let png else { return }
  guard let tool = findInPath("rsvg-convert") else {
    throw CommandFailure(
      "wrote \(out), but --png needs rsvg-convert: install it (apt-get install librsvg2-bin)")
  }
  let status = try runTool(tool, ["rsvg-convert", "--format", "png", "--output", png, out])
  guard status == 0 else {
    throw CommandFailure("rsvg-convert failed (exit status \(status)) converting \(out) to \(png)")
  }
}

func findInPath(_ name: String) -> String? {
  let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin"
  for dir in path.split(separator: ":") {
    let candidate = "\(dir)/\(name)"
    if access(candidate, X_OK) == 0 { return candidate }
  }
  return nil
}

/// Runs a program directly (no shell) and waits for it.
func runTool(_ path: String, _ argv: [String]) throws -> Int32 {
  var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
  defer { for p in cArgs { free(p) } }
  var pid: pid_t = 0
  let rc = posix_spawn(&pid, path, nil, nil, &cArgs, environ)
  guard rc == 0 else { throw CommandFailure("\(SystemError(errno: rc, "cannot run \(path)"))") }
  var status: Int32 = 0
  while waitpid(pid, &status, 0) < 0 {
    if errno != EINTR { throw CommandFailure("\(SystemError(errno: errno, "waitpid"))") }
  }
  // WIFEXITED / WEXITSTATUS by hand: the macros are not imported.
  return status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
}
