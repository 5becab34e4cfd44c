/// Output formats of `earshot log` and `earshot log presence`.
public enum LogFormat: String, Sendable, CaseIterable {
  case table, json, csv
}

/// Renders log records and presence intervals as a table, JSON lines or
/// CSV. JSON and CSV carry the same fields (CSV leaves a field empty where
/// JSON has null or omits it), with times both as Unix seconds and ISO-8601.
public enum LogFormatter {
  // MARK: Records

  public static let csvHeader =
    "t,time,type,region,event,state,uuid,major,minor,address,t_end,count,rssi_mean,rssi_min,"
    + "rssi_max,distance,adapter,device,detail,volume,muted,battery_mv,temperature,adv_count,"
    + "uptime"

  /// Fields of one record, in CSV column order (`nil` = empty / null).
  public static func fields(_ r: LogRecord, offset: LogTime.Offset) -> [(String, Field?)] {
    var f: [(String, Field?)] = [
      ("t", .number(r.t.seconds, 6)), ("time", .text(LogTime.iso(r.t, offset: offset))),
    ]
    func beacon(_ id: TrackedID?) -> [(String, Field?)] {
      [
        ("uuid", id.map { .text($0.uuid.description) }),
        ("major", id.map { .int(Int($0.major)) }), ("minor", id.map { .int(Int($0.minor)) }),
      ]
    }
    switch r {
    case .region(let e):
      f += [
        ("type", .text("region")), ("region", .text(e.region)), ("event", .text(e.kind.rawValue)),
      ]
      f += [("state", .text(e.state.rawValue))] + beacon(e.beacon)
    case .sightings(let s):
      f += [("type", .text("sighting")), ("region", nil), ("event", nil), ("state", nil)]
      f += beacon(s.beacon)
      f += [
        ("address", s.address.map { .text($0.description) }),
        ("t_end", .number(s.end.seconds, 6)), ("count", .int(s.count)),
        ("rssi_mean", s.rssiMean.map { .number($0, 1) }),
        ("rssi_min", s.rssiMin.map { .number($0, 0) }),
        ("rssi_max", s.rssiMax.map { .number($0, 0) }),
        ("distance", s.distanceMean.map { .number($0, 2) }),
      ]
    case .adapter(let e):
      f += [
        ("type", .text("adapter")), ("event", .text(e.kind.rawValue)),
        ("adapter", .text(e.adapter)),
      ]
    case .findPhone(let e):
      f += [
        ("type", .text("find_phone")), ("event", .text(e.kind.rawValue)),
        ("device", .text(e.device)),
      ]
      f += [("detail", e.detail.map { .text($0) })]
    case .volume(let e):
      f += [("type", .text("volume")), ("detail", e.source.map { .text($0) })]
      f += [("volume", .number(e.volume, 3)), ("muted", .bool(e.muted))]
    case .telemetry(let e):
      f += [("type", .text("telemetry")), ("region", nil), ("event", nil), ("state", nil)]
      f += beacon(e.beacon)
      f += [
        ("battery_mv", e.reading.batteryMillivolts.map { .int($0) }),
        ("temperature", e.reading.temperature.map { .number($0, 2) }),
        ("adv_count", .int(Int(e.reading.advertisingCount))),
        ("uptime", .number(e.reading.uptimeSeconds, 1)),
      ]
    case .tracker(let e):
      // The existing columns: the tracker's number as the device, its
      // sightings as the count, protocol, kind and places in the detail.
      f += [("type", .text("tracker")), ("event", .text(e.kind.rawValue))]
      f += [("address", .text(e.address.description)), ("count", .int(e.sightings))]
      f += [("device", .text("tracker \(e.number)")), ("detail", .text(trackerDetail(e)))]
    }
    return f
  }

  static func trackerDetail(_ e: TrackerLogEvent) -> String {
    "\(e.protocolName): \(e.trackerKind), \(e.places) places"
  }

  public enum Field: Sendable, Equatable {
    case text(String)
    case int(Int)
    case number(Double, Int)
    case bool(Bool)

    var plain: String {
      switch self {
      case .text(let s): s
      case .int(let i): String(i)
      case .number(let v, let d): JSONLine.format(v, decimals: d)
      case .bool(let b): b ? "true" : "false"
      }
    }
  }

  public static func json(_ r: LogRecord, offset: LogTime.Offset) -> String {
    object(fields(r, offset: offset).filter { $0.1 != nil })
  }

  public static func csv(_ r: LogRecord, offset: LogTime.Offset) -> String {
    let byName = Dictionary(
      fields(r, offset: offset).map { ($0.0, $0.1) }, uniquingKeysWith: { a, _ in a })
    return csvHeader.split(separator: ",").map { name in
      (byName[String(name)] ?? nil).map { csvCell($0.plain) } ?? ""
    }.joined(separator: ",")
  }

  public static let tableHeader =
    "TIME                 TYPE        SUBJECT                                      DETAIL"

