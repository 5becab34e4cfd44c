import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

/// `earshot log import`: `earshot monitor` JSON lines on stdin into the log.
/// Bad lines are reported with their number and skipped; the good ones
/// are written. Time comes from the lines, not the clock.
func runLogImport(_ args: Arguments) throws -> Int32 {
  guard args.positionals.count == 1 else {
    throw UsageError("unexpected argument '\(args.positionals[1])'")
  }
  for option in ["since", "until", "region", "beacon", "format"] where args.value(option) != nil {
    throw UsageError("--\(option) is for queries, not import")
  }
  var settings = ProximityLogWriter.Settings(
    path: args.value("db") ?? ProximityLogPaths.defaultPath())
  if let seconds = try args.double("interval") {
    guard seconds > 0 else { throw UsageError("--interval must be more than 0 seconds") }
    settings.interval = Int64(seconds * 1e6)
  }
  if let b = args.value("batch") {
    guard let rows = Int(b), rows > 0 else { throw UsageError("--batch expects a positive count") }
    settings.flushRows = rows
  }
  let writer = ProximityLogWriter(settings: settings, clock: nil)
  var lineNumber = 0
  var skipped = 0
  var regionEvents = 0
  var sightings = 0
  var other = 0
  var pending: [UInt8] = []
  var buffer = [UInt8](repeating: 0, count: 1 << 16)

  func handle(_ bytes: ArraySlice<UInt8>) {
    lineNumber += 1
    let line = String(decoding: bytes, as: UTF8.self)
    guard !line.trimmingCharacters(in: " \t\r").isEmpty else { return }
    do {
      for e in try MonitorLineImport.events(fromLine: line) {
        switch e {
        case .region: regionEvents += 1
        case .sighting: sightings += 1
        default: other += 1
        }
        writer.record(e)
      }
    } catch {
      skipped += 1
      if skipped <= 20 {
        Console.error("earshot log import: line \(lineNumber): \(error); skipped\n")
      }
    }
  }

  while true {
    let n = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress!, $0.count) }
    if n < 0 {
      if errno == EINTR { continue }
      throw CommandFailure("\(SystemError(errno: errno, "cannot read standard input"))")
    }
    if n == 0 { break }
    var start = 0
    for i in 0..<n where buffer[i] == 0x0A {
      if pending.isEmpty {
        handle(buffer[start..<i])
      } else {
        pending.append(contentsOf: buffer[start..<i])
        handle(pending[...])
        pending.removeAll(keepingCapacity: true)
      }
      start = i + 1
    }
    pending.append(contentsOf: buffer[start..<n])
  }
  if !pending.isEmpty { handle(pending[...]) }

  // The agent never waits for the database; an import may: retry a locked
  // file for up to a minute before giving up.
  var attempts = 0
  while !writer.close() {
    attempts += 1
    if attempts >= 600 {
      throw CommandFailure(
        "\(writer.backlog) row(s) not written to \(settings.path): \(writer.stats.lastError ?? "?")"
      )
    }
    usleep(100_000)
  }
  Console.line(
    "imported \(lineNumber) line(s) into \(settings.path): \(regionEvents) region event(s), "
      + "\(sightings) sighting(s) in \(writer.stats.rowsWritten) row(s) written"
      + (other > 0 ? ", \(other) other event(s)" : "")
      + (skipped > 0 ? "; \(skipped) bad line(s) skipped" : ""))
  return skipped > 0 ? 1 : 0
}

extension String {
  func trimmingCharacters(in set: String) -> String {
    var s = Substring(self)
    while let f = s.first, set.contains(f) { s.removeFirst() }
    while let l = s.last, set.contains(l) { s.removeLast() }
    return String(s)
  }
}
