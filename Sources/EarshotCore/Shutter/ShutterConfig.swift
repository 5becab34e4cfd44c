/// The `[shutter]` section of the config file.
public struct ShutterConfig: Sendable, Equatable, ConfigSection {
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

  public static let section = "shutter"
  public static let summary =
    "The remote shutter: a device's button takes a photo with the laptop's camera."
  public static let keys: [ConfigKey<ShutterConfig>] = [
    .text("device", "V4L2 camera device.", \.device, example: "/dev/video0"),
    .optionalText(
      "directory", "Where photos go; empty = $XDG_PICTURES_DIR/Earshot or ~/Pictures/Earshot.",
      \.directory),
    .init(
      "capture_command",
      "Take photos with this command instead (split like a shell, run without one); %f or the last argument is the photo's path, also in EARSHOT_PHOTO. Empty = Earshot's own V4L2 capture.",
      set: { s, v in s.captureCommand = v.isEmpty ? nil : try ConfigValue.command(v) },
      show: { $0.captureCommand.map(ShellWords.join) ?? "" }),
    .init(
      "resolution", "Frame size to ask the camera for, WIDTHxHEIGHT; empty = the camera's current.",
      set: { s, v in
        guard !v.isEmpty else {
          (s.width, s.height) = (nil, nil)
          return
        }
        guard let (w, h) = parseResolution(v) else {
          throw ConfigValueError(
            "expected WIDTHxHEIGHT like 1280x720 (16 to 16384 each), or empty, got '\(v)'")
        }
        (s.width, s.height) = (w, h)
      }, show: { s in s.width.map { "\($0)x\(s.height ?? 0)" } ?? "" }),
    .integer(
      "warmup_frames", "Frames let go by before the one kept (exposure settles).",
      \.warmupFrames, in: 0...100),
    .seconds(
      "timeout", "Seconds a capture may take before it is photoFailed.", \.timeout, upTo: 600),
  ]

  /// "640x480" → (640, 480).
  public static func parseResolution(_ text: String) -> (Int, Int)? {
    let parts = text.lowercased().split(separator: "x")
    guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]),
      (16...16384).contains(w), (16...16384).contains(h)
    else { return nil }
    return (w, h)
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
