/// A bonded device's identity address: the public or static random address
/// it handed over with its IRK.
public struct IdentityAddress: Hashable, Sendable, CustomStringConvertible {
  public let address: BDAddress
  /// True for a public device address, false for a static random one.
  public let isPublic: Bool

  public init(address: BDAddress, isPublic: Bool) {
    self.address = address
    self.isPublic = isPublic
  }

  public var description: String { "\(address) (\(isPublic ? "public" : "random"))" }
}

/// Says which bonded device (if any) sent from an address: identity
/// addresses match directly, resolvable private addresses are tried against
/// every IRK. Both answers for resolvable addresses are remembered (a known
/// address costs one hash lookup, no cipher call) in two caches of fixed
/// capacity that forget their oldest entries; changing the keys clears them.
public struct IdentityResolver<Cipher: BlockCipher> {
  public let cipher: Cipher
  public let capacity: Int
  public private(set) var keys: [(identity: IdentityAddress, key: IdentityResolvingKey)] = []
  private var identities: Set<IdentityAddress> = []
  private var resolved: BoundedCache<BDAddress, IdentityAddress>
  private var unresolved: BoundedCache<BDAddress, Void>

  public init(
    cipher: Cipher, keys: [(identity: IdentityAddress, key: IdentityResolvingKey)] = [],
    capacity: Int = 4096
  ) {
    precondition(capacity > 0, "a cache holds at least one address")
    self.cipher = cipher
    self.capacity = capacity
    resolved = BoundedCache(capacity: capacity)
    unresolved = BoundedCache(capacity: capacity)
    setKeys(keys)
  }

  /// Replaces the bonded devices; forgets every remembered answer.
  public mutating func setKeys(_ keys: [(identity: IdentityAddress, key: IdentityResolvingKey)]) {
    self.keys = keys
    identities = Set(keys.map(\.identity))
    resolved.removeAll()
    unresolved.removeAll()
  }

  /// How many resolvable addresses are remembered as resolved / as not.
  public var resolvedCount: Int { resolved.count }
  public var unresolvedCount: Int { unresolved.count }

  /// The identity of the device that sent from `address` (of `type`, as an
  /// HCI report gives it), or nil when no bonded device did.
  public mutating func resolve(_ address: BDAddress, type: AddressType) -> IdentityAddress? {
    switch type {
    case .public, .publicIdentity:
      return match(IdentityAddress(address: address, isPublic: true))
    case .randomIdentity:
      return match(IdentityAddress(address: address, isPublic: false))
    case .anonymous:
      return nil
    case .random:
      if address.isStaticRandom { return match(IdentityAddress(address: address, isPublic: false)) }
      guard address.isResolvablePrivate, !keys.isEmpty else { return nil }
      if let identity = resolved[address] { return identity }
      if unresolved[address] != nil { return nil }
      for (identity, key) in keys where key.resolves(address, cipher: cipher) {
        resolved.insert(identity, for: address)
        return identity
      }
      unresolved.insert((), for: address)
      return nil
    }
  }

  private func match(_ identity: IdentityAddress) -> IdentityAddress? {
    identities.contains(identity) ? identity : nil
  }
}

/// A dictionary of fixed capacity that forgets its oldest entry to make
/// room: the keys sit in a ring in the order they came.
struct BoundedCache<Key: Hashable, Value> {
  let capacity: Int
  private var values: [Key: Value] = [:]
  private var order: [Key] = []
  private var next = 0

  init(capacity: Int) {
    self.capacity = capacity
    values.reserveCapacity(capacity)
    order.reserveCapacity(capacity)
  }

  var count: Int { values.count }

  subscript(key: Key) -> Value? { values[key] }

  /// Adds an entry for a key not yet present.
  mutating func insert(_ value: Value, for key: Key) {
    if order.count < capacity {
      order.append(key)
    } else {
      values[order[next]] = nil
      order[next] = key
      next = (next + 1) % capacity
    }
    values[key] = value
  }

  mutating func removeAll() {
    values.removeAll(keepingCapacity: true)
    order.removeAll(keepingCapacity: true)
    next = 0
  }
}
