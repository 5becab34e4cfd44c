/// The `[log]` section of earshot.conf, typed, with its defaults. The config
/// reader validates the values with `check` and fills this in.
public struct ProximityLogConfig: Sendable, Equatable {
  /// Off unless asked for: a history of who was near is personal data.
  public var enabled = false
  /// `nil`: /var/lib/earshot/proximity.sqlite for the system service,
  /// $XDG_STATE_HOME/earshot/proximity.sqlite for a user's.
  public var path: String? = nil
  /// Seconds per sighting row (one row per beacon per interval).
  public var interval = 10.0
  /// Days of history kept; 0 keeps everything.
  public var keepDays = 90.0

  public init() {}

  /// Why a value is unusable, or `nil`. Keys: enabled, path, interval, keep_days.
  public static func check(key: String, value: String) -> String? {
    switch key {
    case "enabled":
      return ["true", "false", "yes", "no", "on", "off", "1", "0"].contains(value)
        ? nil : "expects true or false"
    case "path":
      return value.hasPrefix("/") ? nil : "expects an absolute path"
    case "interval":
      guard let v = Double(value), v.isFinite, v >= 1, v <= 3600 else {
        return "expects seconds from 1 to 3600"
      }
      return nil
    case "keep_days":
      guard let v = Double(value), v.isFinite, v >= 0 else {
        return "expects a number of days (0 keeps everything)"
      }
      return nil
    default:
      return "unknown key (known: enabled, path, interval, keep_days)"
    }
  }
}
