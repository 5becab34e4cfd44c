/// Turns an LE link-layer advertising-channel PDU, as a sniffer captures it,
/// into the advertising report a scanning controller would have produced.
public enum LinkLayer {
  /// The access address of every advertising-channel packet.
  public static let advertisingAccessAddress: UInt32 = 0x8E89_BED6

  public enum Outcome {
    case report(AdvertisingReport)
    /// Not an advertising report: data channel, SCAN_REQ, CONNECT_IND.
    case ignored
    /// A well-formed advertising PDU that holds no report by itself; counted
    /// under its reason.
    case skipped(Skip)
    case malformed(Fault)
  }

  /// Why a well-formed extended advertising PDU gives no report.
  public enum Skip: Hashable, Sendable, CustomStringConvertible {
    /// An ADV_EXT_IND (or a chain link) with an AuxPtr and no AdvData.
    case headerOnly
    /// No AdvA: anonymous advertising, or an AUX_CHAIN_IND's later data.
    case noAdvertiserAddress

    public var description: String {
      switch self {
      case .headerOnly: "extended advertising header only: the data is in the AUX_ADV_IND"
      case .noAdvertiserAddress:
        "extended advertising without AdvA: anonymous, or an AUX_CHAIN_IND continuing data"
      }
    }
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
    /// An extended PDU whose extended header does not fit: `header` bytes
    /// said, `available` in the PDU after its first byte.
    case extendedHeaderPastPDU(header: Int, available: Int)
    /// An extended header too short for the fields its flags announce.
    case extendedHeaderTooShort(header: Int, needed: Int)
    /// AdvMode 0b11: reserved (an extended advertisement is connectable or
    /// scannable, never both).
    case reservedAdvMode

