/// A `BlockCipher` the monitor can hold: the shell's cipher (libcrypto's,
/// a class with a context) behind a value. The monitor that holds it is
/// driven by one thread at a time, which is what makes sharing it sound.
public struct MonitorCipher: BlockCipher, @unchecked Sendable {
  let base: any BlockCipher

  public init(_ base: any BlockCipher) { self.base = base }

  public func encrypt(_ plaintext: Block128, key: Block128) -> Block128 {
    base.encrypt(plaintext, key: key)
  }

  public func keyed(_ key: Block128) -> MonitorKeyedCipher {
    MonitorKeyedCipher(base: base.keyed(key))
  }
}

/// The shell's cipher under one key (`MonitorCipher.keyed`), held as
/// `MonitorCipher` holds the cipher.
public struct MonitorKeyedCipher: KeyedBlockCipher, @unchecked Sendable {
  let base: any KeyedBlockCipher

  public func encrypt(_ plaintext: Block128) -> Block128 { base.encrypt(plaintext) }
}

/// The devices the monitor can recognise: those the regions name
/// (`device =`, `irk =`) or `[rooms] track` names, and those bonded with this machine, resolved from
/// report addresses through an `IdentityResolver` (so a known private
/// address costs one hash lookup). A report resolves to a position in
/// `entries`, so the monitor keeps what it needs per device in arrays
/// instead of hashing identities at every report. Rebuilt when either set
/// changes; the resolver's caches are kept when the devices come out the same.
public struct DeviceDirectory: Sendable {
  /// Not optional: a mutating call through an optional copied the
  /// resolver, caches and all, at every report.
  private var resolver: IdentityResolver<MonitorCipher, Int>
  /// Whether private addresses can be resolved (there is a real cipher).
  public let canResolve: Bool
  public private(set) var bonded: [BondedKey] = []
  private var configured: (devices: [BDAddress], irks: [IdentityResolvingKey]) = ([], [])
  /// Every device known, in a stable order: bonded ones first.
  public private(set) var entries: [DeviceIdentity] = []

  /// Without a cipher, only identity addresses match (private ones cannot
  /// be resolved).
  public init(cipher: (any BlockCipher)?, capacity: Int = 4096) {
    canResolve = cipher != nil
    resolver = IdentityResolver(
      cipher: MonitorCipher(cipher ?? NoCipher()), keys: [], addresses: [:], capacity: capacity)
  }

  /// How many private addresses are remembered as resolved / as not.
  public var resolvedCount: Int { resolver.resolvedCount }
  public var unresolvedCount: Int { resolver.unresolvedCount }

  /// The devices the regions name, and those `[rooms] track` names (one
  /// directory, so a report is resolved once for both), from the config.
  /// Returns whether `entries` changed.
  @discardableResult
  public mutating func configure(_ regions: [RegionConfig], tracked: [TrackedDevice] = []) -> Bool {
    var devices: [BDAddress] = []
    var irks: [IdentityResolvingKey] = []
    for r in regions {
      for d in r.devices where !devices.contains(d) { devices.append(d) }
      for k in r.irks where !irks.contains(k) { irks.append(k) }
    }
    for t in tracked {
      if let d = t.address, !devices.contains(d) { devices.append(d) }
      if let k = t.irk, !irks.contains(k) { irks.append(k) }
    }
    configured = (devices, irks)
    return rebuild()
  }

  /// The devices bonded with this machine (the whole set, as the bond
  /// store has it now). Returns whether `entries` changed.
  @discardableResult
  public mutating func updateBondedKeys(_ keys: [BondedKey]) -> Bool {
    bonded = keys
    return rebuild()
  }

  /// The position in `entries` of the device that sent from `address`, if known.
  public mutating func resolve(_ address: BDAddress, type: AddressType) -> Int? {
    resolver.resolve(address, type: type)
  }

  private mutating func rebuild() -> Bool {
    var ids: [DeviceIdentity] = []
    var addresses: [IdentityAddress: Int] = [:]
    var keys: [(identity: Int, key: IdentityResolvingKey)] = []
    for b in bonded {
      let n = ids.count
      ids.append(DeviceIdentity(address: b.identity, irk: b.irk))
      addresses[b.identityAddress] = addresses[b.identityAddress] ?? n
      if let k = b.irk, !keys.contains(where: { $0.key == k }) { keys.append((n, k)) }
    }
    for a in configured.devices where !bonded.contains(where: { $0.identity == a }) {
      // Named but not bonded (or not yet): its identity address still
      // matches directly; whether public or static random is not written.
      let n = ids.count
      ids.append(DeviceIdentity(address: a, irk: nil))
      let pub = IdentityAddress(address: a, isPublic: true)
      addresses[pub] = addresses[pub] ?? n
      if a.isStaticRandom {
        let random = IdentityAddress(address: a, isPublic: false)
        addresses[random] = addresses[random] ?? n
      }
    }
    for k in configured.irks where !keys.contains(where: { $0.key == k }) {
      keys.append((ids.count, k))
      ids.append(DeviceIdentity(address: nil, irk: k))
    }
    guard ids != entries else { return false }
    entries = ids
    // Without a cipher no key is tried: identity addresses only.
    resolver.setKeys(canResolve ? keys : [], addresses: addresses)
    return true
  }
}

/// Stands in when there is no cipher; never called, since no key is given
/// to the resolver then.
private struct NoCipher: BlockCipher {
  func encrypt(_ plaintext: Block128, key: Block128) -> Block128 {
    preconditionFailure("no cipher: private addresses are not resolved")
  }
}
