/// Who gets a slot of a server with a fixed number of them, when some are
/// held by connections that have not finished their handshake: a pure
/// decision (connections in, what to do with them out), no socket, no clock.
///
/// The rule: a connection is *unproven* from its arrival until it
/// completes its handshake (for the Bluetooth proxy: the Noise handshake,
/// which proves the key, or in plaintext its Hello). When every
/// slot is taken, a newcomer takes the slot of the unproven connection
/// that arrived first; only when every slot is held by a proven client is
/// it refused.
///
/// Guarantees:
/// - A proven client is never displaced by any other connection, and is
///   refused only when `capacity` proven clients are connected.
/// - Connections that never finish their handshake (silent, garbage, a
///   stalled handshake), however many and however often reopened, cannot
///   keep out a client that finishes its own: every arrival while the
///   server is full displaces the oldest of them, and a newcomer is
///   displaced only after every unproven connection that came before it,
///   so with k of them ahead it has k more arrivals' time to finish
///   (aioesphomeapi's first write finishes it, with or without a key).
///   Reopening a displaced connection counts as an arrival, so a set of
///   connections that reopen when closed displaces itself first.
/// - What it cannot do: connections arriving faster than a client can
///   finish its handshake, from the same address, can still keep it out
///   (nothing tells them apart before the handshake); that is for the
///   network's own limits (bind address, firewall).
/// - Memory: one entry per connection served, at most `capacity`.
public struct HandshakeAdmission<ID: Hashable & Sendable>: Sendable {
  public enum Decision: Equatable, Sendable {
    case admit
    /// Admit, after closing this unproven connection (the oldest).
    case admitDisplacing(ID)
    /// Every slot is held by a proven client.
    case refuse
  }

  public let capacity: Int
  /// Unproven connections, oldest first.
  private var unproven: [ID] = []
  private var proven: Set<ID> = []

  public init(capacity: Int) { self.capacity = max(capacity, 1) }

  public var count: Int { unproven.count + proven.count }
  public var unprovenCount: Int { unproven.count }
  public func isProven(_ id: ID) -> Bool { proven.contains(id) }

  /// A connection arrives as `id` (not yet served). Applies the decision:
  /// an admitted one is served (unproven) and a displaced one is not.
  public mutating func arrive(_ id: ID) -> Decision {
    guard count >= capacity else {
      unproven.append(id)
      return .admit
    }
    guard !unproven.isEmpty else { return .refuse }
    let oldest = unproven.removeFirst()
    unproven.append(id)
    return .admitDisplacing(oldest)
  }

  /// The connection completed its handshake.
  public mutating func prove(_ id: ID) {
    guard let i = unproven.firstIndex(of: id) else { return }
    unproven.remove(at: i)
    proven.insert(id)
  }

  /// The connection is gone (closed by either side, for any reason).
  public mutating func leave(_ id: ID) {
    if let i = unproven.firstIndex(of: id) { unproven.remove(at: i) }
    proven.remove(id)
  }
}
