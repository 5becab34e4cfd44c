/// The `[log]` section of earshot.conf, typed, with its defaults (its keys
/// are in `Config.sections`).
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
}