  public static func table(_ r: LogRecord, offset: LogTime.Offset) -> String {
    let time = LogTime.short(r.t, offset: offset)
    let (type, subject, detail): (String, String, String)
    switch r {
    case .region(let e):
      type = e.kind.rawValue
      subject = e.region
      detail = e.state.rawValue + (e.beacon.map { "  beacon \($0)" } ?? "")
    case .sightings(let s):
      type = "sighting"
      subject = s.beacon.description
      var d = "n=\(s.count)"
      if let m = s.rssiMean, let lo = s.rssiMin, let hi = s.rssiMax {
        d += "  rssi \(JSONLine.format(m, decimals: 1)) (\(Int(lo))..\(Int(hi)))"
      }
      if let dist = s.distanceMean { d += "  \(JSONLine.format(dist, decimals: 2)) m" }
      if let a = s.address { d += "  \(a)" }
      detail = d
    case .adapter(let e):
      type = "adapter"
      subject = e.adapter
      detail = e.kind.rawValue
    case .findPhone(let e):
      type = "find-phone"
      subject = e.device
      detail = e.kind.rawValue + (e.detail.map { "  \($0)" } ?? "")
    case .volume(let e):
      type = "volume"
      subject = e.source ?? ""
      detail = "\(Int((e.volume * 100).rounded()))%" + (e.muted ? " muted" : "")
    case .telemetry(let e):
      type = "telemetry"
      subject = e.beacon.description
      var d = e.reading.batteryMillivolts.map { "battery \($0) mV" } ?? "no battery reading"
      if let c = e.reading.temperature { d += "  \(JSONLine.format(c, decimals: 1)) °C" }
      d += "  up \(LogTime.duration(Int64(e.reading.uptimeSeconds * 1e6)))"
      detail = d
    case .tracker(let e):
      type = "tracker"
      subject = "tracker \(e.number) \(e.address)"
      detail = e.kind.rawValue + "  " + trackerDetail(e) + "  n=\(e.sightings)"
    }
    return "\(time)  \(column(type, 10))  \(column(subject, 43))  \(detail)"
  }

  // MARK: Presence

  public static let presenceCSVHeader = "region,start,end,start_time,end_time,duration_s,ending"

  public static func presenceFields(_ p: PresenceInterval, now: WallTime, offset: LogTime.Offset)
    -> [(String, Field?)]
  {
    [
      ("region", .text(p.region)), ("start", .number(p.start.seconds, 6)),
      ("end", p.end.map { .number($0.seconds, 6) }),
      ("start_time", .text(LogTime.iso(p.start, offset: offset))),
      ("end_time", p.end.map { .text(LogTime.iso($0, offset: offset)) }),
      ("duration_s", .number(Double(p.duration(now: now)) / 1e6, 3)),
      ("ending", .text(p.ending.rawValue)),
    ]
  }

  public static func presenceJSON(_ p: PresenceInterval, now: WallTime, offset: LogTime.Offset)
    -> String
  {
    let f = presenceFields(p, now: now, offset: offset).map { ($0.0, $0.1 ?? nil) }
    var j = JSONLine()
    for (k, v) in f {
      if let v { add(&j, k, v) } else { j.addNull(k) }
    }
    return j.line
  }

  public static func presenceCSV(_ p: PresenceInterval, now: WallTime, offset: LogTime.Offset)
    -> String
  {
    presenceFields(p, now: now, offset: offset).map { $0.1.map { csvCell($0.plain) } ?? "" }
      .joined(separator: ",")
  }

  public static let presenceTableHeader =
    "REGION            START                END                  DURATION      ENDED"

  public static func presenceTable(_ p: PresenceInterval, now: WallTime, offset: LogTime.Offset)
    -> String
  {
    let start = (p.clippedStart ? "<" : " ") + LogTime.short(p.start, offset: offset)
    let end = p.end.map { LogTime.short($0, offset: offset) } ?? "-"
    return "\(column(p.region, 16))  \(start)  \(column(end, 19))  "
      + "\(column(LogTime.duration(p.duration(now: now)), 12))  \(p.ending.rawValue)"
  }

  // MARK: Pieces

  static func object(_ f: [(String, Field?)]) -> String {
    var j = JSONLine()
    for (k, v) in f {
      if let v { add(&j, k, v) }
    }
    return j.line
  }

  static func add(_ j: inout JSONLine, _ k: String, _ v: Field) {
    switch v {
    case .text(let s): j.add(k, s)
    case .int(let i): j.add(k, i)
    case .number(let d, let places): j.add(k, d, decimals: places)
    case .bool(let b): j.add(k, b)
    }
  }

  /// RFC 4180: quote a cell holding a comma, quote or line break.
  public static func csvCell(_ s: String) -> String {
    guard s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else {
      return s
    }
    return "\"" + s.replacingAll("\"", with: "\"\"") + "\""
  }

  static func column(_ s: String, _ width: Int) -> String {
    s.count >= width ? s : s + String(repeating: " ", count: width - s.count)
  }
}

extension String {
  func replacingAll(_ target: Character, with replacement: String) -> String {
    var out = ""
    for c in self {
      if c == target { out += replacement } else { out.append(c) }
    }
    return out
  }
}
