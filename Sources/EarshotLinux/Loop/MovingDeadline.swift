import EarshotCore

/// One loop timer kept on a deadline that keeps moving (the monitor's next
/// exit, the next hook to reap): `arm(at:)` re-arms it only when the
/// deadline changed, and `nil` cancels it. Each fires `onFire` once, with
/// the deadline it was armed for.
public final class MovingDeadline<Instant: Equatable> {
  private let loop: EventLoop
  /// How long from now until an instant, in the loop's nanoseconds.
  private let nanosUntil: (Instant) -> UInt64
  private var armed: (id: EventLoop.TimerID, at: Instant)?
  public var onFire: ((Instant) -> Void)?

  public init(loop: EventLoop, nanosUntil: @escaping (Instant) -> UInt64) {
    self.loop = loop
    self.nanosUntil = nanosUntil
  }

  deinit { cancel() }

  /// The instant the timer is armed for, if it is.
  public var deadline: Instant? { armed?.at }

  public func arm(at deadline: Instant?) {
    guard armed?.at != deadline else { return }
    cancel()
    guard let deadline else { return }
    let id = loop.after(nanos: nanosUntil(deadline)) { [unowned self] in
      self.armed = nil
      self.onFire?(deadline)
    }
    armed = (id, deadline)
  }

  public func cancel() {
    if let armed { loop.cancel(armed.id) }
    armed = nil
  }
}

extension MovingDeadline where Instant == MonotonicTime {
  /// Deadlines on the monotonic clock (the loop's own time).
  public convenience init(monotonicOn loop: EventLoop) {
    self.init(loop: loop) { Clock.now().nanos(until: $0) }
  }
}
