/// Scores a room timeline against the ground truth (`simulate house`'s
/// truth.jsonl), in the terms of issue 18's goals:
///
/// - wrong-room time: the share of time the decided room differs from the
///   true one, outside a settle window (10 s) after each true change and
///   leaving out time in rooms no receiver covers (no rule can name them);
/// - room changes per hour of beacons that never move;
/// - confirm latency: from a true change into a covered room to the
///   first decision naming it (before the next true change);
/// - away latency: from leaving (truth `null`) to the decision `null`;
/// - changes per hour during stays: of every beacon, in each stay of
///   `stayAtLeast` (90 s) or more in a covered room, the decided changes after
///   the settle window but for the one that names the stay's room;
/// - the first placement: from the start of a beacon's first stay in a covered
///   room to the first decision of that room (0 if it was already named;
///   the stay's length if it never is).
public struct RoomScore: Sendable, Equatable {
  public var scoredSeconds = 0.0
  public var wrongSeconds = 0.0
  public var stationaryHours = 0.0
  public var stationaryChanges = 0
  public var confirmLatencies: [Double] = []
  /// True changes into covered rooms never confirmed before the next one.
  public var unconfirmed = 0
  public var awayLatencies: [Double] = []
  public var awayMissed = 0
  public var stayHours = 0.0
  public var stayChanges = 0
  /// Per beacon, seconds from its first stay in a covered room to the first
  /// decision naming it.
  public var firstRight: [Double] = []
  /// Of those, beacons whose first stay ended before it was named.
  public var firstNeverRight = 0
  /// Stays at least this long count for `stayChangesPerHour`.
  public static let stayAtLeast = 90.0

  public var wrongShare: Double { scoredSeconds > 0 ? wrongSeconds / scoredSeconds : 0 }
  public var changesPerHour: Double? {
    stationaryHours > 0 ? Double(stationaryChanges) / stationaryHours : nil
  }
  public var stayChangesPerHour: Double? {
    stayHours > 0 ? Double(stayChanges) / stayHours : nil
  }
  public var medianConfirm: Double? { Self.median(confirmLatencies) }
  public var maxAway: Double? { awayLatencies.max() }

  static func median(_ v: [Double]) -> Double? {
    guard !v.isEmpty else { return nil }
    let s = v.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
  }

