/// A 128-bit block, the unit AES-128 works on, held as two integers so it
/// is compared and copied without allocation. `high` holds the most
/// significant 64 bits: byte 0 of the Core Specification's notation (and of
/// an AES key or block as FIPS-197 writes it) is `high`'s top byte.
public struct Block128: Hashable, Sendable {
  public var high: UInt64
  public var low: UInt64

  @inlinable public init(high: UInt64, low: UInt64) {
    self.high = high
    self.low = low
  }

  /// The 16 bytes, most significant first (AES's byte order).
  @inlinable public func withMostSignificantFirstBytes<R>(
    _ body: (UnsafeRawBufferPointer) throws -> R
  ) rethrows -> R {
    var bigEndian = (high.bigEndian, low.bigEndian)
    return try withUnsafeBytes(of: &bigEndian, body)
  }

  /// Reads 16 bytes, most significant first (AES's byte order).
  @inlinable public init(mostSignificantFirst bytes: UnsafeRawBufferPointer) {
    precondition(bytes.count == 16, "a block is 16 bytes")
    var high: UInt64 = 0
    var low: UInt64 = 0
    for i in 0..<8 {
      high = high << 8 | UInt64(bytes[i])
      low = low << 8 | UInt64(bytes[8 + i])
    }
    self.init(high: high, low: low)
  }
}

/// AES-128 encryption of one block: the security function e(key, plaintext)
/// of the Core Specification (Vol 3, Part H, 2.2.1). The core declares it;
/// the shell provides it (`LibcryptoAES`, OpenSSL's libcrypto), and tests
/// can wrap it to count calls.
public protocol BlockCipher {
  /// What `keyed` gives: by default `SameKey`, which calls `encrypt(_:key:)`.
  associatedtype Keyed: KeyedBlockCipher = SameKey<Self>
  func encrypt(_ plaintext: Block128, key: Block128) -> Block128
  /// Encryption under `key` alone, set up once: a resolver keeps one beside
  /// each of its keys, so that a new address tried against every key finds
  /// nothing per key (a lookup by the key was a SipHash of 16 bytes for
  /// each key, about as much as the encryption).
  func keyed(_ key: Block128) -> Keyed
}

/// A block cipher bound to one key (`BlockCipher.keyed`).
public protocol KeyedBlockCipher {
  func encrypt(_ plaintext: Block128) -> Block128
}

/// A cipher and one key, for ciphers that keep nothing per key: each
/// block goes through `encrypt(_:key:)`, so a wrapper that counts calls
/// still counts them all.
public struct SameKey<Cipher: BlockCipher>: KeyedBlockCipher {
  public let cipher: Cipher
  public let key: Block128

  public init(cipher: Cipher, key: Block128) {
    self.cipher = cipher
    self.key = key
  }

  public func encrypt(_ plaintext: Block128) -> Block128 { cipher.encrypt(plaintext, key: key) }
}

extension SameKey: Sendable where Cipher: Sendable {}

extension BlockCipher where Keyed == SameKey<Self> {
  public func keyed(_ key: Block128) -> SameKey<Self> { SameKey(cipher: self, key: key) }
}

/// The Identity Resolving Key a device hands over at bonding: 128 bits that
/// resolve its resolvable private addresses. Both byte orders in which it
/// is met have their own initializer.
public struct IdentityResolvingKey: Hashable, Sendable {
  public let value: Block128

  public init(_ value: Block128) { self.value = value }

  /// Parses 32 hex digits written most significant byte first, as the
  /// Core Specification's sample data writes it
  /// (`ec0234a357c8ad05341010a60a397d9b`).
  public init(hex text: some StringProtocol) throws(IdentityKeyError) {
    let digits = Array(text.utf8)
    guard digits.count == 32 else { throw .wrongLength(digits.count) }
    var high: UInt64 = 0
    var low: UInt64 = 0
    for (i, c) in digits.enumerated() {
      let nibble: UInt64
      switch c {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = UInt64(c - UInt8(ascii: "0"))
      case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = UInt64(c - UInt8(ascii: "a") + 10)
      case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = UInt64(c - UInt8(ascii: "A") + 10)
      default: throw .notHex(position: i + 1)
      }
      if i < 16 { high = high << 4 | nibble } else { low = low << 4 | nibble }
    }
    self.init(Block128(high: high, low: low))
  }

