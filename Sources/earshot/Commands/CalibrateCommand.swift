import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

let calibrateCommand = Command(
  name: "calibrate",
  summary: "Measure a beacon at 1 m and the rssi_offset that calibrates this receiver (or several)",
  arguments: "[NAME=CAPTURE ...]",
  details: """
    Hold the beacon 1 m from the receiver, in the open, for --seconds (20).
    Live (no --input, no NAME=CAPTURE): scans that long ([scanner]). The
    estimate is the median RSSI over the loudest --seconds of the beacon's
    reports, so a longer recording works too: it finds the moment the beacon
    was held close. Prints what this receiver hears at 1 m and the
    [ranging] rssi_offset that makes it read the reference: the beacon's
    advertised measured power, or --power DBM. The RSSI is taken as the
    radio reports it (the config's current rssi_offset is not applied; the
    new one replaces it).

    Several receivers: give each one's recording as NAME=CAPTURE (the beacon
    held 1 m from each in turn, in one tour or separately). Prints each
    one's offset; with --reference NAME they agree with that receiver
    instead of the advertised power.

    --write puts rssi_offset in [ranging] of the config (--config FILE, or
    the default path), keeping the rest of the file as it is; with several
    receivers, the one named --agent NAME (default: the host name).
    """,
  options: [
    .value("config", "FILE", "Config file to read [scanner] from and --write to"),
    .value("beacon", "UUID[:MAJOR[:MINOR]]", "The beacon (default: the loudest heard)"),
    .value("seconds", "S", "How long to hold it at 1 m (default 20)"),
    .value("input", "CAPTURE", "Read a capture instead of scanning live"),
    .value("power", "DBM", "Reference power at 1 m (default: the beacon's advertised one)"),
    .value("reference", "NAME", "Align the receivers with this one (NAME=CAPTURE)"),
    .value("agent", "NAME", "With --write and several receivers: which is this one"),
    .flag("write", "Write rssi_offset to the config"),
  ],
  run: runCalibrate)

/// What one receiver heard of the beacons, a loudest window per beacon.
private struct Hearing {
  var selector: (uuid: BeaconUUID, major: UInt16?, minor: UInt16?)?
  var seconds: Double
  var windows: [TrackedID: LoudestWindow] = [:]
  var advertised: [TrackedID: Int8] = [:]
  /// Reports of the beacon(s) that came without an RSSI (127: unavailable).
  var withoutRSSI = 0
  /// Distinct beacons followed at most (memory stays bounded in a crowd).
  static let maxBeacons = 256

  mutating func add(_ t: Int64, _ report: AdvertisingReport) {
    guard let b = TrackedBeacon.iBeacon(advertisingData: report.data) else { return }
    if let s = selector {
      guard b.uuid == s.uuid, s.major.map({ $0 == b.major }) ?? true,
        s.minor.map({ $0 == b.id.minor }) ?? true
      else { return }
    }
    guard let rssi = report.rssi else {
      withoutRSSI += 1
      return
    }
    if windows[b.id] == nil {
      guard windows.count < Self.maxBeacons else { return }
      windows[b.id] = LoudestWindow(seconds: seconds)
    }
    windows[b.id]!.add(at: WallTime(micros: t), rssi: rssi)
    advertised[b.id] = b.measuredPower
  }

  /// The beacon with the loudest window.
  mutating func result() -> (TrackedID, LoudestWindow.Estimate, Int8)? {
    for k in windows.keys { windows[k]!.finish() }
    let candidates = windows.compactMap { id, w in w.best.map { (id, $0) } }
    guard let (id, e) = candidates.max(by: { ($0.1.median, $1.0) < ($1.1.median, $0.0) })
    else { return nil }
    return (id, e, advertised[id] ?? -59)
  }
}