  /// `truth` and `decided` hold changes of any beacons in any order;
  /// `covered` are the rooms that have a receiver; `end` closes the last
  /// interval of each beacon (microseconds).
  public static func score(
    truth: [RoomChange], decided: [RoomChange], covered: Set<String>, end: Int64,
    settle: Double = 10
  ) -> RoomScore {
    var out = RoomScore()
    let settleMicros = Int64(settle * 1e6)
    let byBeacon = Dictionary(grouping: truth, by: \.subject)
    let decidedBy = Dictionary(grouping: decided, by: \.subject)
    for (beacon, lines) in byBeacon {
      let truthLine = lines.sorted { $0.t.micros < $1.t.micros }
      let pred = (decidedBy[beacon] ?? []).sorted { $0.t.micros < $1.t.micros }
      func predicted(at t: Int64) -> String?? {
        // `.none`: nothing decided yet.
        var r: String?? = .none
        for p in pred {
          if p.t.micros > t { break }
          r = .some(p.room)
        }
        return r
      }
      // Wrong-room time, piecewise over the union of change times.
      var cuts = Set(truthLine.map(\.t.micros))
      for p in pred { cuts.insert(p.t.micros) }
      for l in truthLine { cuts.insert(l.t.micros + settleMicros) }
      let start = truthLine[0].t.micros
      let times = cuts.filter { $0 >= start && $0 < end }.sorted() + [end]
      for k in 0..<(times.count - 1) {
        let (a, b) = (times[k], times[k + 1])
        guard b > a else { continue }
        let trueRoom = truthLine.last { $0.t.micros <= a }!
        if a < trueRoom.t.micros + settleMicros { continue }
        if let r = trueRoom.room, !covered.contains(r) { continue }
        let seconds = Double(b - a) / 1e6
        out.scoredSeconds += seconds
        let p = predicted(at: a)
        if p == nil || p! != trueRoom.room { out.wrongSeconds += seconds }
      }
      // Stationary: one room throughout.
      let rooms = Set(truthLine.map(\.room))
      if rooms.count == 1, let only = truthLine[0].room, covered.contains(only) {
        out.stationaryHours += Double(end - start) / 3.6e9
        var last: String?? = .none
        for p in pred where p.t.micros >= start && p.t.micros < end {
          if case .some = last, last! != p.room { out.stationaryChanges += 1 }
          last = .some(p.room)
        }
      }
      // Stays: changes after the settle window, but for the one naming
      // the stay's room.
      for (k, l) in truthLine.enumerated() {
        guard let r = l.room, covered.contains(r) else { continue }
        let until = k + 1 < truthLine.count ? truthLine[k + 1].t.micros : end
        guard Double(until - l.t.micros) / 1e6 >= Self.stayAtLeast else { continue }
        out.stayHours += Double(until - l.t.micros) / 3.6e9
        var named = predicted(at: l.t.micros + settleMicros - 1) == .some(r)
        for p in pred where p.t.micros >= l.t.micros + settleMicros && p.t.micros < until {
          if !named && p.room == r {
            named = true
          } else {
            out.stayChanges += 1
          }
        }
      }
      // The first placement.
      if let k = truthLine.firstIndex(where: { $0.room.map(covered.contains) ?? false }) {
        let (a, r) = (truthLine[k].t.micros, truthLine[k].room)
        let until = k + 1 < truthLine.count ? truthLine[k + 1].t.micros : end
        if predicted(at: a) == .some(r) {
          out.firstRight.append(0)
        } else if let hit = pred.first(where: {
          $0.t.micros >= a && $0.t.micros < until && $0.room == r
        }) {
          out.firstRight.append(Double(hit.t.micros - a) / 1e6)
        } else {
          out.firstRight.append(Double(until - a) / 1e6)
          out.firstNeverRight += 1
        }
      }
      // Latencies.
      for (k, l) in truthLine.enumerated() where k > 0 {
        guard truthLine[k - 1].room != l.room else { continue }
        let until = k + 1 < truthLine.count ? truthLine[k + 1].t.micros : end
        let hit = pred.first {
          $0.t.micros >= l.t.micros && $0.t.micros < until && $0.room == l.room
        }
        if let r = l.room {
          guard covered.contains(r) else { continue }
          if let hit {
            out.confirmLatencies.append(Double(hit.t.micros - l.t.micros) / 1e6)
          } else if predicted(at: l.t.micros) != .some(r) {
            out.unconfirmed += 1
          }
        } else if let hit {
          out.awayLatencies.append(Double(hit.t.micros - l.t.micros) / 1e6)
        } else {
          out.awayMissed += 1
        }
      }
    }
    return out
  }

  /// One line for a table: the goals' figures.
  public func summary(awayAfter: Double?) -> String {
    func f(_ v: Double?, _ d: Int = 1) -> String {
      v.map { JSONLine.format($0, decimals: d) } ?? "-"
    }
    var s = "wrong-room \(f(wrongShare * 100)) % of \(f(scoredSeconds / 60, 0)) min"
    s += ", stationary changes/h \(f(changesPerHour, 2))"
    s += ", median confirm \(f(medianConfirm)) s (\(confirmLatencies.count) changes"
    s += unconfirmed > 0 ? ", \(unconfirmed) never confirmed)" : ")"
    s += ", away latency max \(f(maxAway)) s"
    if awayMissed > 0 { s += " (\(awayMissed) never away)" }
    if let awayAfter { s += " (goal ≤ \(f(awayAfter + 5, 0)) s)" }
    s += ", stay changes/h \(f(stayChangesPerHour, 2)) (stays ≥ \(f(Self.stayAtLeast, 0)) s)"
    s += ", first placement \(f(firstRight.max())) s"
    if firstNeverRight > 0 { s += " (\(firstNeverRight) never placed right)" }
    return s
  }
}
