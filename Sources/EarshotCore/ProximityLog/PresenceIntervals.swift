/// A stretch of time a region spent in one state, as the log tells it.
public struct RegionSegment: Sendable, Equatable {
  public var region: String
  public var state: PresenceState
  public var start: WallTime
  /// `nil`: still in this state at the last event (open).
  public var end: WallTime?
  /// The segment began before the window and was cut at its start.
  public var clippedStart = false
  /// The segment went on past the window and was cut at its end.
  public var clippedEnd = false

  public init(
    region: String, state: PresenceState, start: WallTime, end: WallTime?,
    clippedStart: Bool = false, clippedEnd: Bool = false
  ) {
    self.region = region
    self.state = state
    self.start = start
    self.end = end
    self.clippedStart = clippedStart
    self.clippedEnd = clippedEnd
  }
}

/// A time someone (a beacon) was inside a region.
public struct PresenceInterval: Sendable, Equatable {
  /// How the interval ended.
  public enum Ending: String, Sendable {
    /// An exit (or a `state` event saying outside).
    case exit
    /// The region became unknown (adapter down, agent restart): the beacon
    /// may have stayed, but the log cannot say, so presence is not claimed.
    case unknown
    /// Still inside at the last event: the interval is open.
    case open
    /// Still inside at the end of the query window (`--until`).
    case windowEnd = "window_end"
  }

  public var region: String
  public var start: WallTime
  /// `nil` when open.
  public var end: WallTime?
  public var ending: Ending
  /// Inside already when the window began (the start is the window's).
  public var clippedStart: Bool

  public init(
    region: String, start: WallTime, end: WallTime?, ending: Ending, clippedStart: Bool = false
  ) {
    self.region = region
    self.start = start
    self.end = end
    self.ending = ending
    self.clippedStart = clippedStart
  }

  /// Microseconds; an open interval counts up to `now`.
  public func duration(now: WallTime) -> Int64 { start.micros(until: end ?? now) }
}

/// Presence computed from region events. Pure.
///
/// Rules (documented in docs/proximity-log.md):
/// - A region's state is what its last event said (`enter`/`exit`/`state`
///   all carry the state); before its first event nothing is known and no
///   segment is produced.
/// - Events repeating the current state extend the segment: a `state
///   inside` after a restart that never went unknown does not split it.
/// - `unknown` ends an inside interval (ending `.unknown`): time spent
///   unknown is never counted as presence, even if the beacon was inside
///   before and after. A later inside starts a new interval.
/// - The last segment is open (`end == nil`) unless a window end cuts it.
/// - With a window, events before `from` set the state at `from`; segments
///   are cut to the window.
public enum PresenceTimeline {
  public static func segments(
    of events: [RegionLogEvent], from: WallTime? = nil, to: WallTime? = nil
  ) -> [RegionSegment] {
    // Stable sort by time: equal times keep the order they were logged in.
    let sorted = events.enumerated().sorted {
      ($0.element.t, $0.offset) < ($1.element.t, $1.offset)
    }
    .map(\.element)
    var order: [String] = []
    var byRegion: [String: [RegionSegment]] = [:]
    for e in sorted {
      if let to, e.t >= to { continue }
      if byRegion[e.region] == nil {
        order.append(e.region)
        byRegion[e.region] = []
      }
      var list = byRegion[e.region]!
      if let last = list.last, last.end == nil {
        if last.state == e.state { continue }
        list[list.count - 1].end = e.t
      }
      list.append(RegionSegment(region: e.region, state: e.state, start: e.t, end: nil))
      byRegion[e.region] = list
    }
    var out: [RegionSegment] = []
    for region in order {
      for var s in byRegion[region]! {
        if let from {
          if let end = s.end, end <= from { continue }
          if s.start < from {
            s.start = from
            s.clippedStart = true
          }
        }
        if let to, s.end == nil || s.end! > to {
          s.end = to
          s.clippedEnd = true
        }
        out.append(s)
      }
    }
    return out
  }

  /// The inside intervals, per region in order of first appearance.
  public static func presence(
    of events: [RegionLogEvent], from: WallTime? = nil, to: WallTime? = nil
  ) -> [PresenceInterval] {
    let segs = segments(of: events, from: from, to: to)
    var out: [PresenceInterval] = []
    for (i, s) in segs.enumerated() where s.state == .inside {
      let ending: PresenceInterval.Ending
      if s.clippedEnd {
        ending = .windowEnd
      } else if s.end == nil {
        ending = .open
      } else {
        let next = segs[(i + 1)...].first { $0.region == s.region }
        ending = next?.state == .unknown ? .unknown : .exit
      }
      out.append(
        PresenceInterval(
          region: s.region, start: s.start, end: s.end, ending: ending,
          clippedStart: s.clippedStart))
    }
    return out
  }

  /// Total inside time per region within the window (open intervals count
  /// up to `now`).
  public static func totals(_ intervals: [PresenceInterval], now: WallTime) -> [(String, Int64)] {
    var order: [String] = []
    var sum: [String: Int64] = [:]
    for i in intervals {
      if sum[i.region] == nil { order.append(i.region) }
      sum[i.region, default: 0] += i.duration(now: now)
    }
    return order.map { ($0, sum[$0]!) }
  }
}