func runCalibrate(_ args: Arguments) throws -> Int32 {
  let seconds = try args.double("seconds") ?? 20
  guard seconds >= 1, seconds <= 3600 else { throw UsageError("--seconds expects 1 to 3600") }
  let selector = try args.value("beacon").map(parseBeaconSelector)
  let power = try args.double("power")
  if let power, !(-127...20).contains(power) { throw UsageError("--power expects -127 to 20 dBm") }
  var recordings: [(name: String, path: String)] = []
  for p in args.positionals {
    guard let eq = p.firstIndex(of: "="), eq != p.startIndex, p.index(after: eq) != p.endIndex
    else { throw UsageError("expected NAME=CAPTURE, got '\(p)'") }
    recordings.append((String(p[..<eq]), String(p[p.index(after: eq)...])))
  }
  if !recordings.isEmpty && args.value("input") != nil {
    throw UsageError("give --input CAPTURE or NAME=CAPTURE recordings, not both")
  }
  if let reference = args.value("reference"), !recordings.contains(where: { $0.name == reference })
  {
    throw UsageError("--reference \(reference) names none of the NAME=CAPTURE recordings")
  }

  // What each receiver heard at 1 m.
  var heard:
    [(name: String, beacon: TrackedID, estimate: LoudestWindow.Estimate, advertised: Int8)] =
      []
  func measure(_ name: String, _ hearing: inout Hearing, _ source: String) throws {
    guard let (id, e, advertised) = hearing.result() else {
      if hearing.withoutRSSI > 0 {
        throw CommandFailure(
          "\(source): \(hearing.withoutRSSI) report(s) of the beacon came without an RSSI (the controller gave 127, unavailable): nothing to calibrate"
        )
      }
      throw CommandFailure(
        "\(source): heard \(selector == nil ? "no iBeacon" : "not the beacon") at least 10 times in \(Int(seconds)) s"
      )
    }
    heard.append((name, id, e, advertised))
  }
  if recordings.isEmpty {
    var hearing = Hearing(selector: selector, seconds: seconds)
    if let input = args.value("input") {
      try readCapture(input) { hearing.add($0, $1) }
      try measure("this receiver", &hearing, input)
    } else {
      let config = try loadConfigOrDefaults(args)
      Console.error(
        "earshot calibrate: hold the beacon 1 m from this receiver for \(Int(seconds)) s\n")
      try scanLive(config: config, seconds: seconds) { hearing.add($0, $1) }
      try measure("this receiver", &hearing, "the scan")
    }
  } else {
    for r in recordings {
      var hearing = Hearing(selector: selector, seconds: seconds)
      try readCapture(r.path) { hearing.add($0, $1) }
      try measure(r.name, &hearing, r.path)
    }
  }

  let referenceName = args.value("reference")
  let reference =
    power ?? referenceName.flatMap { n in heard.first { $0.name == n }?.estimate.median }
    ?? Double(heard[0].advertised)
  let offsets = Calibration.offsets(
    heard: heard.map { ($0.name, $0.estimate.median) }, reference: reference)
  let source =
    power != nil
    ? "--power" : referenceName.map { "receiver \($0)" } ?? "the beacon's advertised power"
  Console.line("reference at 1 m: \(decimal(reference)) dBm (\(source))")
  for (h, o) in zip(heard, offsets) {
    Console.line(
      "\(h.name): beacon \(h.beacon) heard at 1 m: \(decimal(h.estimate.median)) dBm "
        + "(median of \(h.estimate.reports) reports, \(ReportFormatter.seconds(h.estimate.from.micros))"
        + "-\(ReportFormatter.seconds(h.estimate.to.micros))); rssi_offset = \(decimal(o.offset))")
  }
  guard args.has("write") else { return 0 }
  let offset: Double
  if offsets.count == 1 {
    offset = offsets[0].offset
  } else {
    let me = args.value("agent") ?? MQTTBridge.Options.hostname()
    guard let mine = offsets.first(where: { $0.name == me }) else {
      throw UsageError("--write: which receiver is this one? name it with --agent NAME")
    }
    offset = mine.offset
  }
  let path = args.value("config") ?? ConfigLocation.defaultPath()
  try writeSetting(path: path, section: "ranging", key: "rssi_offset", value: decimal(offset))
  Console.line("wrote [ranging] rssi_offset = \(decimal(offset)) to \(path)")
  return 0
}

