/// ATT error codes the link answers a rejected write with. 0x01-0x7F are the
/// Core specification's (Vol 3, Part F, 3.4.1.1); 0x80-0x9F are Earshot's
/// application errors.
public enum LinkATTError {
  public static let invalidOffset: UInt8 = 0x07
  public static let insufficientAuthorization: UInt8 = 0x08
  public static let invalidAttributeValueLength: UInt8 = 0x0D
  public static let insufficientAuthentication: UInt8 = 0x05
  /// The first byte is not a request opcode.
  public static let unknownOpcode: UInt8 = 0x80
  /// A field is outside its documented range.
  public static let valueOutOfRange: UInt8 = 0x81
  /// A text field is empty or not UTF-8.
  public static let invalidText: UInt8 = 0x82
}

/// Why a write (or, on the central side, a notification) could not be
/// decoded. Each maps to one ATT error code; none is ever a crash.
public enum LinkDecodeError: Error, Equatable, Sendable, CustomStringConvertible {
  /// Fewer than two bytes: no opcode and sequence number.
  case tooShort(Int)
  case unknownOpcode(UInt8)
  /// The payload length does not fit the opcode.
  case badLength(opcode: UInt8, got: Int, expected: String)
  case outOfRange(field: String, value: Int)
  case invalidText(field: String)
  /// A long write (offset ≠ 0): every message fits in one write.
  case nonZeroOffset(Int)
  /// Central side: a status, result or notification code it does not know.
  case unknownCode(field: String, value: UInt8)
  /// Legacy mode: a volume write is exactly 8 bytes.
  case legacyLength(Int)
  case legacyNotFinite
  case legacyOutOfRange(Double)

  public var attErrorCode: UInt8 {
    switch self {
    case .tooShort, .badLength, .legacyLength: LinkATTError.invalidAttributeValueLength
    case .unknownOpcode, .unknownCode: LinkATTError.unknownOpcode
    case .outOfRange, .legacyNotFinite, .legacyOutOfRange: LinkATTError.valueOutOfRange
    case .invalidText: LinkATTError.invalidText
    case .nonZeroOffset: LinkATTError.invalidOffset
    }
  }

  public var description: String {
    switch self {
    case .tooShort(let n):
      "a request needs at least 2 bytes (opcode, sequence number), got \(n)"
    case .unknownOpcode(let op):
      "unknown opcode 0x\(hex2(op)); see docs/link-protocol.md for the opcodes"
    case .badLength(let op, let got, let expected):
      "opcode 0x\(hex2(op)) takes \(expected) payload bytes, got \(got)"
    case .outOfRange(let field, let value):
      "\(field) \(value) is out of range"
    case .invalidText(let field):
      "\(field) must be 1 or more bytes of UTF-8"
    case .nonZeroOffset(let o):
      "write at offset \(o): every message must fit in one write (raise the ATT MTU)"
    case .unknownCode(let field, let value):
      "unknown \(field) 0x\(hex2(value))"
    case .legacyLength(let n):
      "a legacy volume write is an 8-byte double, got \(n) bytes"
    case .legacyNotFinite:
      "the legacy volume is not a finite number"
    case .legacyOutOfRange(let v):
      "the legacy volume \(v) is outside 0...1"
    }
  }
}

@inline(__always) func hex2(_ b: UInt8) -> String {
  let digits = Array("0123456789abcdef".utf8)
  return String(decoding: [digits[Int(b >> 4)], digits[Int(b & 0xF)]], as: UTF8.self)
}

/// How an ATT error code travels back through BlueZ's D-Bus GATT API: the
/// application answers WriteValue with a D-Bus error and bluetoothd turns
/// it into the ATT code (src/gatt-database.c, dbus_error_to_att_ecode).
/// Application codes 0x80-0x9F ride in org.bluez.Error.Failed's message.
public enum BlueZGattError {
  public static func dbusError(forATT code: UInt8) -> (name: String, message: String) {
    switch code {
    case LinkATTError.invalidAttributeValueLength:
      return ("org.bluez.Error.InvalidValueLength", "invalid value length")
    case LinkATTError.invalidOffset: return ("org.bluez.Error.InvalidOffset", "invalid offset")
    case LinkATTError.insufficientAuthorization, LinkATTError.insufficientAuthentication:
      return ("org.bluez.Error.NotAuthorized", "not authorized")
    case 0x80...0x9F: return ("org.bluez.Error.Failed", "0x" + hex2(code))
    default: return ("org.bluez.Error.Failed", "0x80")
    }
  }
}
