import CINIH

#if canImport(Glibc)
  import Glibc
#endif

/// The key/value pairs of one INI file, by section, in file order, read
/// with libinih. Small on purpose: the `[shutter]` and `[media]` settings
/// validate their own sections (EarshotCore's ShutterSettings and
/// MediaSettings).
public struct ConfigSections {
  public let path: String?
  private var sections: [String: [(key: String, value: String)]] = [:]

  /// No file: every section empty, so every setting has its default.
  public init() { path = nil }

  public init(path: String) throws {
    self.path = path
    guard let f = fopen(path, "r") else {
      throw SystemError(errno: errno, "cannot read config file \(path)")
    }
    defer { fclose(f) }
    let box = Box()
    let line = withExtendedLifetime(box) {
      ini_parse_file(
        f,
        { user, section, name, value in
          let b = Unmanaged<Box>.fromOpaque(user!).takeUnretainedValue()
          b.entries.append(
            (String(cString: section!), String(cString: name!), String(cString: value!)))
          return 1
        }, Unmanaged.passUnretained(box).toOpaque())
    }
    guard line == 0 else {
      throw ConfigFileError(
        description: "\(path):\(line): cannot read this line; write 'key = value' or '[section]'")
    }
    for (section, key, value) in box.entries {
      sections[section, default: []].append((key, value))
    }
  }

  public func section(_ name: String) -> [(key: String, value: String)] { sections[name] ?? [] }

  private final class Box {
    var entries: [(String, String, String)] = []
  }

  /// `--config FILE` if given; else the user's file, else the system's,
  /// whichever exists; else no file (defaults).
  public static func load(explicit: String?) throws -> ConfigSections {
    if let explicit { return try ConfigSections(path: explicit) }
    for candidate in defaultPaths() where access(candidate, R_OK) == 0 {
      return try ConfigSections(path: candidate)
    }
    return ConfigSections()
  }

  public static func defaultPaths() -> [String] {
    var paths: [String] = []
    if let x = Environment.get("XDG_CONFIG_HOME"), !x.isEmpty {
      paths.append(x + "/earshot/earshot.conf")
    } else if let h = Environment.get("HOME"), !h.isEmpty {
      paths.append(h + "/.config/earshot/earshot.conf")
    }
    paths.append("/etc/earshot/earshot.conf")
    return paths
  }
}

public struct ConfigFileError: Error, CustomStringConvertible {
  public let description: String
}

/// Environment lookups and `~` expansion.
public enum Environment {
  public static func get(_ name: String) -> String? {
    getenv(name).map { String(cString: $0) }
  }

  public static var home: String {
    if let h = get("HOME"), !h.isEmpty { return h }
    if let pw = getpwuid(getuid()), let dir = pw.pointee.pw_dir { return String(cString: dir) }
    return "/"
  }

  /// "~" and "~/x" become the home folder; "$HOME/x" too (user-dirs.dirs
  /// writes paths that way).
  public static func expand(_ path: String) -> String {
    if path == "~" || path == "$HOME" { return home }
    if path.hasPrefix("~/") { return home + path.dropFirst(1) }
    if path.hasPrefix("$HOME/") { return home + path.dropFirst(5) }
    return path
  }
}
