import EarshotCore

/// One loop timer kept on a deadline that keeps moving (the monitor's next
/// exit, the next hook to reap): `arm(at:)` re-arms it only when the
/// deadline changed, and `nil` cancels it. Each fires `onFire` once, with
/// the deadline it was armed for, never before it.
///
/// A deadline that moves later keeps the loop timer where it is: when that
/// fires early it is set again for the deadline, without `onFire`. The
/// monitor's exit deadline moves with a device's reports (its last report
/// plus `exit_after`); each move re-armed the loop timer, a cancel and a new
/// timer, two `timerfd_settime` calls; now a deadline that passed costs one
/// wakeup (docs/performance.md).
///
/// `arm` and `cancel` are inlinable: asked after every report, they are
/// specialised where they are called. Called unspecialised from another
/// module (the bench's live loop), each call looked up `Optional<Instant>`'s
/// metadata twice: ~2,250 instructions a report, half of the bench's live
/// report (docs/performance.md).
public final class MovingDeadline<Instant: Comparable> {
  @usableFromInline let loop: EventLoop
  /// How long from now until an instant, in the loop's nanoseconds.
  @usableFromInline let nanosUntil: (Instant) -> UInt64
  /// The loop timer: at `wanted`, or earlier while `wanted` moved later.
  @usableFromInline var armed: (id: EventLoop.TimerID, at: Instant)?
  @usableFromInline var wanted: Instant?
  public var onFire: ((Instant) -> Void)?

  public init(loop: EventLoop, nanosUntil: @escaping (Instant) -> UInt64) {
    self.loop = loop
    self.nanosUntil = nanosUntil
  }

  deinit { cancel() }

  /// The instant the timer is armed for, if it is.
  public var deadline: Instant? { wanted }

  @inlinable public func arm(at deadline: Instant?) {
    guard wanted != deadline else { return }
    guard let deadline else { return cancel() }
    wanted = deadline
    if let armed, armed.at <= deadline { return }
    schedule(deadline)
  }

  @inlinable public func cancel() {
    if let armed { loop.cancel(armed.id) }
    armed = nil
    wanted = nil
  }

  @usableFromInline func schedule(_ at: Instant) {
    if let armed { loop.cancel(armed.id) }
    let id = loop.after(nanos: nanosUntil(at)) { [unowned self] in
      self.armed = nil
      guard let wanted = self.wanted else { return }
      if wanted == at {
        self.wanted = nil
        self.onFire?(at)
      } else {
        self.schedule(wanted)
      }
    }
    armed = (id, at)
  }
}

extension MovingDeadline where Instant == MonotonicTime {
  /// Deadlines on the monotonic clock (the loop's own time).
  public convenience init(monotonicOn loop: EventLoop) {
    self.init(loop: loop) { Clock.now().nanos(until: $0) }
  }
}

extension MovingDeadline where Instant == DecisionTime {
  /// Deadlines in a live monitor's decision time (the monotonic clock):
  /// how a core machine's deadline or timer action is armed on the loop.
  public convenience init(liveOn loop: EventLoop) {
    self.init(loop: loop) { Clock.now().nanos(until: MonotonicTime(decision: $0)) }
  }
}
