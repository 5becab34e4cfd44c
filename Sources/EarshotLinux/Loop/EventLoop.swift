import CLinux
import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// The agent's one loop: epoll over every descriptor (HCI socket, ALSA,
/// mixer, control socket, MQTT), one timerfd for all timers, and a
/// signalfd for signals. Single-threaded: handlers run on the loop's thread,
/// so nothing needs a lock. It sleeps until something happens (no polling).
public final class EventLoop {
  public typealias Handler = (_ events: UInt32) -> Void
  public typealias TimerID = UInt64

  private let epfd: Int32
  private let timerfd: Int32
  private var signalfd: Int32 = -1
  private var handlers: [FileDescriptor: Handler] = [:]
  /// A descriptor watched with `watch(_:batchingFor:_:)`.
  private struct Batching {
    /// Which watch the descriptor number belongs to now, so a closed
    /// descriptor's rest timer never touches its number's next owner.
    let token: UInt64
    /// When the handler last ran (monotonic ns).
    var lastCall: UInt64? = nil
    /// The timer that ends the current rest.
    var rest: TimerID? = nil
  }
  private var batching: [FileDescriptor: Batching] = [:]
  private var nextBatchToken: UInt64 = 1
  /// Pending timers, earliest first.
  private var timers: [(deadline: UInt64, id: TimerID, fire: () -> Void)] = []
  private var nextTimerID: TimerID = 1
  private var signalHandlers: [Int32: (Int32) -> Void] = [:]
  private var signalMask = sigset_t()
  private var stopped = false

  /// Event bits for `watch`, so callers need not import the C headers.
  public static let readable = EPOLLIN.rawValue
  public static let writable = EPOLLOUT.rawValue
  public static let hangup = EPOLLHUP.rawValue | EPOLLRDHUP.rawValue
  public static let error = EPOLLERR.rawValue

  /// How many times the loop woke up (for benchmarks: no busy polling).
  public private(set) var wakeups = 0

  public init() throws {
    epfd = epoll_create1(Int32(EPOLL_CLOEXEC))
    guard epfd >= 0 else { throw SystemError(errno: errno, "epoll_create1") }
    timerfd = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
    guard timerfd >= 0 else { throw SystemError(errno: errno, "timerfd_create") }
    try add(FileDescriptor(rawValue: timerfd), EPOLLIN.rawValue)
  }

  deinit {
    close(timerfd)
    if signalfd >= 0 { close(signalfd) }
    close(epfd)
  }

  // MARK: Descriptors

  /// Calls `handler` with the epoll event bits whenever `fd` is ready.
  /// `events` is a mask of EPOLLIN, EPOLLOUT, EPOLLPRI...
  public func watch(
    _ fd: FileDescriptor, events: UInt32 = EPOLLIN.rawValue, _ handler: @escaping Handler
  )
    throws
  {
    if handlers[fd] != nil {
      try modify(fd, events: events)
    } else {
      try add(fd, events)
    }
    handlers[fd] = handler
    forgetBatching(fd)
  }

  private func forgetBatching(_ fd: FileDescriptor) {
    if let timer = batching.removeValue(forKey: fd)?.rest { cancel(timer) }
  }

  /// Like `watch`, for a busy packet source (the HCI socket): when its
  /// handler runs again within two `interval`s of the last time, the
  /// descriptor then rests for `interval` (EPOLLONESHOT, re-armed by a
  /// timer), so packets arriving meanwhile are read as one batch instead of
  /// waking the loop one by one. A quiet source is not delayed at all; a
  /// busy one by up to `interval`, and its handler must read all that is
  /// queued.
  public func watch(
    _ fd: FileDescriptor, batchingFor interval: UInt64, _ handler: @escaping Handler
  ) throws {
    let events = EPOLLIN.rawValue | EPOLLONESHOT.rawValue
    let token = nextBatchToken
    nextBatchToken += 1
    try watch(fd, events: events) { [unowned self] bits in
      handler(bits)
      // Unwatched by the handler (its number may even be someone else's now).
      guard self.batching[fd]?.token == token else { return }
      let now = Clock.monotonicNanos()
      let busy = self.batching[fd]?.lastCall.map { now &- $0 < 2 * interval } ?? false
      self.batching[fd]?.lastCall = now
      guard busy else {
        try? self.modify(fd, events: events)
        return
      }
      self.batching[fd]?.rest = self.after(nanos: interval) { [unowned self] in
        guard self.batching[fd]?.token == token else { return }
        self.batching[fd]?.rest = nil
        try? self.modify(fd, events: events)
      }
    }
    batching[fd] = Batching(token: token)
  }

  public func modify(_ fd: FileDescriptor, events: UInt32) throws {
    var ev = epoll_event(events: events, data: epoll_data_t(fd: fd.rawValue))
    guard epoll_ctl(epfd, EPOLL_CTL_MOD, fd.rawValue, &ev) == 0 else {
      throw SystemError(errno: errno, "epoll_ctl MOD")
    }
  }

