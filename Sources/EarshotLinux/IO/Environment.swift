#if canImport(Glibc)
  import Glibc
#endif

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
