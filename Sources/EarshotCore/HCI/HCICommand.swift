/// An HCI command: opcode and parameters, and the encodings of the ones
/// the scanner sends. Pure: the shell writes `packet` to the socket.
public struct HCICommand: Equatable, Sendable {
  public let opcode: HCIOpcode
  public let parameters: [UInt8]

  public init(_ opcode: HCIOpcode, _ parameters: [UInt8] = []) {
    self.opcode = opcode
    self.parameters = parameters
  }

  /// The H4 packet: indicator 0x01, opcode (LE), parameter length, parameters.
  public var packet: [UInt8] {
    var w = ByteWriter(capacity: 4 + parameters.count)
    w.u8(H4PacketType.command.rawValue)
    w.u16le(opcode.rawValue)
    w.u8(UInt8(parameters.count))
    w.append(parameters)
    return w.bytes
  }
}

/// A command opcode: OGF in the top 6 bits, OCF in the low 10.
public struct HCIOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  public let rawValue: UInt16
  public init(rawValue: UInt16) { self.rawValue = rawValue }
  public init(ogf: UInt8, ocf: UInt16) { rawValue = UInt16(ogf) << 10 | (ocf & 0x3FF) }

  public var ogf: UInt8 { UInt8(rawValue >> 10) }
  public var ocf: UInt16 { rawValue & 0x3FF }

  public static let reset = HCIOpcode(ogf: 0x03, ocf: 0x0003)
  public static let readLocalVersion = HCIOpcode(ogf: 0x04, ocf: 0x0001)
  public static let readLocalSupportedCommands = HCIOpcode(ogf: 0x04, ocf: 0x0002)
  public static let readBDAddr = HCIOpcode(ogf: 0x04, ocf: 0x0009)
  public static let leSetAdvertisingParameters = HCIOpcode(ogf: 0x08, ocf: 0x0006)
  public static let leSetAdvertisingData = HCIOpcode(ogf: 0x08, ocf: 0x0008)
  public static let leSetAdvertisingEnable = HCIOpcode(ogf: 0x08, ocf: 0x000A)
  public static let leSetScanParameters = HCIOpcode(ogf: 0x08, ocf: 0x000B)
  public static let leSetScanEnable = HCIOpcode(ogf: 0x08, ocf: 0x000C)
  public static let leSetExtendedScanParameters = HCIOpcode(ogf: 0x08, ocf: 0x0041)
  public static let leSetExtendedScanEnable = HCIOpcode(ogf: 0x08, ocf: 0x0042)
  public static let remoteNameRequest = HCIOpcode(ogf: 0x01, ocf: 0x0019)

  public var name: String {
    switch self {
    case .reset: "Reset"
    case .readLocalVersion: "Read Local Version Information"
    case .readLocalSupportedCommands: "Read Local Supported Commands"
    case .readBDAddr: "Read BD_ADDR"
    case .leSetAdvertisingParameters: "LE Set Advertising Parameters"
    case .leSetAdvertisingData: "LE Set Advertising Data"
    case .leSetAdvertisingEnable: "LE Set Advertising Enable"
    case .leSetScanParameters: "LE Set Scan Parameters"
    case .leSetScanEnable: "LE Set Scan Enable"
    case .leSetExtendedScanParameters: "LE Set Extended Scan Parameters"
    case .leSetExtendedScanEnable: "LE Set Extended Scan Enable"
    case .remoteNameRequest: "Remote Name Request"
    default: "command 0x" + String(rawValue, radix: 16)
    }
  }

  public var description: String {
    "\(name) (OGF 0x\(String(ogf, radix: 16)), OCF 0x\(String(ocf, radix: 16)))"
  }
}

/// Active scanning sends SCAN_REQ and gets SCAN_RSP; passive only listens.
public enum ScanType: UInt8, Sendable {
  case passive = 0
  case active = 1
}

/// Scan timing in units of 0.625 ms.
public struct ScanTiming: Equatable, Sendable {
  public var interval: UInt16
  public var window: UInt16
  public init(interval: UInt16, window: UInt16) {
    self.interval = interval
    self.window = window
  }
  /// 60 ms every 60 ms: listen all the time, so no report is missed.
  public static let continuous = ScanTiming(interval: 0x0060, window: 0x0060)
  /// The Core spec's power-on default (10 ms every 10 ms).
  public static let specDefault = ScanTiming(interval: 0x0010, window: 0x0010)
}

extension HCICommand {
  public static let readLocalSupportedCommands = HCICommand(.readLocalSupportedCommands)

  /// LE Set Scan Parameters (Core Vol 4 Part E 7.8.10).
  public static func leSetScanParameters(
    type: ScanType, timing: ScanTiming, ownAddressType: UInt8 = 0, filterPolicy: UInt8 = 0
  ) -> HCICommand {
    var w = ByteWriter(capacity: 7)
    w.u8(type.rawValue)
    w.u16le(timing.interval)
    w.u16le(timing.window)
    w.u8(ownAddressType)
    w.u8(filterPolicy)
    return HCICommand(.leSetScanParameters, w.bytes)
  }

  /// LE Set Scan Enable (7.8.11).
  public static func leSetScanEnable(_ enable: Bool, filterDuplicates: Bool = false) -> HCICommand {
    HCICommand(.leSetScanEnable, [enable ? 1 : 0, filterDuplicates ? 1 : 0])
  }

  /// LE Set Extended Scan Parameters (7.8.64) on the LE 1M PHY.
  public static func leSetExtendedScanParameters(
    type: ScanType, timing: ScanTiming, ownAddressType: UInt8 = 0, filterPolicy: UInt8 = 0
  ) -> HCICommand {
    var w = ByteWriter(capacity: 8)
    w.u8(ownAddressType)
    w.u8(filterPolicy)
    w.u8(0x01)  // Scanning_PHYs: LE 1M only; one set of parameters follows
    w.u8(type.rawValue)
    w.u16le(timing.interval)
    w.u16le(timing.window)
    return HCICommand(.leSetExtendedScanParameters, w.bytes)
  }

  /// LE Set Extended Scan Enable (7.8.65): no duration, no period (scan
  /// until disabled).
  public static func leSetExtendedScanEnable(_ enable: Bool, filterDuplicates: Bool = false)
    -> HCICommand
  {
    HCICommand(.leSetExtendedScanEnable, [enable ? 1 : 0, filterDuplicates ? 1 : 0, 0, 0, 0, 0])
  }

  /// If this command enables or disables scanning, whether it enables.
  /// (Used to follow scan changes other programs make on the adapter.)
  public var scanEnableValue: Bool? {
    guard opcode == .leSetScanEnable || opcode == .leSetExtendedScanEnable,
      let first = parameters.first
    else { return nil }
    return first != 0
  }
}

extension HCICommand {
  /// Parses an H4 command packet (indicator 0x01 first) or a bare one.
  public init?(packet: UnsafeRawBufferPointer) {
    var r = ByteReader(packet)
    if packet.count >= 4 && packet[0] == H4PacketType.command.rawValue
      && Int(packet[3]) == packet.count - 4
    {
      _ = r.u8()
    }
    guard let op = r.u16le(), let len = r.u8(), Int(len) == r.remaining else { return nil }
    self.init(HCIOpcode(rawValue: op), Array(r.rest()))
  }
}
