/// The `[media]` section of the config file.
public struct MediaConfig: Sendable, Equatable, ConfigSection {
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

  public static let mprisPrefix = "org.mpris.MediaPlayer2."

  public static let section = "media"
  public static let summary = "Play media by title: the library and the player."
  public static let keys: [ConfigKey<MediaConfig>] = [
    .text("library", "Folder of audio files, searched recursively.", \.library, example: "~/Music"),
    .init(
      "player",
      "MPRIS player to forward to (org.mpris.MediaPlayer2.NAME); empty = play through ALSA.",
      set: { s, v in s.player = v.isEmpty ? nil : try mprisName(v) }, show: { $0.player ?? "" }),
    .seconds(
      "timeout", "Seconds from a request to its completion at the latest.", \.timeout, upTo: 600),
    .text("device", "ALSA PCM the built-in player uses.", \.device, example: "default"),
  ]

  /// `vlc` or `org.mpris.MediaPlayer2.vlc` -> `org.mpris.MediaPlayer2.vlc`.
  static func mprisName(_ value: String) throws -> String {
    let name = value.hasPrefix(mprisPrefix) ? value : mprisPrefix + value
    guard name.count > mprisPrefix.count,
      name.unicodeScalars.allSatisfy({
        $0.isASCII
          && ($0.properties.isAlphabetic || ("0"..."9").contains($0)
            || "._-".unicodeScalars.contains($0))
      })
    else {
      throw ConfigValueError(
        "expected an MPRIS bus name like org.mpris.MediaPlayer2.vlc (or just vlc), got '\(value)'")
    }
    return name
  }
}
