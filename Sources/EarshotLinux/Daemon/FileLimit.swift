#if canImport(Glibc)
  import Glibc
#endif

/// The process's open-file limit (RLIMIT_NOFILE). The agent serves many
/// clients; the usual soft limit of 1024 would make accept fail before
/// the client cap is reached, so the soft limit is raised to the hard one.
public enum FileLimit {
  /// Descriptors kept for everything but clients (adapter, ALSA, SQLite,
  /// MQTT, hooks' pipes, the loop's own).
  public static let reserve = 64

  /// Raises the soft limit to the hard limit; returns the soft limit now.
  @discardableResult
  public static func raiseToHard() -> Int {
    var r = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &r) == 0 else { return 1024 }
    if r.rlim_cur < r.rlim_max {
      var raised = r
      raised.rlim_cur = r.rlim_max
      if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { r = raised }
    }
    return r.rlim_cur >= UInt(Int.max) ? Int.max : Int(r.rlim_cur)
  }

  /// The client cap that fits the limit.
  public static func clientCap(configured: Int, softLimit: Int) -> Int {
    max(1, min(configured, softLimit - reserve))
  }
}
