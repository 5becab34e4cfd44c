import CLinux
import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// Wakes the loop when the wall clock is set or the machine resumes, and
/// says which (`ClockWatch`): a CLOCK_REALTIME timerfd armed far ahead
/// with TFD_TIMER_CANCEL_ON_SET, which the kernel cancels on every
/// settimeofday, NTP step and resume. It never fires otherwise, so it
/// costs no wake-ups. `check()` also compares the clocks at once, for a
/// caller about to decide on a reading (a report can be read in the same
/// loop turn as the wake-up, before it).
public final class ClockChanges {
  private let loop: EventLoop
  private let fd: FileDescriptor
  private var watch: ClockWatch
  /// Each sleep or step, once, in the order they are noticed.
  public var onChange: ((ClockWatch.Change) -> Void)?

  public init(loop: EventLoop) throws {
    self.loop = loop
    let raw = timerfd_create(CLOCK_REALTIME, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
    guard raw >= 0 else { throw SystemError(errno: errno, "timerfd_create(CLOCK_REALTIME)") }
    fd = FileDescriptor(rawValue: raw)
    watch = ClockWatch(Clock.reading())
    try arm()
    try loop.watch(fd) { [unowned self] _ in
      var expirations: UInt64 = 0
      _ = read(self.fd.rawValue, &expirations, 8)  // ECANCELED: the clock was set
      try? self.arm()
      self.check()
    }
  }

  deinit {
    loop.unwatch(fd)
    close(fd.rawValue)
  }

  /// Reads the clocks and reports what changed since the last check;
  /// returns the reading.
  @discardableResult
  public func check() -> ClockReading {
    let reading = Clock.reading()
    for change in watch.observe(reading) { onChange?(change) }
    return reading
  }

  private func arm() throws {
    // A year ahead of now: far enough never to expire, near enough to
    // stay in range whatever the clock is set to.
    var spec = itimerspec()
    spec.it_value.tv_sec = time(nil) + 365 * 86_400
    let flags = Int32(TFD_TIMER_ABSTIME) | Int32(TFD_TIMER_CANCEL_ON_SET)
    guard timerfd_settime(fd.rawValue, flags, &spec, nil) == 0 else {
      throw SystemError(errno: errno, "timerfd_settime(TFD_TIMER_CANCEL_ON_SET)")
    }
  }
}
