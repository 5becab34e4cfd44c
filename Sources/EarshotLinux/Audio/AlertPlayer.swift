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
  public private(set) var periodFrames = 0
  public private(set) var bufferFrames = 0
  /// Nanoseconds from `start` being called to its first write returning.
  public private(set) var startLatencyNanos: UInt64 = 0
  /// Underruns and suspends recovered from during this alert.
  public private(set) var recoveries = 0

  private var pcm: OpaquePointer?
  private var rate = 0
  private var renderer: AlertRenderer?
  private var buffer: [Int16] = []
  private var pendingOffset = 0
  private var pendingFrames = 0

  public init(settings: Settings = Settings()) {
    self.settings = settings
  }

  deinit { stop() }

  public var isPlaying: Bool { pcm != nil }

  /// Seconds of the alert rendered so far (the ramp's clock).
  public var elapsed: Double { renderer?.elapsed ?? 0 }

  /// Starts `sound` from its beginning, looping until `stop()`. An alert
  /// already playing is replaced.
  public func start(sound: AlertSound, ramp: GainRamp? = nil) throws {
    let began = Clock.monotonicNanos()
    stop()
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
    buffer = [Int16](repeating: 0, count: periodFrames * settings.channels)
    pendingFrames = 0
    recoveries = 0
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
    guard let failed = device, let renderer else {
      throw AudioSetupError("no alert is playing")
    }
    let all = [settings.device] + settings.fallbacks
    let rest = Array(all.drop { $0 != failed }.dropFirst())
    if let pcm {
      snd_pcm_drop(pcm)
      snd_pcm_close(pcm)
      self.pcm = nil
    }
    do {
      guard !rest.isEmpty else {
        throw AudioSetupError(
          "no fallback device is left after '\(failed)' ([audio] fallback lists the devices to try)"
        )
      }
      try open(rate: rate, devices: rest)
      self.renderer = renderer
      buffer = [Int16](repeating: 0, count: periodFrames * settings.channels)
      pendingFrames = 0
      try writeOnePeriod()
      try service()
    } catch {
      stop()
      self.renderer = nil
      throw error
    }
    return device ?? ""
  }

  /// Silences the device at once and releases it. Safe to call when idle.
  public func stop() {
    guard let pcm else { return }
    snd_pcm_drop(pcm)
    snd_pcm_close(pcm)
    self.pcm = nil
    renderer = nil
    pendingFrames = 0
  }

  /// The descriptors to poll while playing, with the events to wait for.
  /// Empty when idle. They stay the same for the whole alert.
  public func pollDescriptors() -> [pollfd] {
    guard let pcm else { return [] }
    let n = snd_pcm_poll_descriptors_count(pcm)
    guard n > 0 else { return [] }
    var fds = [pollfd](repeating: pollfd(), count: Int(n))
    let got = fds.withUnsafeMutableBufferPointer {
      snd_pcm_poll_descriptors(pcm, $0.baseAddress, UInt32(n))
    }
    return Array(fds.prefix(Int(max(got, 0))))
  }

  /// Call with the descriptors from `pollDescriptors()` and the revents
  /// the poll returned. Writes when the device has room; recovers from
  /// underruns and suspends.
  public func handleReady(_ fds: [pollfd]) throws {
    guard let pcm, !fds.isEmpty else { return }
    var fds = fds
    var revents: UInt16 = 0
    let err = fds.withUnsafeMutableBufferPointer {
      snd_pcm_poll_descriptors_revents(pcm, $0.baseAddress, UInt32($0.count), &revents)
    }
    if err < 0 { return try recover(Int(err)) }
    if revents & UInt16(POLLOUT | POLLERR) != 0 { try service() }
  }

  /// Writes as much as the device will take now, a period at a time.
  public func service() throws {
    guard pcm != nil else { return }
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
    guard let pcm, renderer != nil else { return false }
    if pendingFrames == 0 {
      buffer.withUnsafeMutableBufferPointer { renderer!.render(into: $0, frames: periodFrames) }
      pendingOffset = 0
      pendingFrames = periodFrames
    }
    while pendingFrames > 0 {
      let n = buffer.withUnsafeBufferPointer {
        snd_pcm_writei(
          pcm, $0.baseAddress! + pendingOffset * settings.channels, snd_pcm_uframes_t(pendingFrames)
        )
      }
      if n == -Int(EAGAIN) { return false }
      if n < 0 {
        try recover(n)
        continue
      }
      pendingOffset += n
      pendingFrames -= n
    }
    return true
  }

  private func recover(_ err: Int) throws {
    guard let pcm else { return }
    // EPIPE: underrun, re-prepare. ESTRPIPE: suspended, resume. Anything
    // else is a device that went away: the caller stops or fails over
    // (`continueOnNextDevice`).
    let r = snd_pcm_recover(pcm, Int32(err), 1)
    if r < 0 {
      throw AudioDeviceError(device: device ?? settings.device, action: "play on", code: r)
    }
    recoveries += 1
  }

  private func open(rate: Int, devices: [String]) throws {
    var failures: [AudioDeviceError] = []
    for name in devices {
      var handle: OpaquePointer?
      let err = snd_pcm_open(&handle, name, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK)
      guard err == 0, let handle else {
        failures.append(AudioDeviceError(device: name, action: "open", code: err))
        continue
      }
      if let e = configure(handle, rate: rate) {
        snd_pcm_close(handle)
        failures.append(AudioDeviceError(device: name, action: "configure", code: e))
        continue
      }
      pcm = handle
      device = name
      skipped = failures
      return
    }
    throw AudioOpenFailure(attempts: failures)
  }

  /// 16-bit interleaved at `rate`, a short buffer, and playback that
  /// starts as soon as one period is queued. Returns an ALSA error or nil.
  private func configure(_ pcm: OpaquePointer, rate: Int) -> Int32? {
    var e = snd_pcm_set_params(
      pcm, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, UInt32(settings.channels),
      UInt32(rate), 1, UInt32(settings.bufferMicros))
    if e < 0 { return e }
    var bufferSize: snd_pcm_uframes_t = 0
    var periodSize: snd_pcm_uframes_t = 0
    e = snd_pcm_get_params(pcm, &bufferSize, &periodSize)
    if e < 0 { return e }
    bufferFrames = Int(bufferSize)
    periodFrames = max(1, Int(periodSize))
    var sw: OpaquePointer?
    e = snd_pcm_sw_params_malloc(&sw)
    if e < 0 { return e }
    defer { snd_pcm_sw_params_free(sw) }
    e = snd_pcm_sw_params_current(pcm, sw)
    if e < 0 { return e }
    e = snd_pcm_sw_params_set_start_threshold(pcm, sw, periodSize)
    if e < 0 { return e }
    e = snd_pcm_sw_params_set_avail_min(pcm, sw, periodSize)
    if e < 0 { return e }
    e = snd_pcm_sw_params(pcm, sw)
    return e < 0 ? e : nil
  }
}
