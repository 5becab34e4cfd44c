import EarshotCore
import EarshotLinux

let trackersCommand = Command(
  name: "trackers",
  summary: "List the trackers heard in a capture and those that followed (docs/trackers.md)",
  arguments: "[--capture FILE] [--export N|all [--json] | --plot N --out FILE.svg]",
  details: """
    Replays a capture (btsnoop, pcap or pcapng, as earshot scan --input reads
    them) through the tracker watch with [trackers] of the config
    (sensitivity, retention, trusted): each tracker kept, with its protocol,
    kind and state, first and last seen (capture time, UTC), sightings, last
    signal, the places it was heard in, and whether it followed. Trackers
    without a handle across rotations (Find My near its owner, Find Hub in
    0x40 mode, DULT) are counted, not listed.

    Without --capture: the running agent's list ([trackers] enabled), from
    its status on the control socket, with how long ago each was first and
    last heard. --trust N trusts tracker N (for --for SECONDS, or until it
    is cleared): it does not alert and keeps no evidence. --clear N forgets
    tracker N, its evidence and its alert. --ring N makes tracker N play its
    sound through bluetoothd (AirTag, Find My accessories, DULT / Find Hub,
    Pebblebee), --silence N stops it, --identify N asks it who it is (DULT:
    product data, manufacturer, model, identifier); each prints one line:
    it rang, it cannot be rung by a stranger (Tile, SmartTag, Chipolo), it
    is near its owner, it was not found, or it failed after N tries.

    --export N (or all) writes tracker N's evidence, of the capture or of the
    running agent: one CSV row per sighting kept (tracker, protocol, kind,
    address, time in UTC, unix_s, place, rssi, moved, alert; docs/trackers.md
    says what each holds), or with --json one object per tracker with its
    places, moves and sightings; to standard output, or to --out FILE.
    --plot N draws tracker N's evidence as an SVG (--out FILE.svg): one row
    per place, a mark per sighting, the moment it was found to follow;
    --png also renders a PNG with rsvg-convert (as earshot plot).
    """,
  options: [
    socketOption,
    .value("capture", "FILE", "The capture to replay"),
    .value("config", "FILE", "Config file to read [trackers] from"),
    .value("sensitivity", "LEVEL", "high, medium or low (default: [trackers] sensitivity)"),
    .value("trust", "N", "Trust the running agent's tracker N"),
    .value("for", "SECONDS", "With --trust: for this long (default: until cleared)"),
    .value("clear", "N", "Clear the running agent's tracker N"),
    .value("export", "N|all", "Write tracker N's evidence (or every tracker's) as CSV"),
    .flag("json", "With --export: JSON instead of CSV"),
    .value("plot", "N", "Draw tracker N's evidence as an SVG timeline per place"),
    .value("out", "FILE", "Where --export (default: standard output) or --plot writes"),
    .value("png", "FILE.png", "With --plot: also render a PNG (needs rsvg-convert)"),
    .value("ring", "N", "Make the running agent's tracker N play its sound"),
    .value("silence", "N", "Stop tracker N's sound"),
    .value("identify", "N", "Ask tracker N who it is (DULT)"),
  ],
  run: runTrackers)

func runTrackers(_ args: Arguments) throws -> Int32 {
  let evidence = try EvidenceRequest(args)
  guard let path = args.value("capture") else {
    if let evidence {
      let client = try connectToAgent(args)
      let fields = try resultFields(
        client.call(.trackerEvidence(number: evidence.number?.value)))
      guard case .array(let list)? = fields["trackers"] else {
        throw CommandFailure("the agent answered without \"trackers\"")
      }
      return try evidence.write(
        list.map {
          guard let e = TrackerEvidence(json: $0) else {
            throw CommandFailure("the agent's evidence is not readable: \($0.encoded)")
          }
          return e
        })
    }
    return try liveTrackers(args)
  }
  var config = try loadConfigOrDefaults(args).trackers
  if let level = args.value("sensitivity") {
    guard let s = TrackerSensitivity(rawValue: level) else {
      throw UsageError("--sensitivity expects high, medium or low, got '\(level)'")
    }
    config.sensitivity = s
  }
  var watch = TrackerWatch(settings: TrackerWatch.Settings(config: config))
  var reports = 0
  var withoutHandle = 0
  var followed: [TrackerNumber] = []
  do {
    let file = try FileStream(path: path)
    var reader = try CaptureReader(source: file.read(into:))
    var replay = CaptureReplay()
    try withExtendedLifetime(file) {
      try replay.run(&reader) { t, report in
        reports += 1
        let event = TrackerWatch.event(for: report)
        if case .tracker(let frame, _, _) = event, frame.identity == nil { withoutHandle += 1 }
        let time = MonotonicTime(decision: DecisionTime(micros: t))
        for case .following(let row) in watch.handle(event, at: time) {
          followed.append(row.number)
        }
      }
    }
  } catch {
    throw CommandFailure("\(path): \(error)")
  }
  let rows = watch.rows
  if let evidence {
    // The watch's clock is the capture's: Unix time.
    let wall = { (t: MonotonicTime) in WallTime(micros: Int64(t.nanos / 1000)) }
    return try evidence.write(
      rows.filter { evidence.number == nil || $0.number == evidence.number }.map {
        TrackerEvidence($0, evidence: watch.evidence(of: $0.number), wall: wall)
      })
  }
  Console.line(
    "\(reports) reports; \(rows.count) tracker(s) kept, \(withoutHandle) frame(s) of trackers without a handle; sensitivity \(config.sensitivity.rawValue)"
  )
  for row in rows {
    var line = "\(row.number.value): \(row.frame)"
    if row.frame.identity != .address(row.address) { line += " at \(row.address)" }
    line +=
      ", first \(clock(row.firstSeen)), last \(clock(row.lastSeen)), \(row.sightings) sighting(s)"
    if let rssi = row.rssi { line += ", \(rssi) dBm" }
    line += ", \(row.places) place(s)"
    switch row.trust {
    case .enrolled: line += ", trusted"
    case .until: line += ", trusted for now"
    case .none: break
    }
    if let t = row.following { line += ", FOLLOWING since \(clock(t))" }
    Console.line(line)
  }
  Console.line("following: \(followed.count)")
  return 0
}

