/// Asking a BR/EDR device by name: the page that tells whether a phone
/// that has gone quiet on LE (locked, advertising rarely) is still here.
extension HCICommand {
  /// Remote Name Request (Core Vol 4 Part E 7.1.19): page scan repetition
  /// mode R2 (what a phone not in an inquiry uses by default), no clock
  /// offset known. The controller answers with Command Status at once and
  /// with Remote Name Request Complete when the page succeeds or times out
  /// (5.12 s by default).
  public static func remoteNameRequest(_ address: BDAddress) -> HCICommand {
    var w = ByteWriter(capacity: 10)
    w.address(address)
    w.u8(0x02)  // Page_Scan_Repetition_Mode: R2
    w.u8(0x00)  // reserved
    w.u16le(0x0000)  // Clock_Offset: not known
    return HCICommand(.remoteNameRequest, w.bytes)
  }
}

/// Remote Name Request Complete (Core Vol 4 Part E 7.7.7): whether the
/// device answered its page. The name itself is not kept: that it answered
/// is what presence needs.
public struct RemoteNameResult: Equatable, Sendable {
  public let address: BDAddress
  public let status: HCIStatus
  public var answered: Bool { status.isSuccess }

  public init(address: BDAddress, status: HCIStatus) {
    self.address = address
    self.status = status
  }

  /// From a bare event (code first); nil for another event or a malformed
  /// one (the name is 248 bytes; a shorter event is refused whole).
  public init?(event: UnsafeRawBufferPointer) {
    var r = ByteReader(event)
    guard r.u8() == HCIEventCode.remoteNameRequestComplete.rawValue, let length = r.u8(),
      Int(length) == r.remaining, length == 255, let status = r.u8(), let address = r.address()
    else { return nil }
    self.init(address: address, status: HCIStatus(rawValue: status))
  }

  /// Whether `address` can be paged: public addresses can; one of the
  /// static random form (its two top bits set) is an LE-only identity.
  public static func pageable(_ address: BDAddress) -> Bool {
    address.raw >> 46 != 0b11
  }
}
