/// When a paced replay plays each record: capture time runs `pace` times
/// as fast as the clock (1 = real time), counted from an anchor, the
/// capture's first record played at `clockOrigin`. Pure arithmetic; the
/// shell reads the clock and sets the timers.
public struct ReplayPace: Sendable, Equatable {
  public var pace: Double
  /// Capture time of the anchor record.
  public var captureOrigin: WallTime
  /// When the anchor record plays.
  public var clockOrigin: MonotonicTime

  public init(pace: Double, captureOrigin: WallTime, clockOrigin: MonotonicTime) {
    precondition(pace > 0 && pace.isFinite)
    self.pace = pace
    self.captureOrigin = captureOrigin
    self.clockOrigin = clockOrigin
  }

  /// When the record at capture time `t` is due; a record before the
  /// anchor is due at once.
  public func due(_ t: WallTime) -> MonotonicTime {
    // Capture µs to clock ns, at the pace.
    let offset = Double(t.micros - captureOrigin.micros) * 1000 / pace
    guard offset > 0 else { return clockOrigin }
    return MonotonicTime(nanos: clockOrigin.nanos &+ UInt64(min(offset, Double(UInt64.max / 4))))
  }

  /// The capture time the clock stands for at `clock`.
  public func captureTime(at clock: MonotonicTime) -> WallTime {
    let (c, o) = (clock.nanos, clockOrigin.nanos)
    let elapsed = c >= o ? Double(c - o) : -Double(o - c)
    return WallTime(micros: captureOrigin.micros + Int64((elapsed * pace / 1000).rounded(.down)))
  }

  /// The monotonic instant for a wall-clock time, given both clocks read
  /// at one moment (for `--start-at`).
  public static func monotonic(
    forWall wall: WallTime, wallNow: WallTime, monotonicNow: MonotonicTime
  ) -> MonotonicTime {
    let delta = (wall.micros - wallNow.micros) * 1000
    let now = monotonicNow.nanos
    return MonotonicTime(nanos: delta >= 0 ? now &+ UInt64(delta) : now &- min(now, UInt64(-delta)))
  }
}