  /// Stops watching `fd`; safe to call from inside its own handler.
  public func unwatch(_ fd: FileDescriptor) {
    guard handlers.removeValue(forKey: fd) != nil else { return }
    forgetBatching(fd)
    _ = epoll_ctl(epfd, EPOLL_CTL_DEL, fd.rawValue, nil)
  }

  private func add(_ fd: FileDescriptor, _ events: UInt32) throws {
    var ev = epoll_event(events: events, data: epoll_data_t(fd: fd.rawValue))
    guard epoll_ctl(epfd, EPOLL_CTL_ADD, fd.rawValue, &ev) == 0 else {
      throw SystemError(errno: errno, "epoll_ctl ADD")
    }
  }

  // MARK: Timers

  /// Runs `fire` once, `nanos` from now on the monotonic clock.
  @discardableResult
  public func after(nanos: UInt64, _ fire: @escaping () -> Void) -> TimerID {
    at(MonotonicTime(nanos: Clock.monotonicNanos() &+ nanos), fire)
  }

  @discardableResult
  public func after(seconds: Double, _ fire: @escaping () -> Void) -> TimerID {
    after(nanos: UInt64(max(0, seconds) * 1e9), fire)
  }

  /// Runs `fire` once at a monotonic deadline.
  @discardableResult
  public func at(_ instant: MonotonicTime, _ fire: @escaping () -> Void) -> TimerID {
    let deadline = instant.nanos
    let id = nextTimerID
    nextTimerID += 1
    let index = timers.firstIndex { $0.deadline > deadline } ?? timers.endIndex
    timers.insert((deadline, id, fire), at: index)
    if index == 0 { armTimerfd() }
    return id
  }

  public func cancel(_ id: TimerID) {
    guard let index = timers.firstIndex(where: { $0.id == id }) else { return }
    timers.remove(at: index)
    if index == 0 { armTimerfd() }
  }

  private func armTimerfd() {
    var spec = itimerspec()
    if let first = timers.first {
      // Absolute deadline; 0 would disarm, so never pass 0.
      let d = max(first.deadline, 1)
      spec.it_value = timespec(tv_sec: Int(d / 1_000_000_000), tv_nsec: Int(d % 1_000_000_000))
    }
    _ = timerfd_settime(timerfd, Int32(TFD_TIMER_ABSTIME), &spec, nil)
  }

  private func fireDueTimers() {
    var expirations: UInt64 = 0
    _ = read(timerfd, &expirations, 8)
    let now = Clock.monotonicNanos()
    while let first = timers.first, first.deadline <= now {
      timers.removeFirst()
      first.fire()
    }
    armTimerfd()
  }

  // MARK: Signals

  /// Delivers `signals` to `handler` through the loop instead of as
  /// asynchronous interrupts. The signals are blocked for the process.
  /// Calls add up: each signal goes to the handler last given for it, so
  /// parts sharing the loop (the daemon's SIGTERM, the hooks' SIGCHLD)
  /// each register their own.
  public func handleSignals(_ signals: [Int32], _ handler: @escaping (Int32) -> Void) throws {
    var mask = sigset_t()
    sigemptyset(&mask)
    for s in signals { sigaddset(&mask, s) }
    guard sigprocmask(SIG_BLOCK, &mask, nil) == 0 else {
      throw SystemError(errno: errno, "sigprocmask")
    }
    if signalfd < 0 { sigemptyset(&signalMask) }
    for s in signals { sigaddset(&signalMask, s) }
    let fd = CLinux.signalfd(signalfd, &signalMask, Int32(SFD_NONBLOCK | SFD_CLOEXEC))
    guard fd >= 0 else { throw SystemError(errno: errno, "signalfd") }
    if signalfd < 0 { try add(FileDescriptor(rawValue: fd), EPOLLIN.rawValue) }
    signalfd = fd
    for s in signals { signalHandlers[s] = handler }
  }

  private func readSignals() {
    var info = signalfd_siginfo()
    while read(signalfd, &info, MemoryLayout<signalfd_siginfo>.size)
      == MemoryLayout<signalfd_siginfo>.size
    {
      let signo = Int32(info.ssi_signo)
      signalHandlers[signo]?(signo)
    }
  }

  // MARK: Running

  /// Runs until `stop()` is called from a handler.
  public func run() throws {
    stopped = false
    var events = [epoll_event](repeating: epoll_event(), count: 32)
    while !stopped {
      let n = epoll_wait(epfd, &events, Int32(events.count), -1)
      if n < 0 {
        if errno == EINTR { continue }
        throw SystemError(errno: errno, "epoll_wait")
      }
      wakeups += 1
      for i in 0..<Int(n) {
        let fd = events[i].data.fd
        let bits = events[i].events
        if fd == timerfd {
          fireDueTimers()
        } else if fd == signalfd {
          readSignals()
        } else {
          handlers[FileDescriptor(rawValue: fd)]?(bits)
        }
        if stopped { break }
      }
    }
  }

  public func stop() { stopped = true }
}
