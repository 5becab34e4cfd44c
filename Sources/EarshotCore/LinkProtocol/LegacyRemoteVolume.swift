/// The compatibility protocol (`[link] legacy_remote_volume = true`): the
/// one of a well-known hobby remote-volume app, so its existing senders work.
///
/// The central writes the ASCII text `REQ_NAME` → Earshot notifies its
/// device name (UTF-8); `REQ_VOLUME` → the volume as an 8-byte little-endian
/// IEEE-754 double (0.0...1.0); any other write is a volume to set, as such a
/// double. Unlike the original, a volume write that is not exactly 8 bytes,
/// not finite, or outside 0...1 is rejected.
public enum LegacyRemoteVolume {
  public static let requestName = Array("REQ_NAME".utf8)
  public static let requestVolume = Array("REQ_VOLUME".utf8)

  public enum Request: Equatable, Sendable {
    case name
    case volume
    case setVolume(Double)
  }

  public static func decode(_ bytes: UnsafeRawBufferPointer, offset: Int = 0)
    -> Result<Request, LinkDecodeError>
  {
    guard offset == 0 else { return .failure(.nonZeroOffset(offset)) }
    if bytes.elementsEqual(requestName) { return .success(.name) }
    if bytes.elementsEqual(requestVolume) { return .success(.volume) }
    guard bytes.count == 8 else { return .failure(.legacyLength(bytes.count)) }
    var r = ByteReader(bytes)
    let value = Double(bitPattern: r.u64le()!)
    guard value.isFinite else { return .failure(.legacyNotFinite) }
    guard value >= 0, value <= 1 else { return .failure(.legacyOutOfRange(value)) }
    return .success(.setVolume(value))
  }

  public static func decode(_ bytes: [UInt8], offset: Int = 0) -> Result<Request, LinkDecodeError> {
    bytes.withUnsafeBytes { decode($0, offset: offset) }
  }

  /// The device name notification: UTF-8, cut at a character boundary so it
  /// fits `maxBytes` (a notification carries at most ATT MTU - 3 bytes).
  public static func encodeName(_ name: String, maxBytes: Int = 20) -> [UInt8] {
    var out: [UInt8] = []
    for scalar in name.unicodeScalars {
      let encoded = Array(String(scalar).utf8)
      if out.count + encoded.count > maxBytes { break }
      out.append(contentsOf: encoded)
    }
    return out
  }

  /// The volume notification: an 8-byte little-endian double.
  public static func encodeVolume(_ level: Double) -> [UInt8] {
    let bits = level.bitPattern
    return (0..<8).map { UInt8(truncatingIfNeeded: bits >> UInt64(8 * $0)) }
  }

  /// Reads a volume notification back (the central's side).
  public static func decodeVolume(_ bytes: [UInt8]) -> Double? {
    guard bytes.count == 8 else { return nil }
    var bits: UInt64 = 0
    for (i, b) in bytes.enumerated() { bits |= UInt64(b) << UInt64(8 * i) }
    return Double(bitPattern: bits)
  }
}
