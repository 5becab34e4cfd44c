/// The `[media] section of the config file.
public struct MediaConfig: Sendable, Equatable {
  /// Folder scanned for audio files (recursively); `~` is the home folder.
  public var library = "~/Music"
  /// An MPRIS player to forward requests to
  /// (`org.mpris.MediaPlayer2.NAME`); `nil` plays through ALSA.
  public var player: String? = nil
  /// Seconds from request to completion at the latest.
  public var timeout = 5.0
  /// The ALSA device the built-in player uses.
  public var device = "default"

  public init() {}

  public static let keys = ["library", "player", "timeout", "device"]
  public static let mprisPrefix = "org.mpris.MediaPlayer2."

  public init(values: [(key: String, value: String)]) throws {
    for (key, value) in values { try set(key, value) }
  }

  /// Sets one key from its text; the error says what to write instead.
  public mutating func set(_ key: String, _ value: String) throws {
    switch key {
    case "library":
      guard !value.isEmpty else { throw SettingsError("[media] library is empty; e.g. ~/Music") }
      library = value
    case "player":
      if value.isEmpty {
        player = nil
      } else {
        let name =
          value.hasPrefix(MediaConfig.mprisPrefix) ? value : MediaConfig.mprisPrefix + value
        guard name.count > MediaConfig.mprisPrefix.count,
          name.unicodeScalars.allSatisfy({
            $0.isASCII
              && ($0.properties.isAlphabetic || ("0"..."9").contains($0)
                || "._-".unicodeScalars.contains($0))
          })
        else {
          throw SettingsError(
            "[media] player must be an MPRIS bus name like org.mpris.MediaPlayer2.vlc, got '\(value)'"
          )
        }
        player = name
      }
    case "timeout":
      guard let t = Double(value), t.isFinite, t > 0, t <= 600 else {
        throw SettingsError("[media] timeout must be seconds (0 < t ≤ 600), got '\(value)'")
      }
      timeout = t
    case "device":
      guard !value.isEmpty else { throw SettingsError("[media] device is empty; e.g. default") }
      device = value
    default:
      throw SettingsError(
        "unknown key '\(key)' in [media]; known keys: \(MediaConfig.keys.joined(separator: ", "))"
      )
    }
  }
}
