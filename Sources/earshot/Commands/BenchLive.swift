import CLinux
import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

/// The live path at a fixed report rate: a writer thread sends H4 LE
/// advertising report events into a SOCK_SEQPACKET socketpair (one packet
/// per read, like a raw HCI socket) on an absolute 1/rate schedule; the
/// agent's `EventLoop` reads them, decodes, and feeds the region monitor
/// with its exit/range timer armed at the monitor's next deadline, as
/// `earshot monitor` does live. Measured: the loop thread's CPU time
/// (CLOCK_THREAD_CPUTIME_ID, the writer left out) and the loop's wakeups.
enum BenchLive {
  struct Result {
    let reports: Int
    let seconds: Double
    let cpuNanos: UInt64
    let wakeups: Int
    var cpuPercent: Double { Double(cpuNanos) / (seconds * 1e9) * 100 }
    var wakeupsPerSecond: Double { Double(wakeups) / seconds }
    var reportsPerSecond: Double { Double(reports) / seconds }
  }

  /// One path's monitor across the rounds of a run: the driver keeps what
  /// it learnt (resolved addresses, intervals, regions entered) and each
  /// round goes on in the capture where the last one stopped, so the
  /// rounds after the first measure the steady state a running agent is
  /// in (a new driver a round measured start-up: the identity capture's
  /// first second is 200 addresses never seen, each tried against every
  /// key).
  final class Session {
    let events: [[UInt8]]
    let driver: MonitorDriver
    fileprivate(set) var monitorEvents = 0
    fileprivate var nextEvent = 0
    fileprivate var started = false

    init(events: [[UInt8]], config: Config) throws {
      guard !events.isEmpty else { throw CommandFailure("bench: no advertising events to replay") }
      self.events = events
      driver = try BenchMonitor.driver(config) { _ in }
      driver.observe { [unowned self] _ in self.monitorEvents += 1 }
    }
  }

  static func run(_ session: Session, rate: Int, seconds: Double) throws -> Result {
    let events = session.events
    var pair: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, earshot_sock_seqpacket | earshot_sock_cloexec, 0, &pair) == 0
    else { throw SystemError(errno: errno, "socketpair") }
    let count = Int((Double(rate) * seconds).rounded())
    let packets = PacketTable(events: events)
    let firstPacket = session.nextEvent % events.count
    session.nextEvent += count
    // The writer is a thread of its own: a forked one made every page the
    // loop wrote in a round a copy-on-write fault of this process's,
    // counted in its CPU time (more of them where the monitor keeps more
    // state), which the agent never pays. The loop's CPU is its thread's.
    let writer = WriterThread(
      packets: packets, fd: pair[1], from: firstPacket, count: count,
      periodNanos: 1_000_000_000 / rate)
    do { try writer.start() } catch {
      close(pair[0])
      close(pair[1])
      packets.free()
      throw error
    }
    let fd = FileDescriptor(rawValue: pair[0])
    defer {
      fd.close()
      writer.join()
      packets.free()
    }
    fd.setNonblocking()

    let loop = try EventLoop()
    let driver = session.driver
    var decoder = AdvertisingEventDecoder()
    var reports = 0
    var first: (nanos: UInt64, cpu: UInt64, wakeups: Int)? = nil
    var last: (nanos: UInt64, cpu: UInt64, wakeups: Int)? = nil

    // The monitor's deadline on the monotonic clock, as a loop timer (as
    // AgentMonitor keeps it).
    let deadline = MovingDeadline<DecisionTime>(liveOn: loop)
    deadline.onFire = { [unowned deadline] _ in
      driver.advance(to: Clock.decisionNow())
      deadline.arm(at: driver.nextDeadline)
    }
    func rearm() { deadline.arm(at: driver.nextDeadline) }
    // As AgentMonitor: the clocks read at each report (sleep and steps).
    var clocks = ClockWatch(Clock.reading())

