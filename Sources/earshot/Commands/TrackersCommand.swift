import EarshotCore
import EarshotLinux

let trackersCommand = Command(
  name: "trackers",
  summary: "List the trackers heard in a capture and those that followed (docs/trackers.md)",
  arguments: "--capture FILE",
  details: """
    Replays a capture (btsnoop, pcap or pcapng, as earshot scan --input reads
    them) through the tracker watch with [trackers] of the config
    (sensitivity, retention, trusted): each tracker kept, with its protocol,
    kind and state, first and last seen (capture time, UTC), sightings, last
    signal, the places it was heard in, and whether it followed. Trackers
    without a handle across rotations (Find My near its owner, Find Hub in
    0x40 mode, DULT) are counted, not listed. The live list from the agent
    is not built yet: --capture is required.
    """,
  options: [
    .value("capture", "FILE", "The capture to replay"),
    .value("config", "FILE", "Config file to read [trackers] from"),
    .value("sensitivity", "LEVEL", "high, medium or low (default: [trackers] sensitivity)"),
  ],
  run: runTrackers)

func runTrackers(_ args: Arguments) throws -> Int32 {
  guard let path = args.value("capture") else {
    throw UsageError("give --capture FILE (the agent's live list is not built yet)")
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
