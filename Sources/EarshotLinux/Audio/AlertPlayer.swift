import CALSA
import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// What an alert plays.
public enum AlertSound: Sendable {
  case pattern(SoundPattern)
  /// A decoded sound file (see `SoundFile`).
  case samples(SampleLoop, name: String)

  public var name: String {
    switch self {
    case .pattern(let p): return p.name
    case .samples(_, let name): return name
    }
  }
}

/// Plays an alert on an ALSA PCM with low latency: a short buffer of a
/// few small periods, nonblocking writes, and no thread of its own. The
/// owner polls `pollDescriptors()` in its loop (the CLI's poll, the
/// daemon's epoll) and calls `handleReady(_:)` when they fire.
///
/// `start` opens the device (the configured one, else each fallback in
/// order) and writes the first period before it returns; `stop` drops
/// what is queued (`snd_pcm_drop`, not drain), so the device falls silent
/// within a period, and closes it so other programs can use it. The
/// descriptors are valid from `start` to `stop`: unwatch them before
/// calling `stop` (or a new `start`), since closing frees their numbers.
public final class AlertPlayer {
  public struct Settings: Sendable {
    public var device: String
    public var fallbacks: [String]
    /// Rate for synthesized patterns; files play at their own rate.
    public var sampleRate: Int
    public var channels: Int
    /// The whole ALSA buffer; a period is a quarter of it.
    public var bufferMicros: Int

    public init(
      device: String = "default", fallbacks: [String] = [], sampleRate: Int = 48_000,
      channels: Int = 2, bufferMicros: Int = 40_000
    ) {
      self.device = device
      self.fallbacks = fallbacks
      self.sampleRate = sampleRate
      self.channels = channels
      self.bufferMicros = bufferMicros
    }
  }

  public let settings: Settings
  /// The device that is playing (the configured one or a fallback).
  public private(set) var device: String?
  /// Devices tried before `device` opened, with why each failed.
  public private(set) var skipped: [AudioDeviceError] = []
  /// The last stream's sizes (kept after `stop`).
  public private(set) var periodFrames = 0
  public private(set) var bufferFrames = 0
  /// Nanoseconds from `start` being called to its first write returning.
  public private(set) var startLatencyNanos: UInt64 = 0
  /// Underruns and suspends recovered from during this (or the last)
  /// alert, across failovers too.
  public var recoveries: Int { earlierRecoveries + (output?.recoveries ?? 0) }
  private var earlierRecoveries = 0

  private var output: PCMOutput?
  private var rate = 0
  private var renderer: AlertRenderer?
  private var buffer: [Int16] = []
  private var pendingOffset = 0
  private var pendingFrames = 0

  public init(settings: Settings = Settings()) {
    self.settings = settings
  }

  deinit { stop() }

  public var isPlaying: Bool { output != nil }

  /// Seconds of the alert rendered so far (the ramp's clock).
  public var elapsed: Double { renderer?.elapsed ?? 0 }

  /// Starts `sound` from its beginning, looping until `stop()`. An alert
  /// already playing is replaced.
  public func start(sound: AlertSound, ramp: GainRamp? = nil) throws {
    let began = Clock.monotonicNanos()
    stop()
    earlierRecoveries = 0
    let source: AlertRenderer.Source
    let rate: Int
    switch sound {
    case .pattern(let p):
      rate = settings.sampleRate
      source = .pattern(PatternSynth(pattern: p, sampleRate: rate))
    case .samples(let loop, _):
      rate = loop.sampleRate
      var l = loop
      l.rewind()
      source = .samples(l)
    }
    try open(rate: rate, devices: [settings.device] + settings.fallbacks)
    self.rate = rate
    renderer = AlertRenderer(source: source, channels: settings.channels, ramp: ramp)
    do {
      try writeOnePeriod()
      startLatencyNanos = Clock.monotonicNanos() - began
      try service()
    } catch {
      stop()
      throw error
    }
  }

  /// The device failed while playing (unplugged, its sound server gone):
  /// goes on with the same alert, where it was (and with its ramp), on the
  /// next device of the list after the failed one. Returns that device;
  /// throws when no later device opens (the player is then stopped).
  @discardableResult
  public func continueOnNextDevice() throws -> String {
    guard let failed = device, renderer != nil else {
      throw AudioSetupError("no alert is playing")
    }
    let all = [settings.device] + settings.fallbacks
    let rest = Array(all.drop { $0 != failed }.dropFirst())
    earlierRecoveries += output?.recoveries ?? 0
    output?.close()
    output = nil
    do {
      guard !rest.isEmpty else {
        throw AudioSetupError(
          "no fallback device is left after '\(failed)' ([audio] fallback lists the devices to try)"
        )
      }
      try open(rate: rate, devices: rest)
      try writeOnePeriod()
      try service()
    } catch {
      stop()
      throw error
    }
    return device ?? ""
  }

  /// Silences the device at once and releases it. Safe to call when idle.
  public func stop() {
    renderer = nil
    pendingFrames = 0
    guard let output else { return }
    earlierRecoveries += output.recoveries
    output.close()
    self.output = nil
  }

  /// The descriptors to poll while playing, with the events to wait for.
  /// Empty when idle. They stay the same for the whole alert.
  public func pollDescriptors() -> [pollfd] { output?.pollDescriptors() ?? [] }

  /// Call with the descriptors from `pollDescriptors()` and the revents
  /// the poll returned. Writes when the device has room; recovers from
  /// underruns and suspends.
  public func handleReady(_ fds: [pollfd]) throws {
    if output?.wantsData(fds) == true { try service() }
  }

  /// Writes as much as the device will take now, a period at a time.
  public func service() throws {
    guard output != nil else { return }
    // Bounded: the device holds a few periods, so this ends in a few turns
    // even if it keeps taking data as fast as it is written.
    for _ in 0..<64 {
      if try !writeOnePeriod() { return }
    }
  }

  /// Writes the pending period (rendering a new one when none is pending).
  /// Returns false when the device is full.
  @discardableResult
  private func writeOnePeriod() throws -> Bool {
    guard let output, renderer != nil else { return false }
    let channels = settings.channels
    if pendingFrames == 0 {
      buffer.withUnsafeMutableBufferPointer {
        renderer!.render(into: $0, frames: output.periodFrames)
      }
      pendingOffset = 0
      pendingFrames = output.periodFrames
    }
    while pendingFrames > 0 {
      let n = try buffer.withUnsafeBufferPointer {
        try output.write($0.baseAddress! + pendingOffset * channels, frames: pendingFrames)
      }
      if n == 0 { return false }
      pendingOffset += n
      pendingFrames -= n
    }
    return true
  }

  private func open(rate: Int, devices: [String]) throws {
    let opened = try PCMOutput(
      devices: devices, channels: settings.channels, rate: rate,
      bufferMicros: settings.bufferMicros)
    output = opened
    device = opened.device
    skipped = opened.skipped
    periodFrames = opened.periodFrames
    bufferFrames = opened.bufferFrames
    buffer = [Int16](repeating: 0, count: opened.periodFrames * settings.channels)
    pendingFrames = 0
  }
}
