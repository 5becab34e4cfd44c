/// A bounds-checked cursor over borrowed bytes.
///
/// Every read returns `nil` instead of trapping when the input is short, so a
/// decoder written with it cannot run past the end of a malformed packet. It
/// borrows the bytes (no copy), which keeps the decode path free of
/// allocations; the caller keeps the storage alive while the reader is used.
public struct ByteReader {
  public let bytes: UnsafeRawBufferPointer
  public var offset: Int

  @inlinable public init(_ bytes: UnsafeRawBufferPointer, offset: Int = 0) {
    self.bytes = bytes
    self.offset = offset
  }

  @inlinable public var remaining: Int { bytes.count - offset }
  @inlinable public var isAtEnd: Bool { offset >= bytes.count }

  @inlinable public mutating func u8() -> UInt8? {
    guard offset < bytes.count else { return nil }
    defer { offset += 1 }
    return bytes[offset]
  }

  @inlinable public mutating func i8() -> Int8? {
    u8().map { Int8(bitPattern: $0) }
  }

  @inlinable public mutating func u16le() -> UInt16? {
    guard remaining >= 2 else { return nil }
    defer { offset += 2 }
    return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
  }

  @inlinable public mutating func u16be() -> UInt16? {
    u16le().map { $0.byteSwapped }
  }

  @inlinable public mutating func u32le() -> UInt32? {
    guard remaining >= 4 else { return nil }
    defer { offset += 4 }
    return bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian
  }

  @inlinable public mutating func u32be() -> UInt32? {
    guard remaining >= 4 else { return nil }
    defer { offset += 4 }
    return bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self).bigEndian
  }

  @inlinable public mutating func u64be() -> UInt64? {
    guard remaining >= 8 else { return nil }
    defer { offset += 8 }
    return bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self).bigEndian
  }

  @inlinable public mutating func u64le() -> UInt64? {
    guard remaining >= 8 else { return nil }
    defer { offset += 8 }
    return bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self).littleEndian
  }

  /// A 48-bit little-endian Bluetooth device address.
  @inlinable public mutating func address() -> BDAddress? {
    guard remaining >= 6 else { return nil }
    var raw: UInt64 = 0
    for i in 0..<6 { raw |= UInt64(bytes[offset + i]) << (8 * i) }
    offset += 6
    return BDAddress(raw: raw)
  }

  /// The next `count` bytes as a borrowed slice, or `nil` if fewer remain.
  @inlinable public mutating func take(_ count: Int) -> UnsafeRawBufferPointer? {
    guard count >= 0, remaining >= count else { return nil }
    defer { offset += count }
    return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
  }

  @inlinable public mutating func skip(_ count: Int) -> Bool {
    guard count >= 0, remaining >= count else { return false }
    offset += count
    return true
  }

  /// Everything not read yet, as a borrowed slice.
  @inlinable public mutating func rest() -> UnsafeRawBufferPointer {
    defer { offset = bytes.count }
    return UnsafeRawBufferPointer(rebasing: bytes[offset...])
  }
}

extension UnsafeRawBufferPointer {
  /// Lower-case hex, for diagnostics and `--all` output.
  public var hexString: String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    out.reserveCapacity(count * 2)
    for b in self {
      out.append(digits[Int(b >> 4)])
      out.append(digits[Int(b & 0xF)])
    }
    return String(decoding: out, as: UTF8.self)
  }
}

/// Parses hex text ("0a1B", spaces and colons ignored) into bytes; `nil` on a
/// stray character or an odd number of digits.
public func bytes(fromHex text: some StringProtocol) -> [UInt8]? {
  var out = [UInt8]()
  var high: UInt8? = nil
  for c in text.utf8 {
    let v: UInt8
    switch c {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): v = c - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): v = c - UInt8(ascii: "A") + 10
    case UInt8(ascii: " "), UInt8(ascii: ":"), UInt8(ascii: "\n"): continue
    default: return nil
    }
    if let h = high {
      out.append(h << 4 | v)
      high = nil
    } else {
      high = v
    }
  }
  return high == nil ? out : nil
}

/// `bytes(fromHex:)` under a name no property shadows (inside a type with
/// a `bytes` member, and in the fuzz targets, which compile the core as
/// another module, so `EarshotCore.bytes` cannot be written).
public func hexDecoded(_ text: some StringProtocol) -> [UInt8]? { bytes(fromHex: text) }
