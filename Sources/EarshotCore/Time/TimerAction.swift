/// A core machine's timers, as actions the shell carries out: the one
/// model for a wake-up that is a step of a machine's protocol (the
/// scanner's retry and retake, a ring's timeout, a tag's reconnect).
///
/// The machine names its timers (`Name`, one case for a machine with one
/// timer); arming a name again replaces its deadline, and cancelling one
/// not armed does nothing. The shell answers a firing with the machine's
/// own `timerFired` event, never before the deadline (`LoopTimers` in the
/// shell's `Loop/`), so a machine that asked again since may still see a
/// stale firing and ignores it. Time is the monotonic clock: no step of
/// the wall clock moves a timer.
///
/// A machine whose only wake-up is "call `advance` at my next deadline"
/// returns that deadline instead (`RegionMonitor.deadline()`,
/// `ScanScheduler.recheckAt`, `LogLimiter.nextDeadline`), which the shell
/// keeps armed with one `MovingDeadline`.
public enum TimerAction<Name: Hashable & Sendable>: Hashable, Sendable {
  /// Fire `name` at `deadline` (replacing its earlier deadline).
  case arm(Name, at: MonotonicTime)
  /// `name` is no longer wanted.
  case cancel(Name)
}
