import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// Clocks read from the kernel. The core never reads a clock; the shell
/// passes these values in.
public enum Clock {
  /// Now on the monotonic clock (timers, timeouts).
  public static func now() -> MonotonicTime { MonotonicTime(nanos: monotonicNanos()) }

  /// Now on the wall clock (what people read: outputs, logs, payloads).
  public static func wallNow() -> WallTime { WallTime(micros: realtimeMicros()) }

  /// Monotonic time in nanoseconds (for timers and measuring).
  public static func monotonicNanos() -> UInt64 {
    nanos(CLOCK_MONOTONIC)
  }

  /// Wall-clock time in microseconds since the Unix epoch (for output).
  public static func realtimeMicros() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
  }

  /// CLOCK_BOOTTIME in nanoseconds: monotonic, counting time asleep too.
  public static func boottimeNanos() -> UInt64 {
    nanos(CLOCK_BOOTTIME)
  }

  /// The monotonic clock in microseconds: the live monitor's decision time.
  public static func monotonicMicros() -> Int64 { Int64(monotonicNanos() / 1000) }

  /// The live monitor's decision time now (the monotonic clock).
  public static func decisionNow() -> DecisionTime { DecisionTime(monotonic: now()) }

  /// The three clocks at once (see `ClockWatch`).
  public static func reading() -> ClockReading {
    ClockReading(
      monotonic: now(), boottime: boottimeNanos(), wall: wallNow())
  }

  /// CPU time of the calling thread, in nanoseconds.
  public static func threadCPUNanos() -> UInt64 { nanos(CLOCK_THREAD_CPUTIME_ID) }

  /// CPU time this process has used, in nanoseconds.
  public static func processCPUNanos() -> UInt64 { nanos(CLOCK_PROCESS_CPUTIME_ID) }

  /// `clock` in nanoseconds (every clock but the wall clock is read so).
  private static func nanos(_ clock: clockid_t) -> UInt64 {
    var ts = timespec()
    clock_gettime(clock, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
  }
}
