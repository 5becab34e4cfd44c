/// When a paced replay plays each record: capture time runs `pace` times
/// as fast as the clock (1 = real time), counted from an anchor, the
/// capture's first record played at `clockOrigin`. Pure arithmetic; the
/// shell reads the clock and sets the timers.
public struct ReplayPace: Sendable, Equatable {
  public var pace: Double
  /// Capture time (µs since the epoch) of the anchor record.
  public var captureOrigin: Int64
  /// When the anchor record plays, on the monotonic clock (ns).
  public var clockOrigin: UInt64

  public init(pace: Double, captureOrigin: Int64, clockOrigin: UInt64) {
    precondition(pace > 0 && pace.isFinite)
    self.pace = pace
    self.captureOrigin = captureOrigin
    self.clockOrigin = clockOrigin
  }

  /// When the record at capture time `t` is due (monotonic ns); a record
  /// before the anchor is due at once.
  public func due(_ t: Int64) -> UInt64 {
    let offset = Double(t - captureOrigin) * 1000 / pace
    guard offset > 0 else { return clockOrigin }
    return clockOrigin &+ UInt64(min(offset, Double(UInt64.max / 4)))
  }

  /// The capture time the clock stands for at `clock` (monotonic ns).
  public func captureTime(at clock: UInt64) -> Int64 {
    let elapsed = clock >= clockOrigin ? Double(clock - clockOrigin) : -Double(clockOrigin - clock)
    return captureOrigin + Int64((elapsed * pace / 1000).rounded(.down))
  }

  /// The monotonic instant for a wall-clock time, given both clocks read
  /// at one moment (for `--start-at`).
  public static func monotonic(forWall wall: Int64, wallNow: Int64, monotonicNow: UInt64) -> UInt64
  {
    let delta = (wall - wallNow) * 1000
    return delta >= 0
      ? monotonicNow &+ UInt64(delta) : monotonicNow &- min(monotonicNow, UInt64(-delta))
  }
}
