#if canImport(Glibc)
  import Glibc
#endif

/// The local time zone as the C library sees it (TZ, /etc/localtime), for
/// printing and parsing times the way the user reads them.
public enum LocalTimeZone {
  /// Seconds east of UTC in force at a Unix time.
  public static let offset: @Sendable (Int64) -> Int = { seconds in
    var t = time_t(seconds)
    var tm = Glibc.tm()
    guard localtime_r(&t, &tm) != nil else { return 0 }
    return Int(tm.tm_gmtoff)
  }
}
