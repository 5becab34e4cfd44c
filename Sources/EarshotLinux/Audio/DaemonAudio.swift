import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// The ALSA alert player as the daemon's `AlertOutput`: the PCM's poll
/// descriptors join the daemon's event loop while the alert plays.
public final class ALSAAlertOutput: AlertOutput {
  public let player: AlertPlayer
  public let sound: AlertSound
  public let ramp: GainRamp?
  public var onFailure: ((String) -> Void)?
  /// Notes that are not failures (a fallback device was used).
  let log: (String) -> Void
  /// The loop whose thread drives the player.
  private let loop: EventLoop
  private var watched: [pollfd] = []

  public init(
    player: AlertPlayer, sound: AlertSound, ramp: GainRamp?, loop: EventLoop,
    log: @escaping (String) -> Void = { _ in }
  ) {
    self.player = player
    self.sound = sound
    self.ramp = ramp
    self.loop = loop
    self.log = log
  }

  /// Starts the loop of the alert from its beginning; a start while it
  /// plays changes nothing (find-phone does not stack alerts).
  public func startAlert() throws {
    if player.isPlaying { return }
    try player.start(sound: sound, ramp: ramp)
    for skipped in player.skipped { log("\(skipped); played on the next device") }
    try watch(loop)
  }

  private func watch(_ loop: EventLoop) throws {
    watched = player.pollDescriptors()
    try loop.watch(pollDescriptors: watched) { [unowned self] fds in
      do {
        try self.player.handleReady(fds)
      } catch {
        self.deviceFailed(error, loop)
      }
    }
  }

  /// The device went away mid-alert (unplugged, its sound server gone):
  /// the alert goes on on the next device of `[audio] fallback`, or stops
  /// with the reason (find-phone then restores the volume).
  private func deviceFailed(_ error: Error, _ loop: EventLoop) {
    let failed = player.device ?? player.settings.device
    loop.unwatch(pollDescriptors: watched)
    watched = []
    do {
      let next = try player.continueOnNextDevice()
      try watch(loop)
      log("audio device '\(failed)' failed mid-alert (\(error)); the alert continues on '\(next)'")
    } catch let fallbackError {
      stopAlert()
      onFailure?(
        "audio device '\(failed)' failed mid-alert (\(error)) and no fallback could take over (\(fallbackError)); the alert has stopped"
      )
    }
  }

  /// Silent when this returns: the queued audio is dropped.
  public func stopAlert() {
    loop.unwatch(pollDescriptors: watched)
    watched = []
    player.stop()
  }
}

/// The ALSA mixer as the daemon's `VolumeControl`. Changes by anyone else
/// arrive through the loop as `onChange`; its own changes are not echoed.
public final class ALSAVolumeControl: VolumeControl {
  public let mixer: Mixer
  /// Treat the output as headphones whatever the jack says (a configured
  /// card known to be headphones, such as a Bluetooth headset's).
  public let assumeHeadphones: Bool
  public var onChange: ((VolumeSetting) -> Void)?
  /// Called if the mixer goes away (the sound server stopped).
  let log: (String) -> Void
  private let loop: EventLoop
  private var watched: [pollfd] = []
  /// The read once the mixer's events have settled (see `Mixer.recheck`).
  private var settle: EventLoop.TimerID? = nil

  /// Watches the mixer for changes on `loop` from now on.
  public init(
    mixer: Mixer, loop: EventLoop, assumeHeadphones: Bool = false,
    log: @escaping (String) -> Void = { _ in }
  ) throws {
    self.mixer = mixer
    self.loop = loop
    self.assumeHeadphones = assumeHeadphones
    self.log = log
    mixer.remember(mixer.state())
    watched = mixer.pollDescriptors()
    try loop.watch(pollDescriptors: watched) { [unowned self] fds in
      do {
        if let s = try self.mixer.handleReady(fds) {
          self.onChange?(VolumeSetting(level: s.volume, muted: s.muted))
        }
        // Read again 150 ms after the last event (see `Mixer.recheck`).
        if let settle = self.settle { self.loop.cancel(settle) }
        self.settle = self.loop.after(seconds: 0.15) { [weak self] in
          guard let self else { return }
          self.settle = nil
          if let s = self.mixer.recheck() {
            self.onChange?(VolumeSetting(level: s.volume, muted: s.muted))
          }
        }
      } catch {
        self.log("\(error); volume changes are no longer watched")
        self.loop.unwatch(pollDescriptors: self.watched)
        self.watched = []
      }
    }
  }

  public func currentVolume() throws -> VolumeSetting {
    let s = mixer.state()
    return VolumeSetting(level: s.volume, muted: s.muted)
  }

  /// Sets exactly `setting`: a muted setting is muted first, so restoring
  /// a muted state never lets the new level through for an instant.
  public func setVolume(_ setting: VolumeSetting) throws {
    if setting.muted && mixer.canMute {
      _ = try mixer.setMuted(true)
      try mixer.setVolume(setting.level, unmute: false)
    } else {
      try mixer.setVolume(setting.level)
    }
  }

  public func outputIsHeadphones() -> Bool {
    assumeHeadphones || mixer.headphoneJackPlugged() == true
  }
}

public struct AudioSetupError: Error, CustomStringConvertible {
  public let description: String
  public init(_ description: String) { self.description = description }
}

/// Builds the daemon's audio from the config's `[audio]` and
/// `[find-phone] sound`.
public enum DaemonAudio {
  /// A sound that cannot be found is an error (the config names it); a
  /// mixer that cannot be opened is not: the agent runs without volume
  /// control and `log` says why.
  public static func make(
    _ audio: AudioConfig, findPhoneSound: String?, library: SoundLibrary = .standard(),
    loop: EventLoop, log: @escaping (String) -> Void
  ) throws -> (alert: ALSAAlertOutput, volume: ALSAVolumeControl?) {
    let name = findPhoneSound ?? audio.sound
    let sound: AlertSound
    do {
      sound = try library.resolve(name, frequency: audio.frequency)
    } catch {
      throw AudioSetupError("[audio] sound: \(error)")
    }
    let player = AlertPlayer(
      settings: .init(device: audio.device, fallbacks: audio.fallback))
    let alert = ALSAAlertOutput(
      player: player, sound: sound, ramp: audio.ramp > 0 ? GainRamp(seconds: audio.ramp) : nil,
      loop: loop, log: log)
    var volume: ALSAVolumeControl? = nil
    do {
      volume = try ALSAVolumeControl(
        mixer: try Mixer(card: audio.mixerCard, control: audio.mixerControl), loop: loop, log: log)
    } catch {
      log("no volume control: \(error)")
    }
    return (alert, volume)
  }
}
