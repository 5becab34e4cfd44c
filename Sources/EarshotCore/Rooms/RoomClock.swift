/// The aggregator's own clock: the time axis the room rule decides on.
///
/// Agents' clocks may be off by an hour, minutes, or drift; a sighting's
/// own `t` says what its agent's clock read, not when it was heard. So a
/// sighting is stamped when it arrives: the aggregator's monotonic clock
/// at arrival, mapped onto this axis. The window, `switch_after`,
/// `away_after` and agents going offline all run on it, and no agent's
/// clock moves it.
///
/// The axis is a wall-clock date (what outputs and retained states show)
/// that moves only with the monotonic clock, `pace` times as fast:
/// - live, it starts at the aggregator's wall clock read once, so a step
///   of that clock (NTP) afterwards moves nothing;
/// - in a paced replay it starts at the first sighting's own `t` (capture
///   time, the same on every replaying agent), so the decisions are dated
///   in capture time as the truth is.
public struct RoomClock: Sendable, Equatable {
  public enum Origin: Sendable, Equatable {
    /// The aggregator's wall clock `wall`, read at monotonic `at`.
    case wall(WallTime, at: MonotonicTime)
    /// The first sighting's `t`, at its arrival (replays).
    case firstSighting
  }

  /// Axis seconds per monotonic second.
  public let pace: Double
  private var origin: WallTime?
  private var originAt: MonotonicTime = .zero

  public init(origin: Origin, pace: Double = 1) {
    self.pace = pace.isFinite && pace > 0 ? pace : 1
    if case .wall(let wall, let at) = origin {
      self.origin = wall
      originAt = at
    }
  }

  /// Whether the axis has started (a replay's starts at its first sighting).
  public var isStarted: Bool { origin != nil }

  /// The axis at monotonic `m` (`nil` before it has started). Never
  /// earlier than its start.
  public func time(at m: MonotonicTime) -> WallTime? {
    guard let origin else { return nil }
    let micros = Double(originAt.nanos(until: m)) / 1e3 * pace
    return WallTime(micros: origin.micros &+ Int64(micros.rounded()))
  }

  /// `s` dated by its arrival at monotonic `arrival`; its own `t` is not
  /// kept (the caller has it for display).
  public mutating func stamp(_ s: RoomSighting, arrival: MonotonicTime) -> RoomSighting {
    if origin == nil {
      origin = s.t
      originAt = arrival
    }
    var stamped = s
    stamped.t = time(at: arrival)!
    return stamped
  }

  /// How far the agent's clock reads ahead of this axis (seconds; negative
  /// when behind), from a sighting's `t` and its arrival: shown, never
  /// used to decide. Includes the delivery delay.
  public func skew(of s: RoomSighting, arrival: MonotonicTime) -> Double? {
    time(at: arrival).map { Double(s.t.micros - $0.micros) / 1e6 }
  }
}

/// The room rule, and the naive baseline beside it, on the aggregator's
/// own clock (`RoomClock`): what `earshot rooms` runs live and what
/// `earshot rooms evaluate` replays through. Pure: each input comes with
/// the monotonic time it happened at; no clock is read here.
public struct RoomJudge: Sendable {
  public struct Changes: Sendable, Equatable {
    public var rule: [RoomChange] = []
    /// The naive baseline's (empty without one).
    public var naive: [RoomChange] = []

    public init(rule: [RoomChange] = [], naive: [RoomChange] = []) {
      self.rule = rule
      self.naive = naive
    }
  }

  public private(set) var clock: RoomClock
  public private(set) var rule: RoomRule
  public private(set) var naive: RoomRule?

  public init(settings: RoomRule.Settings, clock: RoomClock, naive: Bool = false) {
    self.clock = clock
    rule = RoomRule(settings: settings)
    self.naive = naive ? RoomRule(settings: settings.naive()) : nil
  }

  /// A live sighting that arrived at monotonic `arrival`.
  public mutating func sighting(_ s: RoomSighting, arrival: MonotonicTime) -> Changes {
    let stamped = clock.stamp(s, arrival: arrival)
    return Changes(rule: rule.sighting(stamped), naive: naive?.sighting(stamped) ?? [])
  }

  /// An agent's status (`online`/`offline`) that arrived at `arrival`.
  public mutating func agent(_ room: String, online: Bool, at arrival: MonotonicTime) -> Changes {
    let t = clock.time(at: arrival)
    return Changes(
      rule: rule.agent(room, online: online, at: t),
      naive: naive?.agent(room, online: online, at: t) ?? [])
  }

  /// Time passes: beacons silent for their away time go away.
  public mutating func advance(to m: MonotonicTime) -> Changes {
    guard let t = clock.time(at: m) else { return Changes() }
    return Changes(rule: rule.advance(to: t), naive: naive?.advance(to: t) ?? [])
  }

  /// A room retained from before a restart.
  public mutating func restore(_ subject: RoomSubject, room: String?) {
    rule.restore(subject, room: room)
    naive?.restore(subject, room: room)
  }
}
