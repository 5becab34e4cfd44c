import CALSA

#if canImport(Glibc)
  import Glibc
#endif

/// What a listener hears of an output, for `earshot bench`'s request →
/// audible figure: an ALSA capture PCM that records what the output plays
/// (a sound server's default source when it is the null sink's monitor,
/// snd-aloop's capture side) and the time of the first sample louder than
/// -40 dBFS after `arm()`.
public final class CaptureListener {
  public let device: String
  public let rate = 48_000
  private var pcm: OpaquePointer?
  private var chunk = [Int16](repeating: 0, count: 4800)
  private var armedAt: UInt64? = nil
  /// The time the first loud sample was captured, once heard: the read's
  /// time less the capture's delay (`snd_pcm_delay`) at that sample. On a
  /// sink's monitor that is when the server mixed it into the sink.
  public private(set) var heardAt: UInt64? = nil
  /// The time that sample reached this process (an upper bound).
  public private(set) var readAt: UInt64? = nil
  /// Frames captured so far (a PulseAudio capture can take a second or
  /// more to deliver its first).
  public private(set) var framesRead = 0
  /// Overruns recovered from (the bench fell behind reading; what was
  /// captured meanwhile is lost, a sound in it heard late).
  public private(set) var overruns = 0

  /// The buffer only bounds how late a read may come without losing
  /// samples (the capture time comes from `snd_pcm_delay`): 20 ms
  /// overran dozens of times a run in the test bed's emulated VM.
  public init(device: String, bufferMicros: Int = 100_000) throws {
    self.device = device
    var handle: OpaquePointer?
    let err = LibraryThreads.withSignalsBlocked {
      snd_pcm_open(&handle, device, SND_PCM_STREAM_CAPTURE, SND_PCM_NONBLOCK)
    }
    guard err == 0, let handle else {
      throw AudioDeviceError(device: device, action: "open", code: err)
    }
    let e = snd_pcm_set_params(
      handle, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, 1, UInt32(rate), 1,
      UInt32(bufferMicros))
    guard e >= 0 else {
      snd_pcm_close(handle)
      throw AudioDeviceError(device: device, action: "configure", code: e)
    }
    pcm = handle
    snd_pcm_start(handle)
  }

  deinit { if let pcm { snd_pcm_close(pcm) } }

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

  /// Listens for sound from now on (what is already captured is read and
  /// dropped first).
  public func arm() throws {
    armedAt = nil
    heardAt = nil
    readAt = nil
    try read()
    armedAt = Clock.monotonicNanos()
  }

  /// Reads what has been captured.
  public func read() throws {
    guard let pcm else { return }
    while true {
      // Frames captured and not yet read, the ones in this read included:
      // sample i of the read was captured (delay - i) frames ago.
      var delay: snd_pcm_sframes_t = 0
      if snd_pcm_delay(pcm, &delay) < 0 { delay = 0 }
      let now = Clock.monotonicNanos()
      let n = chunk.withUnsafeMutableBufferPointer {
        snd_pcm_readi(pcm, $0.baseAddress, snd_pcm_uframes_t($0.count))
      }
      if n == -Int(EAGAIN) { return }
      if n < 0 {
        let r = snd_pcm_recover(pcm, Int32(n), 1)
        if r < 0 { throw AudioDeviceError(device: device, action: "record from", code: r) }
        overruns += 1
        snd_pcm_start(pcm)
        continue
      }
      if n == 0 { return }
      framesRead += n
      guard let armed = armedAt, heardAt == nil else { continue }
      // The first loud sample captured after `arm()` (one before it is the
      // tail of an earlier sound still on its way through the server).
      for i in 0..<n where abs(Int(chunk[i])) >= 328 {
        // At least the samples after it in this read came later (a
        // plugin may report less delay than it hands over).
        let ago = UInt64(max(delay - i, n - i)) * 1_000_000_000 / UInt64(rate)
        let at = now > ago ? now - ago : 0
        if at >= armed {
          heardAt = at
          readAt = now
          break
        }
      }
    }
  }
}

/// Zeros played on an output, so a sound server's sink stays awake at a
/// low latency: an idle PulseAudio null sink runs with ~2 s of latency and
/// a new stream is heard only after it; PipeWire suspends an idle sink.
/// Not for a PCM on a sound card (`isOnSoundCard`): there the zeros would
/// hold the substream a monitor hears (snd-aloop) or the only one there is.
public final class SilenceStream {
  /// Whether playback on `device` goes straight to a kernel sound card
  /// (`hw:`, or `plughw:` and other plugins over one) rather than to a
  /// sound server, whose PCMs belong to no card. False when it does not
  /// open (the caller's own open then says why).
  public static func isOnSoundCard(_ device: String) -> Bool {
    var handle: OpaquePointer?
    let err = LibraryThreads.withSignalsBlocked {
      snd_pcm_open(&handle, device, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK)
    }
    guard err == 0, let handle else { return false }
    defer { snd_pcm_close(handle) }
    var info: OpaquePointer?
    guard snd_pcm_info_malloc(&info) == 0, let info else { return false }
    defer { snd_pcm_info_free(info) }
    return snd_pcm_info(handle, info) == 0 && snd_pcm_info_get_card(info) >= 0
  }

  private let output: PCMOutput
  private let zeros = [Int16](repeating: 0, count: 4800)

  public init(device: String, bufferMicros: Int = 20_000) throws {
    output = try LibraryThreads.withSignalsBlocked {
      try PCMOutput(devices: [device], channels: 1, rate: 48_000, bufferMicros: bufferMicros)
    }
    try fill()
  }

  public func pollDescriptors() -> [pollfd] { output.pollDescriptors() }

  /// Tops the buffer up with zeros.
  public func fill() throws {
    while true {
      let n = try zeros.withUnsafeBufferPointer {
        try output.write($0.baseAddress!, frames: $0.count)
      }
      if n == 0 { return }
    }
  }

  public func stop() { output.close() }
}
