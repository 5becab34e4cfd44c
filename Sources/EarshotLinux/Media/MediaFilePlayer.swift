import CSndFile
import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// Plays one audio file (anything libsndfile decodes) once, through the
/// same ALSA stream as the alert (`PCMOutput`), driven by the event loop:
/// the PCM's poll descriptors are watched and the file is decoded a period
/// at a time when the device has room; no thread, no sleeping. Reports
/// `onStarted` once, when the first audio has been written to the device;
/// `onEnded` when the file has played out; `onFailed` with a response code
/// and a reason. Unlike the alert it can pause and resume where it was.
public final class MediaFilePlayer {
  public let device: String
  private let loop: EventLoop
  private var output: PCMOutput?
  private var file: OpaquePointer?
  private var channels = 2
  private var rate = 48_000
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

  public var isActive: Bool { output != nil }

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
    do {
      // A larger buffer than the alert's: music is not latency-critical.
      output = try PCMOutput(
        devices: [device], channels: channels, rate: rate, bufferMicros: 100_000)
    } catch let e as AudioOpenFailure {
      let busy = e.attempts.contains { $0.code == -EBUSY }
      fail(busy ? .busy : .failure, "\(e); [media] device sets the device")
      return
    } catch {
      fail(.failure, "\(error)")
      return
    }
    buffer = [Int16](repeating: 0, count: max(64, output!.periodFrames) * channels)
    framesWritten = 0
    atEnd = false
    started = false
    paused = false
    watchDevice()
    pump()
  }

  /// Silent at once (what is queued is dropped); remembers the position.
  public func pause() {
    guard let output, !paused else { return }
    let delay = output.delayFrames
    output.drop()
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
    guard let output, paused else { return }
    paused = false
    output.prepare()
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
    output?.close()
    output = nil
    if let file {
      sf_close(file)
      self.file = nil
    }
  }

  private func watchDevice() {
    guard let output else { return }
    watched = output.pollDescriptors()
    do {
      try loop.watch(pollDescriptors: watched) { [weak self] fds in
        guard let self, self.output?.wantsData(fds) == true else { return }
        self.pump()
      }
    } catch {
      fail(.failure, "cannot watch ALSA device '\(device)': \(error)")
    }
  }

  private func unwatchDevice() {
    loop.unwatch(pollDescriptors: watched)
    watched = []
  }

  /// Decodes and writes until the device is full or the file has ended.
  private func pump() {
    guard let output, let file, !paused else { return }
    let periodFrames = buffer.count / channels
    for _ in 0..<64 {
      if bufferOffset == bufferFrames {
        if atEnd { return }
        let n = buffer.withUnsafeMutableBufferPointer {
          sf_readf_short(file, $0.baseAddress, sf_count_t(periodFrames))
        }
        if n <= 0 {
          finishing(output)
          return
        }
        bufferFrames = Int(n)
        bufferOffset = 0
      }
      let w: Int
      do {
        w = try buffer.withUnsafeBufferPointer {
          try output.write(
            $0.baseAddress! + bufferOffset * channels, frames: bufferFrames - bufferOffset)
        }
      } catch {
        fail(.failure, "\(error)")
        return
      }
      if w == 0 { return }
      bufferOffset += w
      framesWritten += Int64(w)
      if !started && w > 0 {
        started = true
        onStarted()
        guard self.output != nil, !paused else { return }  // the callback may stop or pause
      }
    }
  }

  /// The whole file is queued: stop watching, and report the end when what
  /// is queued has played.
  private func finishing(_ output: PCMOutput) {
    atEnd = true
    unwatchDevice()
    if !started {
      fail(.unsupportedMediaType, "the file holds no audio")
      return
    }
    output.startIfPrepared()
    let delay = output.delayFrames
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
