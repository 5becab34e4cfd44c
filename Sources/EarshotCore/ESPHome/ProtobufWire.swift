/// The protobuf wire format, as far as the ESPHome native API uses it:
/// varints (uint32/uint64/bool/enum), zigzag sint32, and length-delimited
/// bytes, strings and embedded messages. Fixed32/fixed64 are read only to
/// be skipped (the API's floats are in messages Earshot does not decode).
public enum ProtobufWire {
  public static let varint: UInt8 = 0
  public static let fixed64: UInt8 = 1
  public static let lengthDelimited: UInt8 = 2
  public static let fixed32: UInt8 = 5

  public static func appendVarint(_ value: UInt64, to out: inout [UInt8]) {
    var v = value
    while v >= 0x80 {
      out.append(UInt8(truncatingIfNeeded: v) | 0x80)
      v >>= 7
    }
    out.append(UInt8(v))
  }

  public static func zigzag(_ v: Int32) -> UInt64 {
    UInt64(UInt32(bitPattern: (v << 1) ^ (v >> 31)))
  }

  public static func unzigzag(_ v: UInt64) -> Int32 {
    let u = UInt32(truncatingIfNeeded: v)
    return Int32(bitPattern: (u >> 1) ^ (0 &- (u & 1)))
  }

  /// Reads a varint of at most 10 bytes; `nil` if the input ends first or
  /// it is longer (then the input is malformed, not short).
  public static func readVarint(_ bytes: UnsafeRawBufferPointer, at offset: inout Int) -> UInt64? {
    var result: UInt64 = 0
    var shift: UInt64 = 0
    var i = offset
    while i < bytes.count, shift < 70 {
      let b = bytes[i]
      i += 1
      result |= UInt64(b & 0x7F) << shift
      if b & 0x80 == 0 {
        offset = i
        return result
      }
      shift += 7
    }
    return nil
  }
}

/// Builds one message's bytes field by field. Scalar fields equal to their
/// default (zero, false, empty) are left out, as proto3 encoders do.
public struct ProtobufWriter: Sendable {
  public var bytes: [UInt8] = []
  public init() {}

  mutating func tag(_ field: UInt32, _ wire: UInt8) {
    ProtobufWire.appendVarint(UInt64(field) << 3 | UInt64(wire), to: &bytes)
  }

  public mutating func uint(_ field: UInt32, _ v: UInt64) {
    guard v != 0 else { return }
    tag(field, ProtobufWire.varint)
    ProtobufWire.appendVarint(v, to: &bytes)
  }

  public mutating func bool(_ field: UInt32, _ v: Bool) { uint(field, v ? 1 : 0) }

  public mutating func sint32(_ field: UInt32, _ v: Int32) { uint(field, ProtobufWire.zigzag(v)) }

  public mutating func bytes(_ field: UInt32, _ v: some Collection<UInt8>) {
    guard !v.isEmpty else { return }
    tag(field, ProtobufWire.lengthDelimited)
    ProtobufWire.appendVarint(UInt64(v.count), to: &bytes)
    bytes.append(contentsOf: v)
  }

  public mutating func string(_ field: UInt32, _ v: String) { bytes(field, Array(v.utf8)) }

  /// An embedded message, written even when empty (a repeated element).
  public mutating func message(_ field: UInt32, _ v: [UInt8]) {
    tag(field, ProtobufWire.lengthDelimited)
    ProtobufWire.appendVarint(UInt64(v.count), to: &bytes)
    bytes.append(contentsOf: v)
  }
}

/// One decoded field: its number and its value (varint or bytes).
public enum ProtobufValue: Equatable, Sendable {
  case varint(UInt64)
  case bytes([UInt8])
  case fixed(UInt64)
}

public struct ProtobufError: Error, Equatable, CustomStringConvertible {
  public let description: String
  public init(_ description: String) { self.description = description }
}

/// Splits a message into its fields, checking the whole input first: a
/// truncated field or an unknown wire type fails the whole message, so no
/// half-read message is ever delivered.
public func protobufFields(_ bytes: [UInt8]) throws(ProtobufError) -> [(UInt32, ProtobufValue)] {
  var fields: [(UInt32, ProtobufValue)] = []
  var failure: ProtobufError?
  bytes.withUnsafeBytes { raw in
    var i = 0
    while i < raw.count {
      guard let key = ProtobufWire.readVarint(raw, at: &i), key >> 3 > 0, key >> 3 <= 0x1FFF_FFFF
      else {
        failure = ProtobufError("bad field key at byte \(i)")
        return
      }
      let field = UInt32(key >> 3)
      switch UInt8(key & 7) {
      case ProtobufWire.varint:
        guard let v = ProtobufWire.readVarint(raw, at: &i) else {
          failure = ProtobufError("field \(field): truncated varint")
          return
        }
        fields.append((field, .varint(v)))
      case ProtobufWire.lengthDelimited:
        guard let n = ProtobufWire.readVarint(raw, at: &i), n <= UInt64(raw.count - i) else {
          failure = ProtobufError("field \(field): length past the end of the message")
          return
        }
        fields.append((field, .bytes(Array(raw[i..<i + Int(n)]))))
        i += Int(n)
      case ProtobufWire.fixed32, ProtobufWire.fixed64:
        let n = key & 7 == UInt64(ProtobufWire.fixed32) ? 4 : 8
        guard raw.count - i >= n else {
          failure = ProtobufError("field \(field): truncated fixed value")
          return
        }
        var v: UInt64 = 0
        for k in 0..<n { v |= UInt64(raw[i + k]) << (8 * UInt64(k)) }
        fields.append((field, .fixed(v)))
        i += n
      default:
        failure = ProtobufError("field \(field): unsupported wire type \(key & 7)")
        return
      }
    }
  }
  if let failure { throw failure }
  return fields
}