/// A capture's time of day, UTC (its clock counts from the Unix epoch).
private func clock(_ t: MonotonicTime) -> String {
  let s = t.nanos / 1_000_000_000 % 86_400
  func two(_ v: UInt64) -> String { v < 10 ? "0\(v)" : "\(v)" }
  return "\(two(s / 3600)):\(two(s / 60 % 60)):\(two(s % 60))"
}

/// The running agent's trackers, from `status`.
private func liveTrackers(_ args: Arguments) throws -> Int32 {
  let client = try connectToAgent(args)
  func number(_ option: String) throws -> Int? {
    guard let text = args.value(option) else { return nil }
    guard let n = Int(text), n > 0 else {
      throw UsageError("--\(option) expects a tracker's number")
    }
    return n
  }
  let seconds = try args.double("for")
  if let seconds, !(seconds > 0 && seconds <= 365 * 86_400) {
    throw UsageError("--for expects seconds, more than 0 and at most a year")
  }
  if let n = try number("trust") {
    _ = try resultFields(client.call(.trackerTrust(number: n, seconds: seconds)))
  } else if seconds != nil {
    throw UsageError("--for goes with --trust")
  }
  if let n = try number("clear") { _ = try resultFields(client.call(.trackerClear(number: n))) }
  for mode in TrackerSoundMode.allCases {
    guard let n = try number(mode.rawValue) else { continue }
    // One line whatever happened; a refusal's line is the error.
    let fields = try resultFields(client.call(.trackerRing(number: n, mode: mode)))
    Console.line(fields["message"]?.string ?? fields.encoded)
    return 0
  }
  let status = try resultFields(client.call(.status))
  guard case .array(let rows)? = status["trackers"] else {
    throw CommandFailure("the agent does not watch for trackers: set [trackers] enabled = true")
  }
  var following = 0
  for row in rows {
    func text(_ key: String) -> String {
      switch row[key] {
      case .string(let s)?: s
      case .number(let n)?: String(Int(n))
      default: "?"
      }
    }
    var line =
      "\(text("number")): \(text("protocol")): \(text("kind")) \(text("state")) at \(text("address")), first \(text("first_seen_s_ago")) s ago, last \(text("last_seen_s_ago")) s ago, \(text("sightings")) sighting(s)"
    if row["rssi"] != nil { line += ", \(text("rssi")) dBm" }
    line += ", \(text("places")) place(s)"
    if row["trusted"] == .bool(true) { line += ", trusted" }
    if row["following"] == .bool(true) {
      line += ", FOLLOWING"
      following += 1
    }
    Console.line(line)
  }
  Console.line("following: \(following)")
  return 0
}

/// `--export N|all [--json] [--out FILE]` or `--plot N --out FILE.svg [--png FILE.png]`.
private struct EvidenceRequest {
  enum Output { case csv, json, plot }
  /// nil: every tracker kept (`--export all`).
  let number: TrackerNumber?
  let output: Output
  let out: String?
  let png: String?

  /// nil when neither --export nor --plot is given.
  init?(_ args: Arguments) throws {
    let export = args.value("export")
    let plot = args.value("plot")
    if export != nil && plot != nil { throw UsageError("--export and --plot exclude each other") }
    guard let what = export ?? plot else {
      for option in ["json", "out", "png"] where args.has(option) || args.value(option) != nil {
        throw UsageError("--\(option) goes with --export or --plot")
      }
      return nil
    }
    if what == "all" && export != nil {
      number = nil
    } else if let n = Int(what), n > 0 {
      number = TrackerNumber(n)
    } else {
      throw UsageError(
        plot != nil
          ? "--plot expects a tracker's number" : "--export expects a tracker's number or all")
    }
    out = args.value("out")
    png = args.value("png")
    if plot != nil {
      guard out != nil else { throw UsageError("--plot needs --out FILE.svg") }
      if args.has("json") { throw UsageError("--json goes with --export") }
      output = .plot
    } else {
      if png != nil { throw UsageError("--png goes with --plot") }
      output = args.has("json") ? .json : .csv
    }
  }

  func write(_ list: [TrackerEvidence]) throws -> Int32 {
    if let number, list.isEmpty { throw CommandFailure("no \(number) is kept") }
    let text: String
    switch output {
    case .csv:
      text = ([TrackerEvidence.csvHeader] + list.flatMap(\.csvRows)).joined(separator: "\n") + "\n"
    case .json:
      let value: JSONValue = number == nil ? .array(list.map(\.json)) : list[0].json
      text = value.encoded + "\n"
    case .plot:
      text = TrackerEvidencePlot.svg(list[0])
    }
    guard let out else {
      Console.out(text)
      return 0
    }
    try writeOut(text, to: out, png: png)
    return 0
  }
}
