/// Times as people type them for `--since`, `--until` and `--day`, and as
/// the log prints them. Pure: the current time and the local zone's UTC
/// offset are passed in (the offset as a function of the instant, so
/// daylight-saving changes are honoured).
public enum LogTime {
  /// Seconds east of UTC in force at a Unix time (in seconds).
  public typealias Offset = @Sendable (Int64) -> Int

  public static let utc: Offset = { _ in 0 }

  public struct ParseError: Error, CustomStringConvertible, Equatable {
    public let text: String
    public var description: String {
      "'\(text)' is not a time: give ISO-8601 (2026-01-31, 2026-01-31T08:00, "
        + "2026-01-31T08:00:00Z, ...+01:00), a span ago (45s, 30m, 2h, 7d, 2w), "
        + "@UNIXSECONDS or now"
    }
  }

  /// Parses a time (as of `now`).
  /// - Relative: `30m` is 30 minutes before `now` (units s, m, h, d, w).
  /// - ISO-8601: a date alone is local midnight; a time without a zone is
  ///   local; `Z` or `±HH:MM` / `±HHMM` name the zone.
  public static func parse(_ text: String, now: WallTime, offset: Offset) throws -> WallTime {
    let s = text.trimmingSpaces
    guard !s.isEmpty else { throw ParseError(text: text) }
    if s == "now" { return now }
    // Within ±3,000 years of 1970: beyond, microseconds overflow an Int64.
    if s.hasPrefix("@"), let v = Double(s.dropFirst()), v.isFinite, abs(v) < 1e11 {
      return WallTime(seconds: v)
    }
    if let span = relative(s) { return WallTime(micros: now.micros - span) }
    if let t = iso(s, offset: offset) { return WallTime(micros: t) }
    throw ParseError(text: text)
  }

  /// `2026-01-31` as the local day: its start and the next day's start.
  public static func day(_ text: String, offset: Offset) throws -> (start: WallTime, end: WallTime)
  {
    let chars = Array(text.trimmingSpaces.utf8)
    guard chars.count == 10, let (y, m, d) = date(chars) else { throw ParseError(text: text) }
    return (
      WallTime(micros: local(y, m, d, 0, 0, 0, offset)),
      WallTime(micros: local(y, m, d + 1, 0, 0, 0, offset))
    )
  }

  /// The local day containing `t`.
  public static func dayContaining(_ t: WallTime, offset: Offset) -> (
    start: WallTime, end: WallTime
  ) {
    let c = components(t, offset: offset)
    return (
      WallTime(micros: local(c.year, c.month, c.day, 0, 0, 0, offset)),
      WallTime(micros: local(c.year, c.month, c.day + 1, 0, 0, 0, offset))
    )
  }

  // MARK: Formatting

  public struct Components: Equatable, Sendable {
    public var year, month, day, hour, minute, second: Int
    /// Seconds east of UTC.
    public var offset: Int
  }

  public static func components(_ t: WallTime, offset: Offset) -> Components {
    let secs = floorDiv(t.micros, 1_000_000)
    let off = offset(secs)
    let local = secs + Int64(off)
    let days = floorDiv(local, 86_400)
    let rem = Int(local - days * 86_400)
    let (y, m, d) = civil(fromDays: days)
    return Components(
      year: y, month: m, day: d, hour: rem / 3600, minute: rem / 60 % 60, second: rem % 60,
      offset: off)
  }

  /// `2026-01-31T08:00:05+01:00` (or `Z` in UTC).
  public static func iso(_ t: WallTime, offset: Offset) -> String {
    let c = components(t, offset: offset)
    var s = "\(pad(c.year, 4))-\(pad(c.month))-\(pad(c.day))T\(pad(c.hour)):\(pad(c.minute)):"
    s += pad(c.second)
    if c.offset == 0 { return s + "Z" }
    let a = abs(c.offset) / 60
    return s + (c.offset < 0 ? "-" : "+") + pad(a / 60) + ":" + pad(a % 60)
  }

  /// `2026-01-31 08:00:05` in local time, for tables.
  public static func short(_ t: WallTime, offset: Offset) -> String {
    let c = components(t, offset: offset)
    return "\(pad(c.year, 4))-\(pad(c.month))-\(pad(c.day)) \(pad(c.hour)):\(pad(c.minute)):"
      + pad(c.second)
  }

  /// `2h 05m 10s`, `5m 10s`, `12s`, `1d 02h 03m`.
  public static func duration(_ micros: Int64) -> String {
    let s = max(0, micros) / 1_000_000
    if s >= 86_400 { return "\(s / 86_400)d \(pad(Int(s / 3600 % 24)))h \(pad(Int(s / 60 % 60)))m" }
    if s >= 3600 { return "\(s / 3600)h \(pad(Int(s / 60 % 60)))m \(pad(Int(s % 60)))s" }
    if s >= 60 { return "\(s / 60)m \(pad(Int(s % 60)))s" }
    return "\(s)s"
  }

  public static func pad(_ v: Int, _ width: Int = 2) -> String {
    let s = String(abs(v))
    return (v < 0 ? "-" : "") + String(repeating: "0", count: max(0, width - s.count)) + s
  }

  // MARK: Parsing pieces

