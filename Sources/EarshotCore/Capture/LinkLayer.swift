/// Turns an LE link-layer advertising-channel PDU, as a sniffer captures it,
/// into the advertising report a scanning controller would have produced.
public enum LinkLayer {
  /// The access address of every advertising-channel packet.
  public static let advertisingAccessAddress: UInt32 = 0x8E89_BED6

  /// Returns `nil` for packets that are not advertising reports
  /// (data channel, SCAN_REQ, CONNECT_IND, extended-header PDUs) and sets
  /// `malformed` when the PDU's length runs past the packet.
  public static func report(
    _ packet: UnsafeRawBufferPointer, rssi: Int8?, malformed: inout Bool
  ) -> AdvertisingReport? {
    var r = ByteReader(packet)
    guard let aa = r.u32le() else {
      malformed = true
      return nil
    }
    guard aa == advertisingAccessAddress else { return nil }
    guard let h0 = r.u8(), let length = r.u8(), let payload = r.take(Int(length)) else {
      malformed = true
      return nil
    }
    let pdu: AdvertisingPDU
    switch h0 & 0x0F {
    case 0x0: pdu = .advInd
    case 0x1: pdu = .advDirectInd
    case 0x2: pdu = .advNonconnInd
    case 0x4: pdu = .scanRsp
    case 0x6: pdu = .advScanInd
    default: return nil
    }
    var p = ByteReader(payload)
    guard let address = p.address() else {
      malformed = true
      return nil
    }
    let addressType: AddressType = h0 & 0x40 != 0 ? .random : .public
    if pdu == .advDirectInd {
      guard payload.count == 12, let target = p.address() else {
        malformed = true
        return nil
      }
      return AdvertisingReport(
        pdu: pdu, address: address, addressType: addressType, directAddress: target,
        rssi: rssi, data: UnsafeRawBufferPointer(start: nil, count: 0))
    }
    let data = p.rest()
    guard data.count <= 31 else {
      malformed = true
      return nil
    }
    return AdvertisingReport(
      pdu: pdu, address: address, addressType: addressType, rssi: rssi, data: data)
  }
}
