/// A device bonded with this machine, as the bond store describes it: the
/// identity address it handed over, its Identity Resolving Key when it
/// distributed one (a device without privacy has none and is matched by its
/// identity address alone), and its name when known. The Linux shell reads
/// these from BlueZ; the monitor takes a whole set at a time
/// (`RegionMonitor.updateBondedKeys`), so a bond added or removed while
/// running applies without a restart.
public struct BondedKey: Sendable, Equatable, Hashable {
  /// Whether the identity address is a public device address or a static
  /// random one (the two kinds of identity address).
  public enum IdentityType: String, Sendable, Equatable, Hashable {
    case `public`
    case staticRandom = "static"
  }

  public var identity: BDAddress
  public var identityType: IdentityType
  public var irk: IdentityResolvingKey?
  public var name: String?

  public init(
    identity: BDAddress, identityType: IdentityType, irk: IdentityResolvingKey? = nil,
    name: String? = nil
  ) {
    self.identity = identity
    self.identityType = identityType
    self.irk = irk
    self.name = name
  }

  /// The identity as the resolver names it.
  public var identityAddress: IdentityAddress {
    IdentityAddress(address: identity, isPublic: identityType == .public)
  }
}
