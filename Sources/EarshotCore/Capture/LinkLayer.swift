/// Turns an LE link-layer advertising-channel PDU, as a sniffer captures it,
/// into the advertising report a scanning controller would have produced.
public enum LinkLayer {
  /// The access address of every advertising-channel packet.
  public static let advertisingAccessAddress: UInt32 = 0x8E89_BED6

  public enum Outcome {
    case report(AdvertisingReport)
    /// Not an advertising report: data channel, SCAN_REQ, CONNECT_IND,
    /// extended-header PDUs.
    case ignored
    case malformed(Fault)
  }

  /// Why a packet cannot be the PDU it says it is.
  public enum Fault: Equatable, Sendable, CustomStringConvertible {
    /// Fewer than 4 bytes: no access address.
    case noAccessAddress(packet: Int)
    /// The packet ends inside the 2-byte PDU header.
    case noHeader(packet: Int)
    /// The header's length is more than the packet holds after it.
    case lengthPastPacket(length: Int, available: Int)
    /// A length the PDU type does not allow (`allowed` says which).
    case lengthInvalid(pdu: String, length: Int, allowed: String)

    public var description: String {
      switch self {
      case .noAccessAddress(let n): "a link-layer packet of \(n) bytes has no access address"
      case .noHeader(let n): "a link-layer packet of \(n) bytes ends inside the PDU header"
      case .lengthPastPacket(let length, let available):
        "link-layer PDU length \(length) runs past the packet (\(available) bytes follow the header)"
      case .lengthInvalid(let pdu, let length, let allowed):
        "link-layer \(pdu) PDU length \(length) is invalid (\(allowed))"
      }
    }
  }

  /// Decodes one sniffed packet, starting at the access address.
  public static func decode(_ packet: UnsafeRawBufferPointer, rssi: Int8?) -> Outcome {
    var r = ByteReader(packet)
    guard let aa = r.u32le() else { return .malformed(.noAccessAddress(packet: packet.count)) }
    guard aa == advertisingAccessAddress else { return .ignored }
    guard let h0 = r.u8(), let length = r.u8() else {
      return .malformed(.noHeader(packet: packet.count))
    }
    guard let payload = r.take(Int(length)) else {
      return .malformed(.lengthPastPacket(length: Int(length), available: r.remaining))
    }
    let pdu: AdvertisingPDU
    let name: String
    switch h0 & 0x0F {
    case 0x0: (pdu, name) = (.advInd, "ADV_IND")
    case 0x1: (pdu, name) = (.advDirectInd, "ADV_DIRECT_IND")
    case 0x2: (pdu, name) = (.advNonconnInd, "ADV_NONCONN_IND")
    case 0x4: (pdu, name) = (.scanRsp, "SCAN_RSP")
    case 0x6: (pdu, name) = (.advScanInd, "ADV_SCAN_IND")
    default: return .ignored
    }
    let addressType: AddressType = h0 & 0x40 != 0 ? .random : .public
    var p = ByteReader(payload)
    if pdu == .advDirectInd {
      // AdvA and TargetA, nothing else.
      guard length == 12, let address = p.address(), let target = p.address() else {
        return .malformed(
          .lengthInvalid(pdu: name, length: Int(length), allowed: "it is always 12"))
      }
      return .report(
        AdvertisingReport(
          pdu: pdu, address: address, addressType: addressType, directAddress: target,
          rssi: rssi, data: UnsafeRawBufferPointer(start: nil, count: 0)))
    }
    // AdvA, then up to 31 bytes of advertising data.
    guard (6...37).contains(length), let address = p.address() else {
      return .malformed(
        .lengthInvalid(
          pdu: name, length: Int(length),
          allowed: "6 to 37: a 6-byte address and up to 31 bytes of data"))
    }
    return .report(
      AdvertisingReport(
        pdu: pdu, address: address, addressType: addressType, rssi: rssi, data: p.rest()))
  }

  /// Returns `nil` for packets that are not advertising reports
  /// (data channel, SCAN_REQ, CONNECT_IND, extended-header PDUs) and sets
  /// `malformed` when the packet cannot be the PDU it says it is
  /// (`decode` says why).
  public static func report(
    _ packet: UnsafeRawBufferPointer, rssi: Int8?, malformed: inout Bool
  ) -> AdvertisingReport? {
    switch decode(packet, rssi: rssi) {
    case .report(let r): return r
    case .ignored: return nil
    case .malformed:
      malformed = true
      return nil
    }
  }
}
