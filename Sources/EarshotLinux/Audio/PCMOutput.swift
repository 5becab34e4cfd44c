import CALSA

#if canImport(Glibc)
  import Glibc
#endif

/// One ALSA playback stream as both players use it (the alert and the
/// media file player): 16-bit interleaved samples on a nonblocking PCM,
/// playback that starts as soon as one period is queued, underruns and
/// suspends recovered. Opening tries devices in order (the fallback list);
/// `close` drops what is queued first, so the device is silent within a
/// period. No thread: the owner polls `pollDescriptors` in its loop.
final class PCMOutput {
  let device: String
  /// Devices tried before `device` opened, with why each failed.
  let skipped: [AudioDeviceError]
  let channels: Int
  let rate: Int
  let periodFrames: Int
  let bufferFrames: Int
  /// Underruns and suspends recovered from.
  private(set) var recoveries = 0
  private var pcm: OpaquePointer?

  /// Opens the first of `devices` that takes the format; throws
  /// `AudioOpenFailure` listing every attempt when none does.
  init(devices: [String], channels: Int, rate: Int, bufferMicros: Int) throws {
    self.channels = channels
    self.rate = rate
    var failures: [AudioDeviceError] = []
    for name in devices {
      var handle: OpaquePointer?
      let err = LibraryThreads.withSignalsBlocked {
        snd_pcm_open(&handle, name, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK)
      }
      guard err == 0, let handle else {
        failures.append(AudioDeviceError(device: name, action: "open", code: err))
        continue
      }
      let setup = Self.configure(handle, channels: channels, rate: rate, bufferMicros: bufferMicros)
      if let e = setup.error {
        snd_pcm_close(handle)
        failures.append(AudioDeviceError(device: name, action: "configure", code: e))
        continue
      }
      pcm = handle
      device = name
      skipped = failures
      bufferFrames = setup.buffer
      periodFrames = setup.period
      return
    }
    throw AudioOpenFailure(attempts: failures)
  }

  deinit { close() }

  var isOpen: Bool { pcm != nil }

  /// Silences at once (what is queued is dropped) and releases the device.
  func close() {
    guard let pcm else { return }
    snd_pcm_drop(pcm)
    snd_pcm_close(pcm)
    self.pcm = nil
  }

  /// The descriptors to poll, with the events to wait for; the same for
  /// the stream's life.
  func pollDescriptors() -> [pollfd] {
    guard let pcm else { return [] }
    let n = snd_pcm_poll_descriptors_count(pcm)
    guard n > 0 else { return [] }
    var fds = [pollfd](repeating: pollfd(), count: Int(n))
    let got = fds.withUnsafeMutableBufferPointer {
      snd_pcm_poll_descriptors(pcm, $0.baseAddress, UInt32(n))
    }
    return Array(fds.prefix(Int(max(got, 0))))
  }

  /// Whether the polled descriptors (revents filled in) say the device
  /// has room or has failed: either way the next `write` deals with it.
  func wantsData(_ fds: [pollfd]) -> Bool {
    guard let pcm, !fds.isEmpty else { return false }
    var fds = fds
    var revents: UInt16 = 0
    let err = fds.withUnsafeMutableBufferPointer {
      snd_pcm_poll_descriptors_revents(pcm, $0.baseAddress, UInt32($0.count), &revents)
    }
    return err < 0 || revents & UInt16(POLLOUT | POLLERR) != 0
  }

  /// Writes up to `frames` frames of interleaved samples; returns how many
  /// the device took (0 when it is full). Throws when the device has gone
  /// (unplugged, its sound server gone).
  func write(_ samples: UnsafePointer<Int16>, frames: Int) throws -> Int {
    guard let pcm, frames > 0 else { return 0 }
    while true {
      let n = snd_pcm_writei(pcm, samples, snd_pcm_uframes_t(frames))
      if n == -Int(EAGAIN) { return 0 }
      if n >= 0 { return n }
      // EPIPE: underrun, re-prepare. ESTRPIPE: suspended, resume.
      let r = snd_pcm_recover(pcm, Int32(n), 1)
      if r < 0 { throw AudioDeviceError(device: device, action: "play on", code: r) }
      recoveries += 1
    }
  }

  /// Frames queued but not yet heard.
  var delayFrames: Int {
    guard let pcm else { return 0 }
    var delay: snd_pcm_sframes_t = 0
    return snd_pcm_delay(pcm, &delay) < 0 ? 0 : max(0, delay)
  }

  /// Silent now, but kept open to play again after `prepare`.
  func drop() {
    if let pcm { snd_pcm_drop(pcm) }
  }

  func prepare() {
    if let pcm { snd_pcm_prepare(pcm) }
  }

  /// Starts playback of what is queued even if less than a period is.
  func startIfPrepared() {
    if let pcm, snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED { snd_pcm_start(pcm) }
  }

  /// Sets the format, buffer and start policy: an ALSA error, or the
  /// buffer and period sizes in frames.
  private static func configure(
    _ pcm: OpaquePointer, channels: Int, rate: Int, bufferMicros: Int
  ) -> (error: Int32?, buffer: Int, period: Int) {
    var e = snd_pcm_set_params(
      pcm, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, UInt32(channels), UInt32(rate), 1,
      UInt32(bufferMicros))
    if e < 0 { return (e, 0, 0) }
    var bufferSize: snd_pcm_uframes_t = 0
    var periodSize: snd_pcm_uframes_t = 0
    e = snd_pcm_get_params(pcm, &bufferSize, &periodSize)
    if e < 0 { return (e, 0, 0) }
    var sw: OpaquePointer?
    e = snd_pcm_sw_params_malloc(&sw)
    if e < 0 { return (e, 0, 0) }
    defer { snd_pcm_sw_params_free(sw) }
    e = snd_pcm_sw_params_current(pcm, sw)
    if e < 0 { return (e, 0, 0) }
    // Start as soon as one period is queued (an alert must not wait for a
    // full buffer, nor a short file), and wake when a period has room.
    e = snd_pcm_sw_params_set_start_threshold(pcm, sw, periodSize)
    if e < 0 { return (e, 0, 0) }
    e = snd_pcm_sw_params_set_avail_min(pcm, sw, periodSize)
    if e < 0 { return (e, 0, 0) }
    e = snd_pcm_sw_params(pcm, sw)
    return (e < 0 ? e : nil, Int(bufferSize), max(1, Int(periodSize)))
  }
}
