/// The one completion every play request gets. The numbers are the wire
/// values (BLE link, control socket); the names are what the CLI prints.
public enum MediaResponse: Int, Sendable, CaseIterable {
  /// Playback really started: the first audio was written to the device
  /// (or the MPRIS player accepted the file).
  case success = 0
  /// No title in the library matches.
  case notFound = 1
  /// The file is there but cannot be decoded by the player in use.
  case unsupportedMediaType = 2
  /// The configured MPRIS player is not on the bus.
  case playerNotRunning = 3
  /// Another request is still starting, find-phone is ringing, or the
  /// audio device is held by another program.
  case busy = 4
  /// The player did not start within `[media] timeout`.
  case timeout = 5
  /// Anything else (I/O error, the device vanished, stopped before it
  /// started); the log says what.
  case failure = 6

  public var name: String {
    switch self {
    case .success: "success"
    case .notFound: "notFound"
    case .unsupportedMediaType: "unsupportedMediaType"
    case .playerNotRunning: "playerNotRunning"
    case .busy: "busy"
    case .timeout: "timeout"
    case .failure: "failure"
    }
  }
}
