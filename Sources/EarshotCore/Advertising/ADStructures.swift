/// Walks the AD structures of advertising or scan-response data:
/// `length, type, value[length-1]`, repeated.
///
/// A zero length ends the data cleanly (controllers pad with zeros); a
/// structure that claims more bytes than remain sets `isMalformed` and ends
/// the walk, so nothing past a corrupt length is ever read.
public struct ADWalker: IteratorProtocol, Sequence {
  @usableFromInline var reader: ByteReader
  public private(set) var isMalformed = false

  @inlinable public init(_ data: UnsafeRawBufferPointer) {
    reader = ByteReader(data)
  }

  public mutating func next() -> ADStructure? {
    guard let length = reader.u8(), length > 0 else { return nil }
    guard let type = reader.u8(), let value = reader.take(Int(length) - 1) else {
      isMalformed = true
      return nil
    }
    return ADStructure(type: type, value: value)
  }

  /// The TX Power Level AD field (dBm at the antenna), if the data holds
  /// one and walks cleanly (a value inside malformed data is not trusted).
  public static func txPowerLevel(_ data: UnsafeRawBufferPointer) -> Int8? {
    var walker = ADWalker(data)
    var found: Int8? = nil
    while let ad = walker.next() {
      if ad.type == ADType.txPowerLevel, ad.value.count == 1 {
        found = Int8(bitPattern: ad.value[0])
      }
    }
    return walker.isMalformed ? nil : found
  }

  /// Whether the whole data walks cleanly.
  public static func isWellFormed(_ data: UnsafeRawBufferPointer) -> Bool {
    var walker = ADWalker(data)
    while walker.next() != nil {}
    return !walker.isMalformed
  }
}

/// One AD structure; `value` is borrowed from the data being walked.
public struct ADStructure {
  public let type: UInt8
  public let value: UnsafeRawBufferPointer

  public var typeName: String { ADType.name(of: type) }
}

/// Names of the AD types Earshot prints (Bluetooth Assigned Numbers, 2.3).
public enum ADType {
  public static let flags: UInt8 = 0x01
  public static let shortLocalName: UInt8 = 0x08
  public static let completeLocalName: UInt8 = 0x09
  public static let txPowerLevel: UInt8 = 0x0A
  public static let serviceData16: UInt8 = 0x16
  public static let manufacturerData: UInt8 = 0xFF

  private static let names: [UInt8: String] = [
    0x01: "flags", 0x02: "uuid16_incomplete", 0x03: "uuid16", 0x04: "uuid32_incomplete",
    0x05: "uuid32", 0x06: "uuid128_incomplete", 0x07: "uuid128", 0x08: "short_name",
    0x09: "name", 0x0A: "tx_power", 0x0D: "class_of_device", 0x14: "solicit_uuid16",
    0x15: "solicit_uuid128", 0x16: "service_data16", 0x17: "public_target",
    0x18: "random_target", 0x19: "appearance", 0x1A: "adv_interval", 0x1B: "le_address",
    0x1C: "le_role", 0x20: "service_data32", 0x21: "service_data128", 0x24: "uri",
    0x2A: "mesh_message", 0x2B: "mesh_beacon", 0x2C: "big_info", 0x2D: "broadcast_code",
    0x30: "broadcast_name", 0xFF: "manufacturer_data",
  ]

  public static func name(of type: UInt8) -> String {
    names[type] ?? "type_0x" + String(type, radix: 16)
  }
}