private func decimal(_ v: Double) -> String {
  let r = (v * 10).rounded() / 10
  return r == r.rounded() ? String(Int(r)) : String(r)
}

/// UUID[:MAJOR[:MINOR]].
private func parseBeaconSelector(_ text: String) throws -> (
  uuid: BeaconUUID, major: UInt16?, minor: UInt16?
) {
  let parts = text.split(separator: ":", omittingEmptySubsequences: false)
  guard (1...3).contains(parts.count), let uuid = BeaconUUID(parts[0]) else {
    throw UsageError("--beacon expects UUID[:MAJOR[:MINOR]], got '\(text)'")
  }
  func number(_ i: Int) throws -> UInt16? {
    guard i < parts.count else { return nil }
    guard let n = UInt16(parts[i]) else {
      throw UsageError("--beacon expects UUID[:MAJOR[:MINOR]], got '\(text)'")
    }
    return n
  }
  return (uuid, try number(1), try number(2))
}

/// Every advertising report of a capture, streamed.
private func readCapture(_ path: String, _ report: (Int64, AdvertisingReport) -> Void) throws {
  do {
    let file = try FileStream(path: path)
    var reader = try CaptureReader(source: file.read(into:))
    var replay = CaptureReplay()
    try withExtendedLifetime(file) { try replay.run(&reader, report: report) }
  } catch {
    throw CommandFailure("\(path): \(error)")
  }
}

/// Scans live for `seconds` ([scanner]); SIGINT ends it early.
private func scanLive(
  config: Config, seconds: Double, _ report: @escaping (Int64, AdvertisingReport) -> Void
) throws {
  let loop = try EventLoop()
  let scanner = LiveScanner(
    loop: loop, options: LiveScanOptions(config: config.scanner), onReport: report,
    onAdapterState: { Console.error("earshot calibrate: \($0.message)\n") })
  try loop.handleSignals([SIGINT, SIGTERM]) { _ in loop.stop() }
  loop.after(seconds: seconds) { loop.stop() }
  do {
    try scanner.start()
  } catch let e as ScanError {
    throw CommandFailure(e.description)
  }
  try loop.run()
  scanner.stop()
}

/// Sets `key` in the config file at `path` (created if missing), checks
/// that the result is a valid config, and replaces the file atomically with
/// the same permissions.
private func writeSetting(path: String, section: String, key: String, value: String) throws {
  var text = ""
  var mode: mode_t = 0o644
  if access(path, F_OK) == 0 {
    do { text = String(decoding: try FileBytes(path: path).bytes, as: UTF8.self) } catch {
      throw CommandFailure("\(path): \(error)")
    }
    var st = stat()
    if stat(path, &st) == 0 { mode = st.st_mode & 0o7777 }
  }
  // The file as it is must be a good config (its own line numbers in the
  // errors), and so must the result.
  let edited = ConfigEdit.setting(text, section: section, key: key, value: value)
  for candidate in [text, edited] {
    do {
      _ = try Config.build(IniReader.parse(candidate, file: path), paths: ConfigLocation.paths())
    } catch let e as ConfigErrors {
      throw CommandFailure("not written: \(path) has problems:\n\(e.description)")
    }
  }
  let temporary = path + ".earshot-new"
  do {
    let sink = try FileSink(creating: temporary)
    try sink.write(Array(edited.utf8))
    try sink.flush()
  } catch {
    throw CommandFailure("\(error)")
  }
  chmod(temporary, mode)
  guard rename(temporary, path) == 0 else {
    let why = String(cString: strerror(errno))
    unlink(temporary)
    throw CommandFailure("cannot replace \(path): \(why)")
  }
}
