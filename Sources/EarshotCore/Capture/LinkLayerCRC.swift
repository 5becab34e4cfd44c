/// What a capture says about a sniffed packet's CRC-24: its sniffer checked
/// it and found it right or wrong, or nothing says (link type 251, or a
/// LINKTYPE 256 pseudo-header without "CRC checked"), and the replay checks
/// it itself where it can.
public enum LinkLayerCRC: Equatable, Sendable {
  case unchecked
  case valid
  case invalid
}

extension LinkLayer {
  /// The CRC initial value of every advertising-channel packet (Core 5.x,
  /// Vol 6, Part B, 3.1.1); a connection's own comes in its CONNECT_IND.
  public static let advertisingCRCInit: UInt32 = 0x55_5555

  /// The link layer's CRC-24 over `bytes` (the PDU: header and payload),
  /// as Vol 6, Part B, 3.1.1 draws it: polynomial x²⁴ + x¹⁰ + x⁹ + x⁶ + x⁴ +
  /// x³ + x + 1, a shift register preset with `initial`, each byte fed
  /// least significant bit first as it goes on air. The result is in the
  /// order the packet carries it: its three CRC bytes read little-endian.
  public static func crc24(_ bytes: UnsafeRawBufferPointer, initial: UInt32 = advertisingCRCInit)
    -> UInt32
  {
    // Register position 0 is the bit sent first and the spec presets it
    // with the init's most significant bit: held here as a right-shifting
    // register, that is the init reversed, and the polynomial reversed too.
    var state: UInt32 = 0
    for i in 0..<24 where initial & (1 << i) != 0 { state |= 1 << (23 - i) }
    for byte in bytes {
      state = state >> 8 ^ crcTable[Int((state ^ UInt32(byte)) & 0xFF)]
    }
    return state
  }

  /// The register after shifting in 8 bits whose feedback was `i`: a byte
  /// at a time instead of a bit.
  static let crcTable: [UInt32] = (0..<256).map { (i: UInt32) in
    var state = i
    for _ in 0..<8 { state = state & 1 != 0 ? state >> 1 ^ 0xDA_6000 : state >> 1 }
    return state
  }

  /// Whether a sniffed packet (access address first, CRC last) is to be
  /// decoded: its sniffer's verdict when there is one; otherwise, for an
  /// advertising-channel packet whose PDU fits, the CRC-24 it carries
  /// checked here. A packet that cannot be checked (a data channel's CRC
  /// init is not known, a PDU that runs past the packet) passes, and the
  /// decoder says what it is.
  public static func crcPasses(_ packet: UnsafeRawBufferPointer, _ crc: LinkLayerCRC) -> Bool {
    switch crc {
    case .valid: return true
    case .invalid: return false
    case .unchecked: break
    }
    var r = ByteReader(packet)
    guard r.u32le() == advertisingAccessAddress, r.skip(1), let length = r.u8() else {
      return true
    }
    let end = 6 + Int(length)
    guard packet.count >= end + 3 else { return true }
    let carried = UInt32(packet[end]) | UInt32(packet[end + 1]) << 8 | UInt32(packet[end + 2]) << 16
    return crc24(UnsafeRawBufferPointer(rebasing: packet[4..<end])) == carried
  }

  /// The three CRC bytes an advertising-channel PDU (header and payload)
  /// carries after it.
  public static func crcBytes(_ pdu: [UInt8], initial: UInt32 = advertisingCRCInit) -> [UInt8] {
    let crc = pdu.withUnsafeBytes { crc24($0, initial: initial) }
    return [UInt8(crc & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc >> 16)]
  }
}
