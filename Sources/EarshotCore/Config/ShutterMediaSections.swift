/// The `[shutter]` and `[media]` key tables. Validation lives in
/// ShutterConfig.set and MediaConfig.set (also used on their own by
/// tests); here each key gets its help text and printed default.
extension Config {
  static func adopt<S>(
    _ set: (inout S, String, String) throws -> Void, _ s: inout S, _ key: String, _ v: String
  )
    throws
  {
    do {
      try set(&s, key, v)
    } catch let e as SettingsError {
      throw ConfigValueError(e.description)
    }
  }

  static func shutterKey(
    _ name: String, _ help: String, show: @escaping @Sendable (ShutterConfig) -> String
  )
    -> ConfigKey<ShutterConfig>
  {
    .init(name, help, set: { s, v in try adopt({ try $0.set($1, $2) }, &s, name, v) }, show: show)
  }

  static func mediaKey(
    _ name: String, _ help: String, show: @escaping @Sendable (MediaConfig) -> String
  )
    -> ConfigKey<MediaConfig>
  {
    .init(name, help, set: { s, v in try adopt({ try $0.set($1, $2) }, &s, name, v) }, show: show)
  }

  /// A word list written back so that ShellWords reads the same words.
  static func shellQuoted(_ words: [String]) -> String {
    words.map { w in
      let plain =
        !w.isEmpty
        && w.unicodeScalars.allSatisfy {
          $0.properties.isAlphabetic || ("0"..."9").contains($0)
            || "-_./%=:,+@".unicodeScalars.contains($0)
        }
      return plain ? w : "'" + w.replacingAll("'", with: "'\\''") + "'"
    }.joined(separator: " ")
  }

  static let shutterAndMediaSections: [SectionTable] = [
    .make(
      "shutter", "The remote shutter: a device's button takes a photo with the laptop's camera.",
      [
        shutterKey("device", "V4L2 camera device.", show: { $0.device }),
        shutterKey(
          "directory", "Where photos go; empty = $XDG_PICTURES_DIR/Earshot or ~/Pictures/Earshot.",
          show: { $0.directory ?? "" }),
        shutterKey(
          "capture_command",
          "Take photos with this command instead (split like a shell, run without one); %f or the last argument is the photo's path, also in EARSHOT_PHOTO. Empty = Earshot's own V4L2 capture.",
          show: { $0.captureCommand.map(shellQuoted) ?? "" }),
        shutterKey(
          "resolution",
          "Frame size to ask the camera for, WIDTHxHEIGHT; empty = the camera's current.",
          show: { s in s.width.map { "\($0)x\(s.height ?? 0)" } ?? "" }),
        shutterKey(
          "warmup_frames", "Frames let go by before the one kept (exposure settles).",
          show: { String($0.warmupFrames) }),
        shutterKey(
          "timeout", "Seconds a capture may take before it is photoFailed.",
          show: { ConfigValue.show($0.timeout) }),
      ], initial: ShutterConfig(), get: { $0.shutter }, put: { $0.shutter = $1 }),
    .make(
      "media", "Play media by title: the library and the player.",
      [
        mediaKey("library", "Folder of audio files, searched recursively.", show: { $0.library }),
        mediaKey(
          "player",
          "MPRIS player to forward to (org.mpris.MediaPlayer2.NAME); empty = play through ALSA.",
          show: { $0.player ?? "" }),
        mediaKey(
          "timeout", "Seconds from a request to its completion at the latest.",
          show: { ConfigValue.show($0.timeout) }),
        mediaKey("device", "ALSA PCM the built-in player uses.", show: { $0.device }),
      ], initial: MediaConfig(), get: { $0.media }, put: { $0.media = $1 }),
  ]
}