  static func relative(_ s: String) -> Int64? {
    guard let unit = s.last, let n = Double(s.dropLast()), n.isFinite, n >= 0 else { return nil }
    let scale: Double
    switch unit {
    case "s": scale = 1
    case "m": scale = 60
    case "h": scale = 3600
    case "d": scale = 86_400
    case "w": scale = 604_800
    default: return nil
    }
    return Int64((n * scale * 1e6).rounded())
  }

  static func iso(_ s: String, offset: Offset) -> Int64? {
    let c = Array(s.utf8)
    guard c.count >= 10, let (y, m, d) = date(Array(c[0..<10])) else { return nil }
    if c.count == 10 { return local(y, m, d, 0, 0, 0, offset) }
    guard c[10] == UInt8(ascii: "T") || c[10] == UInt8(ascii: " ") else { return nil }
    var i = 11
    func number(_ width: Int) -> Int? {
      guard i + width <= c.count else { return nil }
      var v = 0
      for k in i..<(i + width) {
        guard c[k] >= 48, c[k] <= 57 else { return nil }
        v = v * 10 + Int(c[k] - 48)
      }
      i += width
      return v
    }
    func expect(_ ch: Character) -> Bool {
      guard i < c.count, c[i] == ch.asciiValue! else { return false }
      i += 1
      return true
    }
    guard let hh = number(2), hh < 24, expect(":"), let mm = number(2), mm < 60 else { return nil }
    var ss = 0
    var micros: Int64 = 0
    if expect(":") {
      guard let v = number(2), v < 61 else { return nil }
      ss = v
      if expect(".") || expect(",") {
        var scale: Int64 = 100_000
        var digits = 0
        while i < c.count, c[i] >= 48, c[i] <= 57 {
          micros += Int64(c[i] - 48) * scale
          scale /= 10
          digits += 1
          i += 1
        }
        guard digits > 0 else { return nil }
      }
    }
    if i == c.count { return local(y, m, d, hh, mm, ss, offset) + micros }
    var zone = 0
    if expect("Z") || expect("z") {
      zone = 0
    } else {
      guard i < c.count, c[i] == UInt8(ascii: "+") || c[i] == UInt8(ascii: "-") else { return nil }
      let sign = c[i] == UInt8(ascii: "-") ? -1 : 1
      i += 1
      guard let zh = number(2) else { return nil }
      _ = expect(":")
      guard let zm = number(2), zh < 24, zm < 60 else { return nil }
      zone = sign * (zh * 3600 + zm * 60)
    }
    guard i == c.count else { return nil }
    let secs = days(y, m, d) * 86_400 + Int64(hh * 3600 + mm * 60 + ss) - Int64(zone)
    return secs * 1_000_000 + micros
  }

  static func date(_ c: [UInt8]) -> (Int, Int, Int)? {
    guard c.count == 10, c[4] == UInt8(ascii: "-"), c[7] == UInt8(ascii: "-") else { return nil }
    func n(_ r: Range<Int>) -> Int? {
      var v = 0
      for k in r {
        guard c[k] >= 48, c[k] <= 57 else { return nil }
        v = v * 10 + Int(c[k] - 48)
      }
      return v
    }
    guard let y = n(0..<4), let m = n(5..<7), let d = n(8..<10), (1...12).contains(m),
      d >= 1, d <= daysIn(y, m)
    else { return nil }
    return (y, m, d)
  }

  static func daysIn(_ y: Int, _ m: Int) -> Int {
    switch m {
    case 2: (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 ? 29 : 28
    case 4, 6, 9, 11: 30
    default: 31
    }
  }

  /// Local wall time to microseconds: subtract the offset in force then
  /// (found in two steps, so a time just after a zone change comes out right).
  static func local(
    _ y: Int, _ m: Int, _ d: Int, _ hh: Int, _ mm: Int, _ ss: Int, _ offset: Offset
  ) -> Int64 {
    let wall = days(y, m, d) * 86_400 + Int64(hh * 3600 + mm * 60 + ss)
    let guess = wall - Int64(offset(wall))
    return (wall - Int64(offset(guess))) * 1_000_000
  }

  /// Days since 1970-01-01 of a proleptic Gregorian date (day may overflow
  /// the month by one: it is counted on).
  static func days(_ y: Int, _ m: Int, _ d: Int) -> Int64 {
    let yy = Int64(m <= 2 ? y - 1 : y)
    let era = floorDiv(yy, 400)
    let yoe = yy - era * 400
    let mp = Int64((m + 9) % 12)
    let doy = (153 * mp + 2) / 5 + Int64(d) - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    return era * 146_097 + doe - 719_468
  }

  static func civil(fromDays z0: Int64) -> (Int, Int, Int) {
    let z = z0 + 719_468
    let era = floorDiv(z, 146_097)
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let d = Int(doy - (153 * mp + 2) / 5 + 1)
    let m = Int(mp < 10 ? mp + 3 : mp - 9)
    let y = Int(yoe + era * 400) + (m <= 2 ? 1 : 0)
    return (y, m, d)
  }

  static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
    let q = a / b
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
  }
}

extension String {
  var trimmingSpaces: String {
    var s = Substring(self)
    while s.first == " " || s.first == "\t" { s.removeFirst() }
    while s.last == " " || s.last == "\t" || s.last == "\n" { s.removeLast() }
    return String(s)
  }
}
