#if canImport(Glibc)
  import Glibc
#endif

/// Where the control socket lives when `--socket` is not given: the system
/// service's path for root, the user's runtime directory otherwise.
public enum SocketPath {
  public static let system = "/run/earshot/control.sock"

  public static func defaultPath(environment: [String: String] = currentEnvironment()) -> String {
    if getuid() == 0 { return system }
    if let dir = environment["XDG_RUNTIME_DIR"], !dir.isEmpty { return dir + "/earshot.sock" }
    return "/run/user/\(getuid())/earshot.sock"
  }

  public static func currentEnvironment() -> [String: String] {
    var out: [String: String] = [:]
    for key in ["XDG_RUNTIME_DIR", "XDG_STATE_HOME", "HOME"] {
      if let v = getenv(key) { out[key] = String(cString: v) }
    }
    return out
  }

  /// Where find-phone keeps the user's volume while it rings, so that it
  /// survives a crash (and a reboot: alsactl would otherwise store the
  /// raised level).
  public static func defaultStateDirectory(environment: [String: String] = currentEnvironment())
    -> String
  {
    if getuid() == 0 { return "/var/lib/earshot" }
    if let dir = environment["XDG_STATE_HOME"], !dir.isEmpty { return dir + "/earshot" }
    if let home = environment["HOME"], !home.isEmpty { return home + "/.local/state/earshot" }
    return "/tmp/earshot-\(getuid())"
  }
}
