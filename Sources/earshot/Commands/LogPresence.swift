import EarshotCore
import EarshotLinux

/// `earshot log presence`: inside intervals per region with durations.
func runLogPresence(_ args: Arguments) throws -> Int32 {
  let o = try LogQueryOptions(args)
  let reader = try o.open()
  let intervals: [PresenceInterval]
  let now: WallTime
  do {
    intervals = try reader.presence(o.query)
    // An open interval is known to last until the log's latest record (not
    // the wall clock: a replayed capture ends when it ends).
    now = min(o.query.until ?? WallTime(micros: .max), try reader.store.lastTime() ?? o.now)
  } catch { throw CommandFailure("\(error)") }
  let offset = LocalTimeZone.offset
  switch o.format {
  case .table:
    if intervals.isEmpty {
      Console.error("earshot log presence: no inside intervals in \(o.path) for this query\n")
      return 0
    }
    Console.line(LogFormatter.presenceTableHeader)
    var region: String? = nil
    for i in intervals {
      if region != nil && region != i.region { Console.line("") }
      region = i.region
      Console.line(LogFormatter.presenceTable(i, now: now, offset: offset))
    }
    Console.line("")
    for (r, total) in PresenceTimeline.totals(intervals, now: now) {
      let n = intervals.filter { $0.region == r }.count
      Console.line("total \(r): \(LogTime.duration(total)) in \(n) interval\(n == 1 ? "" : "s")")
    }
  case .json:
    for i in intervals { Console.line(LogFormatter.presenceJSON(i, now: now, offset: offset)) }
  case .csv:
    Console.line(LogFormatter.presenceCSVHeader)
    for i in intervals { Console.line(LogFormatter.presenceCSV(i, now: now, offset: offset)) }
  }
  return 0
}
