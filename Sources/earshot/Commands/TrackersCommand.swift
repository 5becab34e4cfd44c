import EarshotCore
import EarshotLinux

let trackersCommand = Command(
  name: "trackers",
  summary: "List the trackers heard in a capture and those that followed (docs/trackers.md)",
  arguments: "[--capture FILE]",
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
    """,
  options: [
    socketOption,
    .value("capture", "FILE", "The capture to replay"),
    .value("config", "FILE", "Config file to read [trackers] from"),
    .value("sensitivity", "LEVEL", "high, medium or low (default: [trackers] sensitivity)"),
    .value("trust", "N", "Trust the running agent's tracker N"),
    .value("for", "SECONDS", "With --trust: for this long (default: until cleared)"),
    .value("clear", "N", "Clear the running agent's tracker N"),
    .value("ring", "N", "Make the running agent's tracker N play its sound"),
    .value("silence", "N", "Stop tracker N's sound"),
    .value("identify", "N", "Ask tracker N who it is (DULT)"),
  ],
  run: runTrackers)

func runTrackers(_ args: Arguments) throws -> Int32 {
  guard let path = args.value("capture") else { return try liveTrackers(args) }
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
        let time = MonotonicTime(nanos: UInt64(max(0, t)) &* 1000)
        for case .following(let row) in watch.handle(event, at: time) {
          followed.append(row.number)
        }
      }
    }
  } catch {
    throw CommandFailure("\(path): \(error)")
  }
  let rows = watch.rows
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
