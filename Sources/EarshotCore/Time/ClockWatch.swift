/// The three kernel clocks read at one moment. CLOCK_MONOTONIC stops while
/// the machine sleeps, CLOCK_BOOTTIME does not, and CLOCK_REALTIME (the
/// wall clock) moves with both and also whenever someone sets it.
public struct ClockReading: Sendable, Equatable {
  public var monotonic: MonotonicTime
  /// CLOCK_BOOTTIME, in nanoseconds.
  public var boottime: UInt64
  public var wall: WallTime

  public init(monotonic: MonotonicTime, boottime: UInt64, wall: WallTime) {
    self.monotonic = monotonic
    self.boottime = boottime
    self.wall = wall
  }

  /// Boot time minus monotonic time: how long the machine has slept.
  var sleptNanos: Int64 { Int64(bitPattern: boottime &- monotonic.nanos) }
  /// Wall time minus boot time: moves only when the wall clock is set.
  var wallOffsetMicros: Int64 { wall.micros - Int64(boottime / 1000) }
}

/// Tells a sleep from a step of the wall clock by comparing readings of the
/// three clocks: between two readings, a sleep moves CLOCK_BOOTTIME away
/// from CLOCK_MONOTONIC, and a step moves the wall clock away from
/// CLOCK_BOOTTIME. Each catches every cause of its kind (suspend to RAM or
/// disk, s2idle; NTP, a person, an RTC kept in local time), whoever else
/// was told. NTP's slewing moves the wall clock by far less than
/// `threshold` and is not a step.
public struct ClockWatch: Sendable {
  public enum Change: Sendable, Equatable {
    /// The machine slept this long (seconds) since the last reading.
    case slept(Double)
    /// The wall clock was set forward (positive) or back by this much.
    case stepped(Double)
  }

  private var last: ClockReading
  /// Smaller changes are ignored (seconds).
  public let threshold: Double

  public init(_ first: ClockReading, threshold: Double = 1) {
    last = first
    self.threshold = threshold
  }

  /// What happened since the last reading (a sleep first: on resume the
  /// kernel may also step the wall clock to what the RTC says).
  public mutating func observe(_ r: ClockReading) -> [Change] {
    var out: [Change] = []
    let slept = Double(r.sleptNanos - last.sleptNanos) / 1e9
    if slept >= threshold { out.append(.slept(slept)) }
    let stepped = Double(r.wallOffsetMicros - last.wallOffsetMicros) / 1e6
    if abs(stepped) >= threshold { out.append(.stepped(stepped)) }
    last = r
    return out
  }
}

extension ClockWatch.Change: CustomStringConvertible {
  /// The line the agent logs (once per change).
  public var description: String {
    switch self {
    case .slept(let s):
      return "the machine slept \(JSONLine.format(s, decimals: 1)) s; "
        + "regions are unknown until heard again (time asleep does not count toward exit_after)"
    case .stepped(let s):
      return "clock stepped \(s >= 0 ? "+" : "")\(JSONLine.format(s, decimals: 1)) s; "
        + "presence unaffected"
    }
  }
}

/// Maps between the monitor's decision time (live: the monotonic clock, in
/// microseconds) and the wall clock people read, as of one reading.
public enum LiveTime {
  /// A report's decision time: the kernel stamps it with the wall clock
  /// as it arrives; that stamp's age at `reading` is taken off the
  /// monotonic now. An age that is negative or over `maxAge` seconds (the
  /// clock stepped between the stamp and the read) counts as none.
  public static func decision(stamp: WallTime, at reading: ClockReading, maxAge: Double = 2)
    -> DecisionTime
  {
    let now = DecisionTime(monotonic: reading.monotonic)
    let age = reading.wall.micros - stamp.micros
    guard age > 0, Double(age) <= maxAge * 1e6 else { return now }
    return DecisionTime(micros: now.micros - age)
  }

  /// The wall time of a decision time `t`, for display: as far before
  /// `reading`'s wall time as `t` is before its monotonic time.
  public static func shown(_ t: DecisionTime, at reading: ClockReading) -> WallTime {
    let now = DecisionTime(monotonic: reading.monotonic)
    return WallTime(micros: reading.wall.micros - (now.micros - t.micros))
  }

  /// The decision time of a wall time from elsewhere (the state file of an
  /// earlier run): as far before monotonic now as it is before wall now,
  /// and never later than now (a wall clock set back since).
  public static func decision(shown wall: WallTime, at reading: ClockReading) -> DecisionTime {
    let now = DecisionTime(monotonic: reading.monotonic)
    return DecisionTime(micros: now.micros - max(0, reading.wall.micros - wall.micros))
  }
}

/// How the monitor's decision time relates to the time it shows.
public enum MonitorTimeline: Sendable {
  /// A replay: decided and shown in the capture's time.
  case capture
  /// Live: decided on the monotonic clock, shown on the wall clock, as of
  /// the clocks' reading that `read` makes (the shell's `Clock.reading`).
  case live(read: @Sendable () -> ClockReading)

  /// The wall time of decision time `t` (a capture's decision time is
  /// its clock's, and shown as it is).
  public func shown(_ t: DecisionTime) -> WallTime {
    switch self {
    case .capture: WallTime(micros: t.micros)
    case .live(let read): LiveTime.shown(t, at: read())
    }
  }

  /// The decision time of a wall time from elsewhere (the state file).
  public func decision(shown wall: WallTime) -> DecisionTime {
    switch self {
    case .capture: DecisionTime(capture: wall)
    case .live(let read): LiveTime.decision(shown: wall, at: read())
    }
  }
}
