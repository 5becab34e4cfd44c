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

/// Says which known device (if any) sent from an address: identity
/// addresses match directly, resolvable private addresses are tried against
/// every IRK. Both answers for resolvable addresses are remembered (a known
/// address costs one hash lookup, no cipher call) in two caches of fixed
/// capacity that forget their oldest entries; changing the keys clears them.
///
/// `Identity` is what an answer names: the identity address for bonded
/// devices, or the monitor's `DeviceID`, which also covers keys given by hand.
public struct IdentityResolver<Cipher: BlockCipher, Identity: Hashable> {
  public let cipher: Cipher
  public let capacity: Int
  public private(set) var keys: [(identity: Identity, key: IdentityResolvingKey)] = []
  /// Each of `keys`' own cipher, made once when the keys are set.
  private var keyed: [Cipher.Keyed] = []
  private var direct: [IdentityAddress: Identity] = [:]
  private var answers: AnswerCache<Identity>

  /// `addresses`: the identity addresses that match directly, and what each names.
  public init(
    cipher: Cipher, keys: [(identity: Identity, key: IdentityResolvingKey)],
    addresses: [IdentityAddress: Identity], capacity: Int = 4096
  ) {
    precondition(capacity > 0, "a cache holds at least one address")
    self.cipher = cipher
    self.capacity = capacity
    answers = AnswerCache(capacity: capacity)
    setKeys(keys, addresses: addresses)
  }

  /// Replaces the known devices; forgets every remembered answer.
  public mutating func setKeys(
    _ keys: [(identity: Identity, key: IdentityResolvingKey)],
    addresses: [IdentityAddress: Identity]
  ) {
    self.keys = keys
    keyed = keys.map { cipher.keyed($0.key.value) }
    direct = addresses
    answers.removeAll()
  }

  /// Whether any device is known at all (else every report is a miss).
  public var isEmpty: Bool { keys.isEmpty && direct.isEmpty }

  /// How many resolvable addresses are remembered as resolved / as not.
  public var resolvedCount: Int { answers.resolvedCount }
  public var unresolvedCount: Int { answers.unresolvedCount }

  /// The device that sent from `address` (of `type`, as an HCI report
  /// gives it), or nil when no known device did. Non-resolvable private
  /// (and anonymous) addresses never match.
  public mutating func resolve(_ address: BDAddress, type: AddressType) -> Identity? {
    switch type {
    case .public, .publicIdentity:
      return direct[IdentityAddress(address: address, isPublic: true)]
    case .randomIdentity:
      return direct[IdentityAddress(address: address, isPublic: false)]
    case .anonymous:
      return nil
    case .random:
      if address.isStaticRandom {
        return direct[IdentityAddress(address: address, isPublic: false)]
      }
      guard address.isResolvablePrivate, !keys.isEmpty else { return nil }
      if let answer = answers.lookup(address) { return answer }
      for k in keyed.indices where IdentityResolvingKey.resolves(address, keyed: keyed[k]) {
        let identity = keys[k].identity
        answers.insert(identity, for: address)
        return identity
      }
      answers.insert(nil, for: address)
      return nil
    }
  }
}

extension IdentityResolver where Identity == IdentityAddress {
  /// Bonded devices named by their identity addresses, which match directly.
  public init(
    cipher: Cipher, keys: [(identity: IdentityAddress, key: IdentityResolvingKey)] = [],
    capacity: Int = 4096
  ) {
    self.init(
      cipher: cipher, keys: keys, addresses: Self.addresses(keys), capacity: capacity)
  }

  /// Replaces the bonded devices; forgets every remembered answer.
  public mutating func setKeys(_ keys: [(identity: IdentityAddress, key: IdentityResolvingKey)]) {
    setKeys(keys, addresses: Self.addresses(keys))
  }

  static func addresses(
    _ keys: [(identity: IdentityAddress, key: IdentityResolvingKey)]
  ) -> [IdentityAddress: IdentityAddress] {
    Dictionary(keys.map { ($0.identity, $0.identity) }, uniquingKeysWith: { a, _ in a })
  }
}

