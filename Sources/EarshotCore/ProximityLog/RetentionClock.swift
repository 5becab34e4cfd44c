/// The "now" that `keep_days` counts back from in a live agent: the wall
/// clock, but never further ahead than real time has passed since the
/// agent started. Rows are stamped with wall time, so a wall clock set
/// forward by mistake (a year ahead) would otherwise delete rows that are
/// minutes old; set back, the wall clock is the earlier of the two and
/// deletes less. Sleep counts as time passing (CLOCK_BOOTTIME): rows age
/// while the laptop sleeps. A clock already wrong when the agent starts is
/// believed: nothing here survives a restart.
public struct RetentionClock: Sendable {
  public let start: ClockReading

  public init(start: ClockReading) { self.start = start }

  /// Wall microseconds that retention takes as now, at `reading`.
  public func now(at reading: ClockReading) -> Int64 {
    let elapsed = Int64((reading.boottime &- start.boottime) / 1000)
    return min(reading.wall.micros, start.wall.micros + elapsed)
  }
}
