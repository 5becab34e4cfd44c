import EarshotCore

/// Carries out a core machine's `TimerAction`s on the loop: one
/// `MovingDeadline` per timer name, `onFire` called with the name at its
/// deadline, never before it. The one way the shell arms a core machine's
/// timers (a machine that returns a deadline instead gets a
/// `MovingDeadline` of its own). Dropping it cancels every timer.
public final class LoopTimers<Name: Hashable & Sendable> {
  private let loop: EventLoop
  private var timers: [Name: MovingDeadline<MonotonicTime>] = [:]
  /// Called once per firing, with the timer's name.
  public var onFire: ((Name) -> Void)?

  public init(loop: EventLoop) { self.loop = loop }

  public func apply(_ action: TimerAction<Name>) {
    switch action {
    case .arm(let name, let deadline): timer(name).arm(at: deadline)
    case .cancel(let name): timers[name]?.cancel()
    }
  }

  /// When `name` fires, if it is armed.
  public func deadline(of name: Name) -> MonotonicTime? { timers[name]?.deadline }

  /// Cancels every timer (the machine stopped).
  public func cancelAll() {
    for t in timers.values { t.cancel() }
  }

  private func timer(_ name: Name) -> MovingDeadline<MonotonicTime> {
    if let t = timers[name] { return t }
    let t = MovingDeadline(monotonicOn: loop)
    t.onFire = { [unowned self] _ in self.onFire?(name) }
    timers[name] = t
    return t
  }
}
