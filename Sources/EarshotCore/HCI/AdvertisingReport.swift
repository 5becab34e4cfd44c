/// One advertising report as the controller delivered it, legacy or
/// extended, with its AD data borrowed from the event buffer.
///
/// `data` points into the bytes being decoded (or the decoder's fragment
/// buffer) and is valid only inside the callback that receives the report;
/// copy it (`Array(report.data)`) to keep it.
public struct AdvertisingReport {
  public var pdu: AdvertisingPDU
  public var address: BDAddress
  public var addressType: AddressType
  /// The target address of a directed advertisement, if any.
  public var directAddress: BDAddress?
  /// Received signal strength in dBm; `nil` when the controller says it is
  /// unavailable (the rule for each report type is `ReportRSSI`'s).
  public var rssi: Int8?
  /// Advertiser's transmit power from an extended report; `nil` if unavailable.
  public var txPower: Int8?
  public var primaryPHY: UInt8
  public var secondaryPHY: UInt8
  /// Advertising set ID; `nil` when not present (0xFF) or in a legacy report.
  public var sid: UInt8?
  public var dataStatus: DataStatus
  public var data: UnsafeRawBufferPointer

  public init(
    pdu: AdvertisingPDU, address: BDAddress, addressType: AddressType,
    directAddress: BDAddress? = nil, rssi: Int8?, txPower: Int8? = nil,
    primaryPHY: UInt8 = 1, secondaryPHY: UInt8 = 0, sid: UInt8? = nil,
    dataStatus: DataStatus = .complete, data: UnsafeRawBufferPointer
  ) {
    self.pdu = pdu
    self.address = address
    self.addressType = addressType
    self.directAddress = directAddress
    self.rssi = rssi
    self.txPower = txPower
    self.primaryPHY = primaryPHY
    self.secondaryPHY = secondaryPHY
    self.sid = sid
    self.dataStatus = dataStatus
    self.data = data
  }
}

/// Whether the report's data is all there.
public enum DataStatus: UInt8, Sendable {
  case complete = 0
  case incomplete = 1  // more fragments follow
  case truncated = 2  // the controller gave up; data is partial

  public var name: String {
    switch self {
    case .complete: "complete"
    case .incomplete: "incomplete"
    case .truncated: "truncated"
    }
  }
}

/// The kind of advertising PDU behind a report: one of the five legacy PDUs
/// (whether it arrived in a legacy or an extended report), or an extended
/// advertisement described by its event properties.
public enum AdvertisingPDU: Equatable, Sendable {
  case advInd
  case advDirectInd
  case advScanInd
  case advNonconnInd
  case scanRsp
  case extended(ExtendedEventProperties)

  /// Legacy report Event_Type values 0...4.
  @inlinable public init?(legacyEventType t: UInt8) {
    switch t {
    case 0: self = .advInd
    case 1: self = .advDirectInd
    case 2: self = .advScanInd
    case 3: self = .advNonconnInd
    case 4: self = .scanRsp
    default: return nil
    }
  }

  /// Maps an extended report's event type; with the legacy bit set only the
  /// six combinations the Core spec lists are valid.
  @inlinable public init?(extendedEventType raw: UInt16) {
    let props = ExtendedEventProperties(rawValue: raw & 0x1F)
    guard props.contains(.legacy) else {
      self = .extended(props)
      return
    }
    switch raw & 0x1F {
    case 0x13: self = .advInd
    case 0x15: self = .advDirectInd
    case 0x12: self = .advScanInd
    case 0x10: self = .advNonconnInd
    case 0x1B, 0x1A: self = .scanRsp
    default: return nil
    }
  }

  /// The name printed in `event_type`.
  public var name: String {
    switch self {
    case .advInd: "adv_ind"
    case .advDirectInd: "adv_direct_ind"
    case .advScanInd: "adv_scan_ind"
    case .advNonconnInd: "adv_nonconn_ind"
    case .scanRsp: "scan_rsp"
    case .extended(let p): "ext" + p.suffix
    }
  }

  public var isScanResponse: Bool {
    switch self {
    case .scanRsp: true
    case .extended(let p): p.contains(.scanResponse)
    default: false
    }
  }

  /// Legacy PDUs that a SCAN_RSP can follow (a scannable advertisement).
  public var isScannable: Bool {
    switch self {
    case .advInd, .advScanInd: true
    case .extended(let p): p.contains(.scannable) && !p.contains(.scanResponse)
    default: false
    }
  }
}

/// Event_Type bits 0-4 of an LE Extended Advertising Report.
public struct ExtendedEventProperties: OptionSet, Sendable, Hashable {
  public let rawValue: UInt16
  @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }
  public static let connectable = Self(rawValue: 0x01)
  public static let scannable = Self(rawValue: 0x02)
  public static let directed = Self(rawValue: 0x04)
  public static let scanResponse = Self(rawValue: 0x08)
  public static let legacy = Self(rawValue: 0x10)

  /// "_conn_scan" style suffix for `event_type` (e.g. `ext_conn`).
  var suffix: String {
    var s = ""
    if contains(.connectable) { s += "_conn" }
    if contains(.scannable) { s += "_scan" }
    if contains(.directed) { s += "_directed" }
    if contains(.scanResponse) { s += "_rsp" }
    return s
  }
}