/// The answers a resolver remembers, in one table so that a report costs
/// one lookup whichever the answer: an identity, or `nil` for an address
/// no key resolves. Each kind has its own fixed capacity and forgets its
/// oldest entry to make room (its keys sit in a ring in the order they
/// came), so a crowd of strangers cannot push out the known devices.
///
/// In front of the table, the latest answers by a multiplicative hash of
/// the address (one slot each, 1,024 slots, 24 kB): an address heard again
/// is found without hashing it for the dictionary (SipHash was most of a
/// resolved report's cost in the live identity path, docs/performance.md).
/// A slot only ever holds what the table holds.
struct AnswerCache<Value> {
  typealias Key = BDAddress
  let capacity: Int
  private var answers: [Key: Value?] = [:]
  private var resolved: Ring<Key>
  private var unresolved: Ring<Key>
  static var recentBits: Int { 10 }
  /// An address's raw value and its answer per slot, side by side so that
  /// a probe reads one cache line (two arrays cost two cold misses a
  /// report in the live path, docs/performance.md); `empty` (never a 48-bit
  /// address) for none.
  fileprivate var recent = [Slot](repeating: Slot(raw: empty, value: nil), count: 1 << recentBits)
  private static var empty: UInt64 { .max }

  fileprivate struct Slot {
    var raw: UInt64
    var value: Value?
  }

  init(capacity: Int) {
    self.capacity = capacity
    answers.reserveCapacity(2 * capacity)
    resolved = Ring(capacity: capacity)
    unresolved = Ring(capacity: capacity)
  }

  var resolvedCount: Int { resolved.count }
  var unresolvedCount: Int { unresolved.count }

  private static func slot(_ key: Key) -> Int {
    Int(truncatingIfNeeded: (key.raw &* 0x9E37_79B9_7F4A_7C15) >> UInt64(64 - recentBits))
  }

  /// `.some(nil)`: remembered as resolving to nothing; `nil`: not remembered.
  mutating func lookup(_ key: Key) -> Value?? {
    let s = Self.slot(key)
    if recent[s].raw == key.raw { return .some(recent[s].value) }
    guard let answer = answers[key] else { return nil }
    recent[s] = Slot(raw: key.raw, value: answer)
    return .some(answer)
  }

  /// Adds the answer for a key not yet present.
  mutating func insert(_ value: Value?, for key: Key) {
    let evicted = value == nil ? unresolved.push(key) : resolved.push(key)
    if let evicted {
      answers[evicted] = nil
      let s = Self.slot(evicted)
      if recent[s].raw == evicted.raw { recent[s].raw = Self.empty }
    }
    answers[key] = .some(value)
    let s = Self.slot(key)
    recent[s] = Slot(raw: key.raw, value: value)
  }

  mutating func removeAll() {
    answers.removeAll(keepingCapacity: true)
    resolved.removeAll()
    unresolved.removeAll()
    for s in recent.indices { recent[s].raw = Self.empty }
  }
}

/// Keys in the order they came, at most `capacity`: pushing one more
/// gives back the oldest, which it replaces.
struct Ring<Key> {
  let capacity: Int
  private var order: [Key] = []
  private var next = 0

  init(capacity: Int) {
    self.capacity = capacity
    order.reserveCapacity(capacity)
  }

  var count: Int { order.count }

  mutating func push(_ key: Key) -> Key? {
    guard order.count >= capacity else {
      order.append(key)
      return nil
    }
    let oldest = order[next]
    order[next] = key
    next = (next + 1) % capacity
    return oldest
  }

  mutating func removeAll() {
    order.removeAll(keepingCapacity: true)
    next = 0
  }
}

extension IdentityResolver: Sendable
where Cipher: Sendable, Cipher.Keyed: Sendable, Identity: Sendable {}

extension AnswerCache: Sendable where Value: Sendable {}

extension AnswerCache.Slot: Sendable where Value: Sendable {}

extension Ring: Sendable where Key: Sendable {}
