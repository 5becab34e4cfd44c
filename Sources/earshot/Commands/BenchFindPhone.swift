import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

/// Find-phone latencies through the daemon's own parts: `FindPhoneDriver`
/// (coordinator, saved-volume file, its fsync after the first sample,
/// mixer) with the ALSA
/// alert output on an `EventLoop`. A device asks to ring, the alert plays
/// for a while, then "found":
/// - request → first sample: from `submit(.deviceStart)` to the return of
///   the PCM's first write (the player times that write itself);
/// - found → silent: from `submit(.found)` to the return of the output's
///   stop (`snd_pcm_drop`: nothing more is played after it);
/// - request → audible (with a `monitor` capture PCM that hears the
///   output): from `submit(.deviceStart)` to the capture time of the first
///   sample above -40 dBFS. On a sound server zeros keep playing on the
///   device meanwhile, so an idle sink's own latency (~2 s on a PulseAudio
///   null sink) is not what is measured; on a sound card (snd-aloop) the
///   alert is alone, as the zeros would take the substream heard.
/// A first cycle, shown apart, runs before the `cycles` counted ones.
enum BenchFindPhone {
  struct Result {
    var requestToSound: [Double] = []
    var foundToSilent: [Double] = []
    var requestToAudible: [Double] = []
    var requestToHeardRead: [Double] = []
    var device = ""
    var zerosPlaying = false
    var captureOverruns = 0
    /// The first cycle, before the counted ones: request -> first sample
    /// and request -> audible (nil without a listener).
    var cold: (sound: Double, audible: Double?)? = nil
    var failure: String? = nil
  }

  /// Times the real output's start and stop for the driver.
  final class TimedAlert: AlertOutput {
    let inner: ALSAAlertOutput
    var onFailure: ((String) -> Void)?
    var firstWriteNanos: UInt64 = 0
    var stoppedNanos: UInt64 = 0

    init(_ inner: ALSAAlertOutput) {
      self.inner = inner
      inner.onFailure = { [unowned self] why in self.onFailure?(why) }
    }

    func startAlert() throws {
      let entered = Clock.monotonicNanos()
      try inner.startAlert()
      firstWriteNanos = entered + inner.player.startLatencyNanos
    }

    func stopAlert() {
      inner.stopAlert()
      stoppedNanos = Clock.monotonicNanos()
    }
  }

  static func run(device: String, mixerCard: String?, monitor: String? = nil, cycles: Int) throws
    -> Result
  {
    var result = Result()
    let loop = try EventLoop()
    var listener: CaptureListener? = nil
    var keeper: SilenceStream? = nil
    if let monitor {
      let l = try CaptureListener(device: monitor)
      try loop.watch(pollDescriptors: l.pollDescriptors()) { _ in
        do { try l.read() } catch { result.failure = "\(error)" }
      }
      listener = l
      // A sound card has no sink to keep awake: the alert alone plays there.
      if !SilenceStream.isOnSoundCard(device) {
        let k = try SilenceStream(device: device)
        try loop.watch(pollDescriptors: k.pollDescriptors()) { _ in
          do { try k.fill() } catch { result.failure = "\(error)" }
        }
        keeper = k
      }
    }
    result.zerosPlaying = keeper != nil
    defer { keeper?.stop() }
    let output = ALSAAlertOutput(
      player: AlertPlayer(settings: .init(device: device)),
      sound: .pattern(SoundPattern.named("ring")!), ramp: nil, loop: loop)
    let alert = TimedAlert(output)
    var volume: ALSAVolumeControl? = nil
    if let mixerCard {
      volume = try ALSAVolumeControl(mixer: try Mixer(card: mixerCard), loop: loop)
    }
    // On disk like the daemon's state directory (/tmp is often tmpfs,
    // where an fsync costs nothing).
    let dir = "/var/tmp/earshot-bench-\(getpid())"
    defer {
      unlink(dir + "/find-phone-volume")
      rmdir(dir)
    }
    let driver = FindPhoneDriver(
      loop: loop, settings: FindPhoneConfig(volume: 0.5), alert: alert, volume: volume,
      savedVolume: SavedVolumeFile(directory: dir))
    var logged: [String] = []
    driver.onLog = { logged.append($0) }
    let phone = DeviceID(link: "bench", name: "bench")

    func cycle(_ i: Int) {
      guard i <= cycles, result.failure == nil else {
        loop.stop()
        return
      }
      alert.firstWriteNanos = 0
      do { try listener?.arm() } catch { result.failure = "\(error)" }
      let requested = Clock.monotonicNanos()
      driver.submit(.deviceStart(phone))
      guard alert.firstWriteNanos > 0 else {
        result.failure = logged.last ?? "the alert did not start"
        loop.stop()
        return
      }
      result.requestToSound.append(Double(alert.firstWriteNanos - requested) / 1e6)
      result.device = output.player.device ?? device
      // Let it ring (the loop services the PCM) until it is heard, or
      // 0.3 s without a listener; then the user finds it.
      func findOrWait() {
        if let listener {
          try? listener.read()
          let waited = Clock.monotonicNanos() - requested
          if listener.heardAt == nil && waited < 3_000_000_000 {
            loop.after(seconds: 0.05) { findOrWait() }
            return
          }
          if let heard = listener.heardAt {
            result.requestToAudible.append((Double(heard) - Double(requested)) / 1e6)
            result.requestToHeardRead.append(
              (Double(listener.readAt ?? heard) - Double(requested)) / 1e6)
          } else if result.failure == nil {
            result.failure = "nothing heard on \(listener.device) within 3 s of the request"
          }
        }
        let found = Clock.monotonicNanos()
        driver.submit(.found)
        result.foundToSilent.append(Double(alert.stoppedNanos - found) / 1e6)
        // With a listener, the ring's tail passes through the server first.
        loop.after(seconds: listener == nil ? 0.1 : 0.5) { cycle(i + 1) }
      }
      loop.after(seconds: 0.3) { findOrWait() }
    }
    // A capture that delivers nothing yet would time its own start-up:
    // begin once it has delivered 0.3 s (or after 5 s, and say so then).
    let startBy = Clock.monotonicNanos() + 5_000_000_000
    func startWhenFlowing() {
      if let listener, listener.framesRead < listener.rate * 3 / 10,
        Clock.monotonicNanos() < startBy
      {
        loop.after(seconds: 0.05) { startWhenFlowing() }
      } else {
        cycle(0)
      }
    }
    loop.after(nanos: 0) { startWhenFlowing() }
    try loop.run()
    output.stopAlert()
    result.captureOverruns = listener?.overruns ?? 0
    // Cycle 0 runs the whole path for the first time (under emulation
    // every code path is translated then, 100+ ms): shown apart, not in
    // the figures of the cycles after it.
    if result.failure == nil, !result.requestToSound.isEmpty {
      result.cold = (
        result.requestToSound.removeFirst(),
        result.requestToAudible.isEmpty ? nil : result.requestToAudible.removeFirst()
      )
      result.foundToSilent.removeFirst()
      if !result.requestToHeardRead.isEmpty { result.requestToHeardRead.removeFirst() }
    }
    return result
  }
}
