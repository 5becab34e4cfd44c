/// Appends fixed-width integers to a byte array, for encoders (HCI commands,
/// btsnoop records, link protocol frames).
public struct ByteWriter {
  public var bytes: [UInt8]

  public init(capacity: Int = 64) {
    bytes = []
    bytes.reserveCapacity(capacity)
  }

  public mutating func u8(_ v: UInt8) { bytes.append(v) }
  public mutating func i8(_ v: Int8) { bytes.append(UInt8(bitPattern: v)) }
  public mutating func u16le(_ v: UInt16) {
    bytes.append(UInt8(v & 0xFF))
    bytes.append(UInt8(v >> 8))
  }
  public mutating func u16be(_ v: UInt16) { u16le(v.byteSwapped) }
  public mutating func u32be(_ v: UInt32) {
    for shift in stride(from: 24, through: 0, by: -8) {
      bytes.append(UInt8(truncatingIfNeeded: v >> UInt32(shift)))
    }
  }
  public mutating func u32le(_ v: UInt32) {
    for shift in stride(from: 0, through: 24, by: 8) {
      bytes.append(UInt8(truncatingIfNeeded: v >> UInt32(shift)))
    }
  }
  public mutating func u64be(_ v: UInt64) {
    for shift in stride(from: 56, through: 0, by: -8) {
      bytes.append(UInt8(truncatingIfNeeded: v >> UInt64(shift)))
    }
  }
  public mutating func address(_ a: BDAddress) {
    for i in 0..<6 { bytes.append(UInt8(truncatingIfNeeded: a.raw >> UInt64(8 * i))) }
  }
  public mutating func append(_ b: some Sequence<UInt8>) { bytes.append(contentsOf: b) }
}
