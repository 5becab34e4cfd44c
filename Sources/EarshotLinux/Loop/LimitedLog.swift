import EarshotCore

/// A `LogLimiter` on the loop, for bad input from the network: first lines
/// go out as they happen, summaries when their window ends (a timer on the
/// monotonic clock), and what is still counted at `finish`.
public final class LimitedLog {
  private var limiter: LogLimiter
  private let timer: MovingDeadline<MonotonicTime>
  private let sink: (String) -> Void

  public init(
    loop: EventLoop, interval: Double = 60, maxSources: Int = 64,
    sink: @escaping (String) -> Void
  ) {
    limiter = LogLimiter(interval: interval, maxSources: maxSources)
    timer = MovingDeadline(monotonicOn: loop)
    self.sink = sink
    timer.onFire = { [unowned self] _ in
      self.write(self.limiter.advance(to: Clock.now()))
    }
  }

  /// Occurrences per kind since the start.
  public var totals: [String: Int] { limiter.totals }

  /// One occurrence; `line` is built only if it is logged.
  public func note(_ kind: LogLimiter.Kind, from source: String, line: () -> String) {
    write(limiter.note(kind, from: source, at: Clock.now(), line: line))
  }

  /// Says what is still counted (the agent stops).
  public func finish() {
    timer.cancel()
    for line in limiter.finish(at: Clock.now()) { sink(line) }
  }

  private func write(_ lines: [String]) {
    for line in lines { sink(line) }
    timer.arm(at: limiter.nextDeadline)
  }
}
