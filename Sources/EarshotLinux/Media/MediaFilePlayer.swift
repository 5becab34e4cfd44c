import CALSA
import CSndFile
import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// Plays one audio file (anything libsndfile decodes) through an ALSA PCM,
/// driven by the event loop: the PCM's poll descriptors are watched and
/// the file is decoded a period at a time when the device has room; no
/// thread, no sleeping. Reports `onStarted` once, when the first audio has
/// been written to the device; `onEnded` when the file has played out;
/// `onFailed` with a response code and a reason.
///
/// A stand-in until the audio branch's player is on main: it plays files
/// once (not looped alerts) and can pause and resume where it was.
public final class MediaFilePlayer {
  public let device: String
  private let loop: EventLoop
  private var pcm: OpaquePointer?
  private var file: OpaquePointer?
  private var channels = 2
  private var rate = 48_000
  private var periodFrames = 1024
  private var buffer: [Int16] = []
  private var bufferOffset = 0  // frames already written from `buffer`
  private var bufferFrames = 0  // frames decoded into `buffer`
  private var framesWritten: Int64 = 0
  private var watched: [pollfd] = []
  private var endTimer: EventLoop.TimerID?
  private var started = false
  private var atEnd = false
  public private(set) var paused = false

  public var onStarted: () -> Void = {}
  public var onEnded: () -> Void = {}
  public var onFailed: (MediaResponse, String) -> Void = { _, _ in }

  public init(device: String = "default", loop: EventLoop) {
    self.device = device
    self.loop = loop
  }

  deinit { stop() }

  public var isActive: Bool { pcm != nil }

  /// Opens the file and the device and writes the first audio. Errors are
  /// reported through `onFailed` (never thrown), after this returns.
  public func play(path: String) {
    stop()
    var info = SF_INFO()
    guard let f = sf_open(path, Int32(SFM_READ), &info) else {
      let why = String(cString: sf_strerror(nil))
      let code: MediaResponse = access(path, R_OK) == 0 ? .unsupportedMediaType : .failure
      fail(code, "cannot decode \(path): \(why)")
      return
    }
    file = f
    channels = Int(info.channels)
    rate = Int(info.samplerate)
    guard channels >= 1, channels <= 8, rate >= 4000 else {
      fail(.unsupportedMediaType, "\(path): \(channels) channels at \(rate) Hz is not playable")
      return
    }
    var handle: OpaquePointer?
    var err = snd_pcm_open(&handle, device, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK)
    guard err == 0, let handle else {
      fail(
        err == -EBUSY ? .busy : .failure,
        "ALSA device '\(device)': \(String(cString: snd_strerror(err)))"
          + (err == -EBUSY
            ? " (another program holds it)" : "; set [media] device (aplay -L lists them)"))
      return
    }
    pcm = handle
    err = configure(handle)
    guard err == 0 else {
      fail(
        .failure,
        "ALSA device '\(device)' refuses \(channels) ch at \(rate) Hz: \(String(cString: snd_strerror(err)))"
      )
      return
    }
    buffer = [Int16](repeating: 0, count: periodFrames * channels)
    framesWritten = 0
    atEnd = false
    started = false
    paused = false
    watchDevice()
    pump()
  }

  /// Silent at once (what is queued is dropped); remembers the position.
  public func pause() {
    guard let pcm, !paused else { return }
    var delay: snd_pcm_sframes_t = 0
    if snd_pcm_delay(pcm, &delay) < 0 { delay = 0 }
    snd_pcm_drop(pcm)
    unwatchDevice()
    if let t = endTimer {
      loop.cancel(t)
      endTimer = nil
    }
    // Go back to the first frame not yet heard.
    let position = max(0, framesWritten - Int64(delay))
    if let file { sf_seek(file, sf_count_t(position), SEEK_SET) }
    framesWritten = position
    bufferFrames = 0
    bufferOffset = 0
    atEnd = false
    paused = true
  }

  public func resume() {
    guard let pcm, paused else { return }
    paused = false
    snd_pcm_prepare(pcm)
    watchDevice()
    pump()
  }

  /// Silent at once; releases the device and the file.
  public func stop() {
    unwatchDevice()
    if let t = endTimer {
      loop.cancel(t)
      endTimer = nil
    }
    if let pcm {
      snd_pcm_drop(pcm)
      snd_pcm_close(pcm)
      self.pcm = nil
    }
    if let file {
      sf_close(file)
      self.file = nil
    }
  }

