/// The `[shutter]` section of the config file.
public struct ShutterConfig: Sendable, Equatable {
  /// The V4L2 capture device.
  public var device = "/dev/video0"
  /// Where photos go; `nil` means the shell's default
  /// ($XDG_PICTURES_DIR/Earshot or ~/Pictures/Earshot).
  public var directory: String? = nil
  /// Run this instead of Earshot's own V4L2 capture (split like a shell,
  /// run without one). `%f` in a word is replaced by the photo's path;
  /// without `%f` the path is added as the last argument. The path is
  /// also in the environment as EARSHOT_PHOTO.
  public var captureCommand: [String]? = nil
  /// Frame size to ask the camera for; `nil` keeps the camera's current
  /// size. The driver may pick the nearest it supports.
  public var width: Int? = nil
  public var height: Int? = nil
  /// Frames to let go by before the one kept (exposure settling).
  public var warmupFrames = 3
  /// Seconds a capture may take before it counts as failed.
  public var timeout = 10.0

  public init() {}

  public static let keys = [
    "device", "directory", "capture_command", "resolution", "warmup_frames", "timeout",
  ]

  /// "640x480" → (640, 480).
  public static func parseResolution(_ text: String) -> (Int, Int)? {
    let parts = text.lowercased().split(separator: "x")
    guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]),
      (16...16384).contains(w), (16...16384).contains(h)
    else { return nil }
    return (w, h)
  }

  /// Reads the section's key/value pairs; an error names the key and says
  /// what is expected.
  public init(values: [(key: String, value: String)]) throws {
    for (key, value) in values { try set(key, value) }
  }

  /// Sets one key from its text; the error says what to write instead.
  public mutating func set(_ key: String, _ value: String) throws {
    switch key {
    case "device":
      guard !value.isEmpty else {
        throw SettingsError("[shutter] device is empty; e.g. /dev/video0")
      }
      device = value
    case "directory":
      directory = value.isEmpty ? nil : value
    case "capture_command":
      let words: [String]
      do {
        words = try ShellWords.split(value)
      } catch {
        throw SettingsError("[shutter] capture_command: \(error)")
      }
      captureCommand = words.isEmpty ? nil : words
    case "resolution" where value.isEmpty:
      width = nil
      height = nil
    case "resolution":
      guard let (w, h) = ShutterConfig.parseResolution(value) else {
        throw SettingsError(
          "[shutter] resolution must be WIDTHxHEIGHT like 1280x720, got '\(value)'")
      }
      width = w
      height = h
    case "warmup_frames":
      guard let n = Int(value), (0...100).contains(n) else {
        throw SettingsError(
          "[shutter] warmup_frames must be a whole number 0…100, got '\(value)'")
      }
      warmupFrames = n
    case "timeout":
      guard let t = Double(value), t.isFinite, t > 0, t <= 600 else {
        throw SettingsError("[shutter] timeout must be seconds (0 < t ≤ 600), got '\(value)'")
      }
      timeout = t
    default:
      throw SettingsError(
        "unknown key '\(key)' in [shutter]; known keys: \(ShutterConfig.keys.joined(separator: ", "))"
      )
    }
  }

  /// The capture command for one photo: `%f` replaced, or the path added.
  public func commandLine(for path: String) -> [String]? {
    guard let words = captureCommand else { return nil }
    if words.contains(where: { $0.contains("%f") }) {
      return words.map { $0.replacingAll("%f", with: path) }
    }
    return words + [path]
  }
}

/// A config value that cannot be used, with what to write instead.
public struct SettingsError: Error, Equatable, CustomStringConvertible {
  public let description: String
  public init(_ description: String) { self.description = description }
}

extension String {
  func replacingAll(_ target: String, with replacement: String) -> String {
    guard !target.isEmpty else { return self }
    var out = ""
    var rest = self[...]
    while let r = rest.range(of: target) {
      out += rest[..<r.lowerBound]
      out += replacement
      rest = rest[r.upperBound...]
    }
    return out + rest
  }
}

extension Substring {
  fileprivate func range(of target: String) -> Range<Index>? {
    var i = startIndex
    while i < endIndex {
      if self[i...].hasPrefix(target) {
        return i..<index(i, offsetBy: target.count)
      }
      i = index(after: i)
    }
    return nil
  }
}