    public var description: String {
      switch self {
      case .noAccessAddress(let n): "a link-layer packet of \(n) bytes has no access address"
      case .noHeader(let n): "a link-layer packet of \(n) bytes ends inside the PDU header"
      case .lengthPastPacket(let length, let available):
        "link-layer PDU length \(length) runs past the packet (\(available) bytes follow the header)"
      case .lengthInvalid(let pdu, let length, let allowed):
        "link-layer \(pdu) PDU length \(length) is invalid (\(allowed))"
      case .extendedHeaderPastPDU(let header, let available):
        "extended advertising header length \(header) runs past the PDU "
          + "(\(available) bytes follow the length byte)"
      case .extendedHeaderTooShort(let header, let needed):
        "extended advertising header length \(header) is too short for the fields its "
          + "flags announce (\(needed) bytes)"
      case .reservedAdvMode:
        "extended advertising AdvMode 3 is reserved (connectable and scannable at once)"
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
    case 0x7: return extended(payload, h0: h0, rssi: rssi)
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

  /// A legacy advertising PDU as a sniffer captures it (the inverse of
  /// `decode` for ADV_IND, ADV_NONCONN_IND, ADV_SCAN_IND and SCAN_RSP):
  /// access address, header, AdvA, data, and its CRC-24. `nil` for other
  /// PDUs or more than 31 bytes of data.
  public static func legacyPDU(
    _ pdu: AdvertisingPDU, address: BDAddress, addressType: AddressType, data: [UInt8]
  ) -> [UInt8]? {
    let type: UInt8
    switch pdu {
    case .advInd: type = 0x0
    case .advNonconnInd: type = 0x2
    case .scanRsp: type = 0x4
    case .advScanInd: type = 0x6
    case .advDirectInd, .extended: return nil
    }
    guard data.count <= 31 else { return nil }
    var w = ByteWriter(capacity: 15 + data.count)
    w.u32le(advertisingAccessAddress)
    w.u8(type | (addressType == .public ? 0 : 0x40))
    w.u8(UInt8(6 + data.count))
    w.address(address)
    w.append(data)
    w.append(crcBytes(Array(w.bytes[4...])))
    return w.bytes
  }

  /// The link-layer channel (0–39; 37–39 advertise) of a LINKTYPE 256
  /// pseudo-header's RF channel (0–39 by frequency: (MHz − 2402) / 2),
  /// and back.
  public static func channel(rf: UInt8) -> UInt8? {
    switch rf {
    case 0: 37
    case 12: 38
    case 39: 39
    case 1...11: rf - 1
    case 13...38: rf - 2
    default: nil
    }
  }

  public static func rf(channel: UInt8) -> UInt8? {
    switch channel {
    case 37: 0
    case 38: 12
    case 39: 39
    case 0...10: channel + 1
    case 11...36: channel + 2
    default: nil
    }
  }

  /// Bytes of each optional extended-header field, in flag-bit order:
  /// AdvA, TargetA, CTEInfo, ADI, AuxPtr, SyncInfo, TxPower.
  static let extendedFieldSizes = [6, 6, 1, 2, 3, 18, 1]

  /// PDU type 7 (ADV_EXT_IND, AUX_ADV_IND, AUX_SCAN_RSP, AUX_CHAIN_IND):
  /// the Common Extended Advertising Payload Format (Core 5.x, Vol 6,
  /// Part B, 2.3.4). The whole PDU is checked before anything is read out.
  static func extended(_ payload: UnsafeRawBufferPointer, h0: UInt8, rssi: Int8?) -> Outcome {
    var p = ByteReader(payload)
    guard let first = p.u8() else {
      return .malformed(
        .lengthInvalid(
          pdu: "extended advertising", length: 0,
          allowed: "at least 1: the extended header length and AdvMode"))
    }
    let headerLength = Int(first & 0x3F)
    let advMode = first >> 6
    guard advMode != 3 else { return .malformed(.reservedAdvMode) }
    guard let header = p.take(headerLength) else {
      return .malformed(.extendedHeaderPastPDU(header: headerLength, available: p.remaining))
    }
    let advData = p.rest()
    var flags: UInt8 = 0
    var h = ByteReader(header)
    // A header of 0 bytes has no flags byte either: no fields at all.
    if let f = h.u8() {
      flags = f
      let needed =
        1
        + extendedFieldSizes.enumerated().reduce(0) {
          $0 + (flags & (1 << $1.offset) != 0 ? $1.element : 0)
        }
      guard needed <= headerLength else {
        return .malformed(.extendedHeaderTooShort(header: headerLength, needed: needed))
      }
    }
    // The header fits: read the fields (the rest of it is ACAD).
    func has(_ bit: Int) -> Bool { flags & (1 << bit) != 0 }
    let address = has(0) ? h.address() : nil
    let target = has(1) ? h.address() : nil
    if has(2) { _ = h.skip(1) }  // CTEInfo
    let adi = has(3) ? h.u16le() : nil
    let auxPtr = has(4) && h.skip(3)
    if has(5) { _ = h.skip(18) }  // SyncInfo
    let txPower = has(6) ? h.u8().map { Int8(bitPattern: $0) } : nil
    guard let address else { return .skipped(.noAdvertiserAddress) }
    if advData.count == 0 && auxPtr { return .skipped(.headerOnly) }
    var properties = ExtendedEventProperties()
    if advMode & 0x1 != 0 { properties.insert(.connectable) }
    if advMode & 0x2 != 0 { properties.insert(.scannable) }
    if target != nil { properties.insert(.directed) }
    return .report(
      AdvertisingReport(
        pdu: .extended(properties), address: address,
        addressType: h0 & 0x40 != 0 ? .random : .public, directAddress: target, rssi: rssi,
        txPower: txPower, sid: adi.map { UInt8($0 >> 12) },
        // Data with an AuxPtr continues in an AUX_CHAIN_IND, which is not
        // followed: what is here is delivered as truncated.
        dataStatus: auxPtr ? .truncated : .complete, data: advData))
  }

  /// Returns `nil` for packets that are not advertising reports
  /// (data channel, SCAN_REQ, CONNECT_IND, header-only extended PDUs) and sets
  /// `malformed` when the packet cannot be the PDU it says it is
  /// (`decode` says why).
  public static func report(
    _ packet: UnsafeRawBufferPointer, rssi: Int8?, malformed: inout Bool
  ) -> AdvertisingReport? {
    switch decode(packet, rssi: rssi) {
    case .report(let r): return r
    case .ignored, .skipped: return nil
    case .malformed:
      malformed = true
      return nil
    }
  }
}