    if !session.started {
      driver.start(at: Clock.decisionNow(), scanning: true)
      session.started = true
    } else {
      // Time passed between the rounds (the other path's round).
      driver.advance(to: Clock.decisionNow())
    }
    rearm()
    let reader = PacketReader()
    // As LiveScanner reads its HCI socket: in batches, recvmmsg until a
    // short one.
    try loop.watch(fd, batchingFor: LiveScanner.readBatchNanos) { _ in
      // Count from the first wakeup with packets to the end, so start-up
      // is left out and the first batch's reports are in (and no clock is
      // read per wakeup but the one the monitor needs). Marked before the
      // batch is read: a slow start (valgrind) may find every packet and
      // the end in one batch.
      if first == nil { first = (Clock.monotonicNanos(), Clock.threadCPUNanos(), loop.wakeups) }
      do {
        try reader.drain(fd) { packet, _ in
          guard packet.count > 0 else {
            // The writer closed right after its last packet.
            last = (Clock.monotonicNanos(), Clock.threadCPUNanos(), loop.wakeups)
            loop.stop()
            return false
          }
          let now = Clock.wallNow()
          // H4: a packet-type byte before the event.
          if packet.count > 1, packet[0] == H4PacketType.event.rawValue {
            _ = decoder.decode(event: UnsafeRawBufferPointer(rebasing: packet[1...])) { report in
              reports += 1
              let reading = Clock.reading()
              _ = clocks.observe(reading)
              driver.report(at: LiveTime.decision(stamp: now, at: reading), report)
            }
          }
          rearm()
          return true
        }
      } catch {
        loop.stop()
      }
    }
    try loop.run()
    loop.unwatch(fd)
    guard let first, let last, last.nanos > first.nanos, reports > 0 else {
      throw CommandFailure("bench: the live replay received too few reports")
    }
    return Result(
      reports: reports, seconds: Double(last.nanos - first.nanos) / 1e9,
      cpuNanos: last.cpu - first.cpu, wakeups: last.wakeups - first.wakeups)
  }
}

/// H4 packets in one block of raw memory, which the writer thread only
/// reads.
private struct PacketTable {
  let base: UnsafeMutableRawPointer
  let offsets: UnsafeMutablePointer<Int>
  let count: Int

  init(events: [[UInt8]]) {
    count = events.count
    let total = events.reduce(0) { $0 + $1.count + 1 }
    base = .allocate(byteCount: max(total, 1), alignment: 8)
    offsets = .allocate(capacity: count + 1)
    var at = 0
    for (i, e) in events.enumerated() {
      offsets[i] = at
      base.storeBytes(of: H4PacketType.event.rawValue, toByteOffset: at, as: UInt8.self)
      e.withUnsafeBytes { (base + at + 1).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
      at += e.count + 1
    }
    offsets[count] = at
  }

  /// Writes `count` packets (cycling, from packet `start`), one every
  /// `periodNanos` on an absolute schedule, then closes the socket.
  func write(to fd: Int32, from start: Int, count total: Int, periodNanos: Int) {
    var next = timespec()
    clock_gettime(CLOCK_MONOTONIC, &next)
    for i in 0..<total {
      next.tv_nsec += periodNanos
      while next.tv_nsec >= 1_000_000_000 {
        next.tv_nsec -= 1_000_000_000
        next.tv_sec += 1
      }
      while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nil) == EINTR {}
      let k = (start + i) % count
      _ = send(fd, base + offsets[k], offsets[k + 1] - offsets[k], Int32(MSG_NOSIGNAL))
    }
    close(fd)
  }

  func free() {
    base.deallocate()
    offsets.deallocate()
  }
}

/// The writer's thread: `PacketTable.write`, then the socket closed.
private final class WriterThread: @unchecked Sendable {
  let packets: PacketTable
  let fd: Int32
  let first: Int
  let count: Int
  let periodNanos: Int
  private var thread = pthread_t()

  init(packets: PacketTable, fd: Int32, from start: Int, count: Int, periodNanos: Int) {
    self.packets = packets
    self.fd = fd
    self.first = start
    self.count = count
    self.periodNanos = periodNanos
  }

  func start() throws {
    let context = Unmanaged.passRetained(self).toOpaque()
    let result = pthread_create(
      &thread, nil,
      { context in
        let writer = Unmanaged<WriterThread>.fromOpaque(context!).takeRetainedValue()
        writer.packets.write(
          to: writer.fd, from: writer.first, count: writer.count, periodNanos: writer.periodNanos)
        return nil
      }, context)
    if result != 0 {
      Unmanaged<WriterThread>.fromOpaque(context).release()
      throw SystemError(errno: result, "pthread_create")
    }
  }

  func join() { pthread_join(thread, nil) }
}

extension BenchLive.Result {
  /// Rounds taken together: their reports, time, CPU and wakeups summed.
  init(summing rounds: [BenchLive.Result]) {
    self.init(
      reports: rounds.reduce(0) { $0 + $1.reports },
      seconds: rounds.reduce(0) { $0 + $1.seconds },
      cpuNanos: rounds.reduce(0) { $0 + $1.cpuNanos },
      wakeups: rounds.reduce(0) { $0 + $1.wakeups })
  }
}
