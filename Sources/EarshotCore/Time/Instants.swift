/// A moment on the monotonic clock: nanoseconds since an arbitrary start
/// (the machine's boot). Timers, timeouts and durations are kept in it; it
/// is never shown as a date and never mixed with `WallTime`.
public struct MonotonicTime: Hashable, Comparable, Sendable, CustomStringConvertible {
  public var nanos: UInt64

  public init(nanos: UInt64) { self.nanos = nanos }

  /// `seconds` later (a negative or non-finite span counts as none).
  public func adding(seconds: Double) -> MonotonicTime {
    let span = seconds.isFinite ? max(0, seconds) : 0
    return MonotonicTime(nanos: nanos &+ UInt64(min(span * 1e9, Double(UInt64.max / 2))))
  }

  /// Seconds from `self` until `later`; 0 when `later` is not later.
  public func seconds(until later: MonotonicTime) -> Double {
    later.nanos > nanos ? Double(later.nanos - nanos) / 1e9 : 0
  }

  /// Nanoseconds from `self` until `later`; 0 when `later` is not later.
  public func nanos(until later: MonotonicTime) -> UInt64 {
    later.nanos > nanos ? later.nanos - nanos : 0
  }

  public static func < (a: MonotonicTime, b: MonotonicTime) -> Bool { a.nanos < b.nanos }

  /// The clock's origin (tests and replays start their time here).
  public static let zero = MonotonicTime(nanos: 0)

  /// `span` later (a negative span counts as none).
  public static func + (t: MonotonicTime, span: Duration) -> MonotonicTime {
    let (seconds, attoseconds) = span.components
    guard seconds >= 0, attoseconds >= 0 else { return t }
    return MonotonicTime(
      nanos: t.nanos &+ UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000))
  }

  public static func += (t: inout MonotonicTime, span: Duration) { t = t + span }

  /// A decision time as a moment of the clock it counts: live, the
  /// monotonic clock itself (what the loop's timers are armed on); in a
  /// replay, the capture's clock (for a part that keeps the capture's time
  /// as its own, as the tracker watch does). One before the origin is the
  /// origin.
  public init(decision t: DecisionTime) { nanos = UInt64(max(0, t.micros)) &* 1000 }

  public var description: String { "\(Double(nanos) / 1e9) s (monotonic)" }
}

/// A moment on the wall clock, or on a capture's clock when one is
/// replayed: microseconds since the Unix epoch. What the region monitor
/// decides in and what every output line and log row shows.
public struct WallTime: Hashable, Comparable, Sendable, CustomStringConvertible {
  public var micros: Int64

  public init(micros: Int64) { self.micros = micros }

  /// Microseconds from `self` until `later`; 0 when `later` is not later.
  public func micros(until later: WallTime) -> Int64 { max(0, later.micros - micros) }

  public static func < (a: WallTime, b: WallTime) -> Bool { a.micros < b.micros }

  /// `seconds` since the Unix epoch, to the nearest microsecond (how JSON
  /// lines and `@UNIXSECONDS` give a time).
  public init(seconds: Double) { micros = Int64((seconds * 1e6).rounded()) }

  /// Seconds since the Unix epoch (the `t` of JSON lines).
  public var seconds: Double { Double(micros) / 1e6 }

  /// `span` later, to the microsecond.
  public static func + (t: WallTime, span: Duration) -> WallTime {
    WallTime(micros: t.micros + span.wholeMicros)
  }

  /// `span` earlier, to the microsecond.
  public static func - (t: WallTime, span: Duration) -> WallTime {
    WallTime(micros: t.micros - span.wholeMicros)
  }

  public var description: String { "\(seconds) s (Unix time)" }
}

/// A moment as the region monitor decides in it, in microseconds: the
/// monotonic clock live, the capture's clock in a replay. Rate limits and
/// timeouts on the monitor's events count in it, so no step of the wall
/// clock moves them; `MonitorTimeline` turns it into the `WallTime` shown.
public struct DecisionTime: Hashable, Comparable, Sendable, CustomStringConvertible {
  public var micros: Int64

  public init(micros: Int64) { self.micros = micros }

  /// A replay's decision time: the capture's clock, as it is.
  public init(capture t: WallTime) { micros = t.micros }

  /// A live decision time: the monotonic clock, to the microsecond.
  public init(monotonic t: MonotonicTime) { micros = Int64(t.nanos / 1000) }

  /// Seconds since the clock's origin (what MQTT's rate limits count in).
  public var seconds: Double { Double(micros) / 1e6 }

  public static func < (a: DecisionTime, b: DecisionTime) -> Bool { a.micros < b.micros }

  /// `span` later, to the microsecond.
  public static func + (t: DecisionTime, span: Duration) -> DecisionTime {
    DecisionTime(micros: t.micros + span.wholeMicros)
  }

  /// `span` earlier, to the microsecond.
  public static func - (t: DecisionTime, span: Duration) -> DecisionTime {
    DecisionTime(micros: t.micros - span.wholeMicros)
  }

  /// The span from `b` to `a` (negative when `a` is earlier).
  public static func - (a: DecisionTime, b: DecisionTime) -> Duration {
    .microseconds(a.micros &- b.micros)
  }

  public var description: String { "\(Double(micros) / 1e6) s (decision)" }
}

extension Duration {
  /// Whole microseconds (a part of one is dropped).
  var wholeMicros: Int64 {
    let (seconds, attoseconds) = components
    return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
  }

  /// In seconds, as a `Double` (for arithmetic on spans given in seconds).
  var inSeconds: Double {
    let (seconds, attoseconds) = components
    return Double(seconds) + Double(attoseconds) / 1e18
  }
}