  private func configure(_ pcm: OpaquePointer) -> Int32 {
    var e = snd_pcm_set_params(
      pcm, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, UInt32(channels), UInt32(rate),
      1, 100_000)
    if e < 0 { return e }
    var bufferSize: snd_pcm_uframes_t = 0
    var periodSize: snd_pcm_uframes_t = 0
    e = snd_pcm_get_params(pcm, &bufferSize, &periodSize)
    if e < 0 { return e }
    periodFrames = max(64, Int(periodSize))
    // Start playing as soon as one period is queued (a short file must
    // not wait for a full buffer).
    var sw: OpaquePointer?
    e = snd_pcm_sw_params_malloc(&sw)
    if e < 0 { return e }
    defer { snd_pcm_sw_params_free(sw) }
    e = snd_pcm_sw_params_current(pcm, sw)
    if e < 0 { return e }
    e = snd_pcm_sw_params_set_start_threshold(pcm, sw, periodSize)
    if e < 0 { return e }
    return snd_pcm_sw_params(pcm, sw)
  }

  private func watchDevice() {
    guard let pcm else { return }
    let n = snd_pcm_poll_descriptors_count(pcm)
    guard n > 0 else { return }
    var fds = [pollfd](repeating: pollfd(), count: Int(n))
    let got = fds.withUnsafeMutableBufferPointer {
      snd_pcm_poll_descriptors(pcm, $0.baseAddress, UInt32(n))
    }
    watched = Array(fds.prefix(Int(max(got, 0))))
    for (i, fd) in watched.enumerated() {
      do {
        try loop.watch(fd.fd, events: UInt32(UInt16(bitPattern: fd.events))) { [weak self] bits in
          self?.ready(index: i, bits: bits)
        }
      } catch {
        fail(.failure, "cannot watch ALSA device '\(device)': \(error)")
        return
      }
    }
  }

  private func unwatchDevice() {
    for fd in watched { loop.unwatch(fd.fd) }
    watched = []
  }

  private func ready(index: Int, bits: UInt32) {
    guard let pcm, index < watched.count else { return }
    var set = watched
    set[index].revents = Int16(truncatingIfNeeded: bits)
    var revents: UInt16 = 0
    let err = set.withUnsafeMutableBufferPointer {
      snd_pcm_poll_descriptors_revents(pcm, $0.baseAddress, UInt32($0.count), &revents)
    }
    if err < 0 || revents & UInt16(POLLOUT | POLLERR) != 0 { pump() }
  }

  /// Decodes and writes until the device is full or the file has ended.
  private func pump() {
    guard let pcm, let file, !paused else { return }
    for _ in 0..<64 {
      if bufferOffset == bufferFrames {
        if atEnd { return }
        let n = buffer.withUnsafeMutableBufferPointer {
          sf_readf_short(file, $0.baseAddress, sf_count_t(periodFrames))
        }
        if n <= 0 {
          finishing(pcm)
          return
        }
        bufferFrames = Int(n)
        bufferOffset = 0
      }
      let w = buffer.withUnsafeBufferPointer {
        snd_pcm_writei(
          pcm, $0.baseAddress! + bufferOffset * channels,
          snd_pcm_uframes_t(bufferFrames - bufferOffset))
      }
      if w == -Int(EAGAIN) { return }
      if w < 0 {
        // EPIPE underrun, ESTRPIPE suspend: recover and go on. Else the
        // device is gone.
        let r = snd_pcm_recover(pcm, Int32(w), 1)
        if r < 0 {
          fail(.failure, "ALSA device '\(device)' failed: \(String(cString: snd_strerror(r)))")
          return
        }
        continue
      }
      bufferOffset += w
      framesWritten += Int64(w)
      if !started && w > 0 {
        started = true
        onStarted()
        guard self.pcm != nil, !paused else { return }  // the callback may stop or pause
      }
    }
  }

  /// The whole file is queued: stop watching, and report the end when what
  /// is queued has played.
  private func finishing(_ pcm: OpaquePointer) {
    atEnd = true
    unwatchDevice()
    if !started {
      fail(.unsupportedMediaType, "the file holds no audio")
      return
    }
    if snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED { snd_pcm_start(pcm) }
    var delay: snd_pcm_sframes_t = 0
    if snd_pcm_delay(pcm, &delay) < 0 { delay = 0 }
    endTimer = loop.after(seconds: Double(max(0, delay)) / Double(rate) + 0.05) { [weak self] in
      guard let self else { return }
      self.endTimer = nil
      self.stop()
      self.onEnded()
    }
  }

  private func fail(_ code: MediaResponse, _ why: String) {
    stop()
    onFailed(code, why)
  }
}
