/// Tells when a broker keeps taking the session away: MQTT 3.1.1 brokers
/// close an older connection without a word when another client connects
/// with the same client id, and two such clients then take it from each
/// other in a loop. The sign is a run of connections that each end soon
/// after they were accepted.
///
/// Guarantees (SessionTakeoverDetectorTests): says so once per run of
/// `threshold` consecutive short connections (each shorter than
/// `shortSpan`); a connection that lasts resets it; time is the caller's
/// monotonic clock.
public struct SessionTakeoverDetector: Sendable {
  public let shortSpan: Double
  public let threshold: Int
  private var connectedAt: MonotonicTime?
  private var shortInARow = 0

  public init(shortSpan: Double = 5, threshold: Int = 3) {
    self.shortSpan = shortSpan
    self.threshold = max(1, threshold)
  }

  public mutating func connected(at t: MonotonicTime) { connectedAt = t }

  /// The connection ended. True when this completes a run of short
  /// connections (said once per run).
  public mutating func disconnected(at t: MonotonicTime) -> Bool {
    guard let start = connectedAt else { return false }
    connectedAt = nil
    guard start.seconds(until: t) < shortSpan else {
      shortInARow = 0
      return false
    }
    shortInARow += 1
    return shortInARow == threshold
  }

  /// What to tell the user.
  public static func message(clientID: String, threshold: Int, shortSpan: Double) -> String {
    "mqtt: the broker closed \(threshold) connections in a row within \(Int(shortSpan)) s of "
      + "accepting them: another client is probably connected with the same client id "
      + "'\(clientID)'; give each agent its own [mqtt] client_id (or leave it empty for a unique one)"
  }
}
