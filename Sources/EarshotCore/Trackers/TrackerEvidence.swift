/// A tracker's evidence in wall time, as `earshot trackers --export` writes
/// it and `--plot` draws it: each sighting the watch kept (at most one per
/// place per `spacing`, at most `maximumEvidence`), its place and signal,
/// and when the tracker started to follow. Pure: the shell converts the
/// watch's clock to wall time.
public struct TrackerEvidence: Sendable, Equatable {
  public struct Sighting: Sendable, Equatable {
    public var time: WallTime
    /// nil: the place was not known (it counts for the span, not as a place).
    public var place: PlaceID?
    public var rssi: Int8?

    public init(time: WallTime, place: PlaceID?, rssi: Int8?) {
      self.time = time
      self.place = place
      self.rssi = rssi
    }
  }

  public var number: TrackerNumber
  public var family: TrackerProtocol.Family
  public var kind: TrackerKind
  public var address: BDAddress
  /// When it started to follow, if it did.
  public var following: WallTime?
  /// Oldest first.
  public var sightings: [Sighting]

  public init(
    number: TrackerNumber, family: TrackerProtocol.Family, kind: TrackerKind, address: BDAddress,
    following: WallTime?, sightings: [Sighting]
  ) {
    self.number = number
    self.family = family
    self.kind = kind
    self.address = address
    self.following = following
    self.sightings = sightings
  }

  /// A row of the watch and its evidence, `wall` giving the watch's times
  /// as wall time.
  public init(
    _ row: TrackerRow, evidence: [TrackerSighting], wall: (MonotonicTime) -> WallTime
  ) {
    self.init(
      number: row.number, family: row.frame.family, kind: row.frame.kind, address: row.address,
      following: row.following.map(wall),
      sightings: evidence.map { Sighting(time: wall($0.time), place: $0.place, rssi: $0.rssi) })
  }

  /// The distinct places, in the order they were first heard in.
  public var places: [PlaceID] {
    var out: [PlaceID] = []
    for s in sightings { if let p = s.place, !out.contains(p) { out.append(p) } }
    return out
  }

  /// The moves: each sighting in a known place other than the last known
  /// place before it (the first known place is not a move).
  public var moves: [(time: WallTime, from: PlaceID, to: PlaceID)] {
    var out: [(time: WallTime, from: PlaceID, to: PlaceID)] = []
    var last: PlaceID? = nil
    for s in sightings {
      guard let p = s.place else { continue }
      if let l = last, l != p { out.append((s.time, l, p)) }
      last = p
    }
    return out
  }

  // MARK: Export

  /// The CSV columns, one row per sighting (docs/trackers.md).
  public static let csvHeader =
    "tracker,protocol,kind,address,time,unix_s,place,rssi,moved,alert"

  /// Its sightings as CSV rows (without the header): `place` empty when
  /// unknown, `rssi` empty when the report had none, `moved` 1 on a
  /// sighting in another place than the one before, `alert` 1 on the
  /// sighting that made it follow.
  public var csvRows: [String] {
    let moved = Set(moves.map(\.time))
    return sightings.map { s in
      [
        String(number.value), family.rawValue, kind.rawValue, address.description,
        LogTime.iso(s.time, offset: LogTime.utc), JSONLine.format(s.time.seconds, decimals: 3),
        s.place.map { String($0.number) } ?? "", s.rssi.map { String($0) } ?? "",
        moved.contains(s.time) ? "1" : "0", s.time == following ? "1" : "0",
      ].joined(separator: ",")
    }
  }

  /// The evidence as one JSON object (the control socket's `tracker.evidence`
  /// answers with these; `init(json:)` reads them back).
  public var json: JSONValue {
    func time(_ t: WallTime) -> JSONValue { .string(LogTime.iso(t, offset: LogTime.utc)) }
    var o: [(String, JSONValue)] = [
      ("tracker", .int(number.value)), ("protocol", .string(family.rawValue)),
      ("kind", .string(kind.rawValue)), ("address", .string(address.description)),
    ]
    if let following {
      o.append(("following", time(following)))
      o.append(("following_unix_s", .number(following.seconds)))
    }
    o.append(("places", .array(places.map { .int($0.number) })))
    o.append(
      (
        "moves",
        .array(
          moves.map {
            .object([
              ("time", time($0.time)), ("unix_s", .number($0.time.seconds)),
              ("from", .int($0.from.number)), ("to", .int($0.to.number)),
            ])
          })
      ))
    o.append(
      (
        "sightings",
        .array(
          sightings.map { s in
            var f: [(String, JSONValue)] = [
              ("time", time(s.time)), ("unix_s", .number(s.time.seconds)),
            ]
            f.append(("place", s.place.map { .int($0.number) } ?? .null))
            f.append(("rssi", s.rssi.map { .int(Int($0)) } ?? .null))
            return .object(f)
          })
      ))
    return .object(o)
  }

  /// Reads `json` back (the CLI, from the running agent); nil when it is
  /// not one.
  public init?(json v: JSONValue) {
    func micros(_ x: JSONValue?) -> WallTime? {
      guard case .number(let s)? = x, s.isFinite, abs(s) < 9e12 else { return nil }
      return WallTime(micros: Int64((s * 1_000_000).rounded()))
    }
    guard case .number(let n)? = v["tracker"], n >= 1, n < 1e9,
      case .string(let f)? = v["protocol"], let family = TrackerProtocol.Family(rawValue: f),
      case .string(let k)? = v["kind"], let kind = TrackerKind(rawValue: k),
      case .string(let a)? = v["address"], let address = BDAddress(a),
      case .array(let rows)? = v["sightings"]
    else { return nil }
    var sightings: [Sighting] = []
    for row in rows {
      guard let t = micros(row["unix_s"]) else { return nil }
      var place: PlaceID? = nil
      if case .number(let p)? = row["place"], p >= 0, p < 1e9 { place = PlaceID(Int(p)) }
      var rssi: Int8? = nil
      if case .number(let r)? = row["rssi"], r >= -128, r <= 127 { rssi = Int8(r) }
      sightings.append(Sighting(time: t, place: place, rssi: rssi))
    }
    self.init(
      number: TrackerNumber(Int(n)), family: family, kind: kind, address: address,
      following: micros(v["following_unix_s"]), sightings: sightings)
  }
}
