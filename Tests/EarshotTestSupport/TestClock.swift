import EarshotCore

/// The kernel's three clocks for a test of a laptop's day: time passes on
/// all three, a sleep passes on CLOCK_BOOTTIME and the wall clock only, and
/// a step moves the wall clock alone (as settimeofday, NTP or a person do).
public struct TestClock: Sendable {
  public private(set) var monotonicNanos: UInt64
  public private(set) var boottimeNanos: UInt64
  public private(set) var wallMicros: Int64

  /// Booted a minute ago, on 2026-12-01 at 09:00 UTC.
  public init(wallMicros: Int64 = 1_796_115_600_000_000) {
    monotonicNanos = 60_000_000_000
    boottimeNanos = 60_000_000_000
    self.wallMicros = wallMicros
  }

  public var reading: ClockReading {
    ClockReading(
      monotonic: MonotonicTime(nanos: monotonicNanos), boottime: boottimeNanos,
      wall: WallTime(micros: wallMicros))
  }

  /// Monotonic microseconds: what the live monitor decides on.
  public var monotonicMicros: Int64 { Int64(monotonicNanos / 1000) }

  /// `seconds` pass while the machine is awake.
  public mutating func advance(_ seconds: Double) {
    let nanos = UInt64((seconds * 1e9).rounded())
    monotonicNanos += nanos
    boottimeNanos += nanos
    wallMicros += Int64(nanos / 1000)
  }

  /// The machine sleeps for `seconds`.
  public mutating func sleep(_ seconds: Double) {
    let nanos = UInt64((seconds * 1e9).rounded())
    boottimeNanos += nanos
    wallMicros += Int64(nanos / 1000)
  }

  /// The wall clock is set `seconds` forward (negative: back).
  public mutating func step(_ seconds: Double) {
    wallMicros += Int64((seconds * 1e6).rounded())
  }
}
