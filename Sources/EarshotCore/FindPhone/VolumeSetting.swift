/// The output's volume and mute state, as find-phone saves and restores it.
/// `level` is the mixer's range mapped to 0...1.
public struct VolumeSetting: Equatable, Hashable, Sendable, CustomStringConvertible {
  public var level: Double
  public var muted: Bool

  public init(level: Double, muted: Bool) {
    self.level = min(1, max(0, level.isFinite ? level : 0))
    self.muted = muted
  }

  public var description: String {
    "\(JSONLine.format(level, decimals: 3))\(muted ? " muted" : "")"
  }
}

/// The user's volume saved before find-phone raises it, as the shell writes
/// it to the state file. If the agent dies mid-alert (kill -9), the file is
/// still there at the next start, which means: restore it, then delete it.
///
/// One line of text, so a person can read and fix it:
/// `earshot-saved-volume 1 level=0.420000 muted=0`
public enum SavedVolume {
  public static let magic = "earshot-saved-volume"
  public static let version = 1

  public static func encode(_ v: VolumeSetting) -> String {
    "\(magic) \(version) level=\(JSONLine.format(v.level, decimals: 6)) muted=\(v.muted ? 1 : 0)\n"
  }

  /// Decodes the file's text; nil when it is not a saved volume (a stray or
  /// truncated file must not set the mixer to garbage).
  public static func decode(_ text: String) -> VolumeSetting? {
    let words = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
    guard words.count == 4, words[0] == magic, words[1] == "\(version)" else { return nil }
    guard words[2].hasPrefix("level="), words[3].hasPrefix("muted=") else { return nil }
    guard let level = Double(words[2].dropFirst(6)), level.isFinite, (0...1).contains(level)
    else { return nil }
    let muted: Bool
    switch words[3].dropFirst(6) {
    case "0": muted = false
    case "1": muted = true
    default: return nil
    }
    return VolumeSetting(level: level, muted: muted)
  }
}