  /// Takes 16 bytes least significant first: the order of the SMP Identity
  /// Information PDU, HCI commands, and BlueZ's bond store.
  public init(leastSignificantFirst bytes: some Collection<UInt8>) throws(IdentityKeyError) {
    guard bytes.count == 16 else { throw .wrongByteCount(bytes.count) }
    var high: UInt64 = 0
    var low: UInt64 = 0
    for (i, b) in bytes.reversed().enumerated() {
      if i < 8 { high = high << 8 | UInt64(b) } else { low = low << 8 | UInt64(b) }
    }
    self.init(Block128(high: high, low: low))
  }

  /// The 32 hex digits, most significant byte first (the form `init(hex:)` reads).
  public var hex: String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    out.reserveCapacity(32)
    for word in [value.high, value.low] {
      for shift in stride(from: 60, through: 0, by: -4) {
        out.append(digits[Int(word >> UInt64(shift) & 0xF)])
      }
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// The random address hash function ah(k, r) (Core Specification Vol 3,
  /// Part H, 2.2.2): e(k, r') mod 2^24 where r' is 104 zero bits then the
  /// 24 bits of `prand`.
  public func hash(prand: UInt32, cipher: some BlockCipher) -> UInt32 {
    Self.hash(prand: prand, keyed: SameKey(cipher: cipher, key: value))
  }

  /// ah(k, r) with a cipher already bound to the key (`BlockCipher.keyed`).
  @inlinable public static func hash(prand: UInt32, keyed: some KeyedBlockCipher) -> UInt32 {
    let plaintext = Block128(high: 0, low: UInt64(prand & 0xFF_FFFF))
    return UInt32(truncatingIfNeeded: keyed.encrypt(plaintext).low & 0xFF_FFFF)
  }

  /// Whether this key resolves `address` (which must be resolvable:
  /// `address.isResolvablePrivate`): ah(k, prand) equals its hash.
  public func resolves(_ address: BDAddress, cipher: some BlockCipher) -> Bool {
    hash(prand: address.prand, cipher: cipher) == address.addressHash
  }

  /// `resolves(_:cipher:)` with this key's own cipher (`cipher.keyed(value)`).
  @inlinable public static func resolves(_ address: BDAddress, keyed: some KeyedBlockCipher)
    -> Bool
  {
    hash(prand: address.prand, keyed: keyed) == address.addressHash
  }

  /// The resolvable private address this key gives for `prand` (whose top
  /// two bits are set to 0b01 whatever they were).
  public func address(prand: UInt32, cipher: some BlockCipher) -> BDAddress {
    let p = (prand & 0x3F_FFFF) | 0x40_0000
    return BDAddress(raw: UInt64(p) << 24 | UInt64(hash(prand: p, cipher: cipher)))
  }
}

/// Why an Identity Resolving Key was not accepted.
public enum IdentityKeyError: Error, Equatable, CustomStringConvertible {
  case wrongLength(Int)
  case notHex(position: Int)
  case wrongByteCount(Int)

  public var description: String {
    switch self {
    case .wrongLength(let n):
      "an identity resolving key is 32 hex digits (16 bytes, most significant first); got \(n) characters"
    case .notHex(let position):
      "an identity resolving key is 32 hex digits (0-9, a-f); character \(position) is not one"
    case .wrongByteCount(let n):
      "an identity resolving key is 16 bytes; got \(n)"
    }
  }
}

extension BDAddress {
  /// The two most significant bits of a random address say its kind
  /// (Core Specification Vol 6, Part B, 1.3.2): 0b11 static, 0b01
  /// resolvable private, 0b00 non-resolvable private (0b10 is reserved).
  @inlinable public var randomKindBits: UInt8 { UInt8(truncatingIfNeeded: raw >> 46) }

  /// A random address with the top bits 0b01.
  @inlinable public var isResolvablePrivate: Bool { randomKindBits == 0b01 }

  /// A random address with the top bits 0b11 (a static random identity).
  @inlinable public var isStaticRandom: Bool { randomKindBits == 0b11 }

  /// The upper 24 bits of a resolvable private address (`raw` holds the
  /// address as printed, most significant byte first).
  @inlinable public var prand: UInt32 { UInt32(truncatingIfNeeded: raw >> 24) & 0xFF_FFFF }

  /// The lower 24 bits of a resolvable private address.
  @inlinable public var addressHash: UInt32 { UInt32(truncatingIfNeeded: raw) & 0xFF_FFFF }
}
