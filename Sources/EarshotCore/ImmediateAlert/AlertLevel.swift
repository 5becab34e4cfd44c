/// The Alert Level characteristic (0x2A06) of the Immediate Alert (0x1802)
/// and Link Loss (0x1803) services: one byte, 0 no alert, 1 mild, 2 high.
/// Values 3...255 are reserved by the specification and rejected here.
public enum AlertLevel: UInt8, CaseIterable, Equatable, Sendable, CustomStringConvertible {
  case none = 0
  case mild = 1
  case high = 2

  /// The Immediate Alert service UUID (16-bit, Bluetooth SIG assigned).
  public static let immediateAlertService: UInt16 = 0x1802
  /// The Link Loss service UUID.
  public static let linkLossService: UInt16 = 0x1803
  /// The Alert Level characteristic UUID.
  public static let characteristic: UInt16 = 0x2A06

  /// The UUIDs in the 128-bit form BlueZ's D-Bus API takes.
  public static let immediateAlertServiceUUID = bluetoothBaseUUID(immediateAlertService)
  public static let linkLossServiceUUID = bluetoothBaseUUID(linkLossService)
  public static let characteristicUUID = bluetoothBaseUUID(characteristic)

  /// A 16-bit SIG UUID on the Bluetooth Base UUID.
  public static func bluetoothBaseUUID(_ short: UInt16) -> String {
    let hex = String(short, radix: 16)
    return "0000" + String(repeating: "0", count: 4 - hex.count) + hex
      + "-0000-1000-8000-00805f9b34fb"
  }

  /// Why bytes are not an Alert Level.
  public enum DecodeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Alert Level is exactly one byte.
    case length(Int)
    /// A reserved value (3...255).
    case reserved(UInt8)
    /// A long write at an offset (the value has no parts).
    case nonZeroOffset(Int)

    /// The ATT error a GATT server answers a Write Request with (a Write
    /// Command gets no answer). A reserved value is the link's "value out of
    /// range" (0x81): BlueZ 5.66 passes only 0x80-0x9F from an application,
    /// not the common profile error 0xFF.
    public var attErrorCode: UInt8 {
      switch self {
      case .length: LinkATTError.invalidAttributeValueLength
      case .reserved: LinkATTError.valueOutOfRange
      case .nonZeroOffset: LinkATTError.invalidOffset
      }
    }

    public var description: String {
      switch self {
      case .length(let n): "alert level must be 1 byte, got \(n)"
      case .reserved(let v): "alert level \(v) is reserved (0 none, 1 mild, 2 high)"
      case .nonZeroOffset(let o): "alert level written at offset \(o) (must be 0)"
      }
    }
  }

  /// Reads a written value; exactly one byte of 0, 1 or 2 at offset 0.
  public static func decode(_ bytes: some Collection<UInt8>, offset: Int = 0)
    -> Result<AlertLevel, DecodeError>
  {
    guard offset == 0 else { return .failure(.nonZeroOffset(offset)) }
    guard bytes.count == 1, let byte = bytes.first else { return .failure(.length(bytes.count)) }
    guard let level = AlertLevel(rawValue: byte) else { return .failure(.reserved(byte)) }
    return .success(level)
  }

  /// The value to write (one byte).
  public var encoded: [UInt8] { [rawValue] }

  /// Reads a name as users type it ("none"/"off", "mild", "high") or a number.
  public init?(name: String) {
    switch name.lowercased() {
    case "none", "off", "no", "0": self = .none
    case "mild", "1": self = .mild
    case "high", "2": self = .high
    default: return nil
    }
  }

  public var description: String {
    switch self {
    case .none: "none"
    case .mild: "mild"
    case .high: "high"
    }
  }
}
