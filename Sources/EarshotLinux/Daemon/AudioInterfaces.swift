import EarshotCore

/// Plays the find-phone alert in a loop. The ALSA player (the audio work)
/// implements it; the daemon only starts and stops it.
public protocol AlertOutput: AnyObject {
  /// Starts looping the alert; throws when it cannot play at all.
  func startAlert() throws
  /// Stops the alert and returns once the output is silent (PCM dropped).
  func stopAlert()
  /// Set by the daemon: called from the loop if the alert dies while playing.
  var onFailure: ((String) -> Void)? { get set }
}

/// The output's volume and mute. The ALSA mixer (the audio work) implements
/// it; find-phone saves, raises and restores through it, and the control
/// socket's volume commands use it.
public protocol VolumeControl: AnyObject {
  func currentVolume() throws -> VolumeSetting
  func setVolume(_ setting: VolumeSetting) throws
  /// Whether the output is headphones (the mixer's headphone jack control
  /// or a configured card name): find-phone caps its level then.
  func outputIsHeadphones() -> Bool
  /// Set by the daemon: called from the loop when someone else changes the
  /// volume (for `volume` subscribers).
  var onChange: ((VolumeSetting) -> Void)? { get set }
}
