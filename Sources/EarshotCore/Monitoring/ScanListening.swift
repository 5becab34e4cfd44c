/// What the monitor knows of the scanner: whether it scans, since when, at
/// what duty, and the listening time that counts toward exits.
///
/// Guarantees:
/// - time while the adapter is down or the scan paused never counts (the
///   clock stops; listening accumulates across pauses);
/// - nothing heard before the present scanning began says anything about
///   after it (`since` restarts, the clock is reset, at each `begin`);
/// - gaps are learnt only at full duty, `learnAfterFullMicros` into a
///   full-duty span.
struct ScanListening: Sendable {
  /// When the adapter's present scanning began (nil while it is down).
  private(set) var since: Int64? = nil
  private(set) var paused = false
  /// When the adapter last went down while scanning.
  private(set) var stoppedAt: Int64? = nil
  /// The time that counts toward exits: listening, at what duty.
  private(set) var clock = ListeningClock()
  /// The scanner's duty while it scans (the scan scheduler's choice).
  private(set) var duty = 1.0
  /// When the duty last became full (`.min`: it never was lower).
  private var fullSince: Int64 = .min

  /// Gaps are learnt only this far into a full-duty span. The scheduler
  /// ends a span as soon as the beacons it waited for are heard, so a short
  /// span holds a beacon's short gaps and cuts its long ones: learnt from,
  /// it would make the beacon seem to lose less than it does, and its
  /// confirm span too short.
  static let learnAfterFullMicros: Int64 = 30_000_000

  var isScanning: Bool { since != nil }

  func learnsGaps(at t: Int64) -> Bool {
    duty >= 1 && (fullSince == .min || t - fullSince >= Self.learnAfterFullMicros)
  }

  /// Scanning begins (again) at `t`: what was counted before is dropped.
  mutating func begin(at t: Int64) {
    since = t
    paused = false
    clock.reset()
    clock.listen(duty: duty, at: DecisionTime(micros: t))
  }

  /// The adapter went down.
  mutating func down(at t: Int64) {
    if since != nil { stoppedAt = t }
    since = nil
    paused = false
    clock.stop(at: DecisionTime(micros: t))
  }

  /// Nobody scans for a moment, the adapter up; `true` if this paused it.
  mutating func pause(at t: Int64) -> Bool {
    guard since != nil, !paused else { return false }
    paused = true
    clock.stop(at: DecisionTime(micros: t))
    return true
  }

  /// Scanning again after `pause`.
  mutating func resume(at t: Int64) {
    guard paused else { return }
    paused = false
    clock.listen(duty: duty, at: DecisionTime(micros: t))
  }

  /// The scan's duty from `t` (kept within 0.001...1); `false` if unchanged.
  mutating func setDuty(_ requested: Double, at t: Int64) -> Bool {
    let d = min(1, max(0.001, requested))
    guard d != duty else { return false }
    duty = d
    if d >= 1 { fullSince = t }
    if since != nil, !paused { clock.listen(duty: d, at: DecisionTime(micros: t)) }
    return true
  }

  /// A report at `t` proves someone scans: begun or resumed if it was not.
  /// `true` if this changed anything.
  mutating func heard(at t: Int64) -> Bool {
    if since == nil {
      begin(at: t)
      return true
    }
    if paused {
      // Reports flow again: someone scans.
      resume(at: t)
      return true
    }
    return false
  }
}
