/// The proxy's pre-shared key as ESPHome writes it: 32 bytes in base64
/// (`openssl rand -base64 32`).
public enum ESPHomeKey {
  public struct Invalid: Error, Equatable, CustomStringConvertible {
    public let description: String
  }

  /// Decodes the key file's text (surrounding whitespace ignored).
  public static func decode(_ text: String) throws(Invalid) -> [UInt8] {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    var value: [UInt8: UInt32] = [:]
    for (i, c) in alphabet.enumerated() { value[c] = UInt32(i) }
    let chars = Array(text.utf8).filter { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }
    let body = chars.prefix(while: { $0 != UInt8(ascii: "=") })
    guard chars.count % 4 == 0, chars.count - body.count <= 2,
      chars[body.count...].allSatisfy({ $0 == UInt8(ascii: "=") })
    else {
      throw Invalid(description: "not base64 (make one with: openssl rand -base64 32)")
    }
    var out: [UInt8] = []
    var acc: UInt32 = 0
    var bits = 0
    for c in body {
      guard let v = value[c] else {
        throw Invalid(description: "not base64 (make one with: openssl rand -base64 32)")
      }
      acc = acc << 6 | v
      bits += 6
      if bits >= 8 {
        bits -= 8
        out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
      }
    }
    guard out.count == 32 else {
      throw Invalid(
        description: "\(out.count) bytes; the key is 32 bytes in base64 (openssl rand -base64 32)")
    }
    return out
  }
}
