/// A 48-bit Bluetooth device address, stored as the wire's little-endian
/// integer so it hashes and compares without allocation.
public struct BDAddress: Hashable, Comparable, Sendable, CustomStringConvertible {
  public let raw: UInt64

  @inlinable public init(raw: UInt64) { self.raw = raw & 0xFFFF_FFFF_FFFF }

  /// Parses "C1:02:03:04:05:06" (most significant byte first, as printed).
  public init?(_ text: some StringProtocol) {
    let parts = text.split(separator: ":")
    guard parts.count == 6 else { return nil }
    var raw: UInt64 = 0
    for part in parts {
      guard part.count == 2, let b = UInt8(part, radix: 16) else { return nil }
      raw = raw << 8 | UInt64(b)
    }
    self.init(raw: raw)
  }

  public var description: String {
    let digits = Array("0123456789ABCDEF".utf8)
    var out = [UInt8]()
    out.reserveCapacity(17)
    for i in stride(from: 5, through: 0, by: -1) {
      let b = UInt8(truncatingIfNeeded: raw >> UInt64(8 * i))
      out.append(digits[Int(b >> 4)])
      out.append(digits[Int(b & 0xF)])
      if i > 0 { out.append(UInt8(ascii: ":")) }
    }
    return String(decoding: out, as: UTF8.self)
  }

  public static func < (a: BDAddress, b: BDAddress) -> Bool { a.raw < b.raw }
}

/// LE address types as HCI reports them.
public enum AddressType: UInt8, Sendable {
  case `public` = 0x00
  case random = 0x01
  case publicIdentity = 0x02
  case randomIdentity = 0x03
  case anonymous = 0xFF

  public var name: String {
    switch self {
    case .public: "public"
    case .random: "random"
    case .publicIdentity: "public_identity"
    case .randomIdentity: "random_identity"
    case .anonymous: "anonymous"
    }
  }
}
