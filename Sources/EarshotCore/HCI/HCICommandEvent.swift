/// The controller's answer to a command: Command Complete (with return
/// parameters, the first of which is the status for almost every command)
/// or Command Status (for commands that complete later).
public enum CommandResponse: Equatable, Sendable {
  case complete(opcode: HCIOpcode, returnParameters: [UInt8])
  case status(opcode: HCIOpcode, status: HCIStatus)

  public var opcode: HCIOpcode {
    switch self {
    case .complete(let op, _), .status(let op, _): op
    }
  }

  /// The command's status: Command Status carries it; Command Complete has
  /// it as the first return parameter.
  public var status: HCIStatus {
    switch self {
    case .status(_, let s): s
    case .complete(_, let p): HCIStatus(rawValue: p.first ?? 0xFF)
    }
  }

  /// Decodes a bare HCI event (event code first); `nil` for other events
  /// and for malformed ones. Opcode 0 (a bare credit update) is `nil` too.
  public init?(event: UnsafeRawBufferPointer) {
    var r = ByteReader(event)
    guard let code = r.u8(), let len = r.u8(), Int(len) == r.remaining else { return nil }
    switch HCIEventCode(rawValue: code) {
    case .commandComplete:  // Command Complete: Num_HCI_Command_Packets, Command_Opcode, Return_Parameters
      guard r.skip(1), let op = r.u16le(), op != 0 else { return nil }
      self = .complete(opcode: HCIOpcode(rawValue: op), returnParameters: Array(r.rest()))
    case .commandStatus:  // Command Status: Status, Num_HCI_Command_Packets, Command_Opcode
      guard let status = r.u8(), r.skip(1), let op = r.u16le(), r.isAtEnd, op != 0 else {
        return nil
      }
      self = .status(opcode: HCIOpcode(rawValue: op), status: HCIStatus(rawValue: status))
    default:
      return nil
    }
  }
}

/// The controller's Supported_Commands bitmask (64 octets) from Read Local
/// Supported Commands (Core Vol 4 Part E 6.27).
public struct SupportedCommands: Equatable, Sendable {
  public let octets: [UInt8]

  public init(octets: [UInt8]) { self.octets = octets }

  /// From Read Local Supported Commands' return parameters (status first).
  public init?(returnParameters p: [UInt8]) {
    guard p.count >= 65, p[0] == 0 else { return nil }
    octets = Array(p[1..<65])
  }

  public func supports(_ bit: Bit) -> Bool {
    bit.octet < octets.count && octets[bit.octet] & (1 << bit.bit) != 0
  }

  /// Position of one command in the mask.
  public struct Bit: Sendable {
    public let octet: Int
    public let bit: Int
    public init(octet: Int, bit: Int) {
      self.octet = octet
      self.bit = bit
    }
    public static let remoteNameRequest = Bit(octet: 2, bit: 3)
    public static let leSetScanParameters = Bit(octet: 26, bit: 2)
    public static let leSetScanEnable = Bit(octet: 26, bit: 3)
    public static let leSetExtendedScanParameters = Bit(octet: 37, bit: 5)
    public static let leSetExtendedScanEnable = Bit(octet: 37, bit: 6)
  }

  /// Extended scanning needs both extended scan commands (as the kernel
  /// decides too); the HCI version says nothing reliable about it.
  public var hasExtendedScanning: Bool {
    supports(.leSetExtendedScanParameters) && supports(.leSetExtendedScanEnable)
  }

  public var hasLegacyScanning: Bool {
    supports(.leSetScanParameters) && supports(.leSetScanEnable)
  }
}

/// Which scan commands to use.
public enum ScanCommandSet: String, Sendable {
  case legacy
  case extended

  /// Extended when the controller has both extended scan commands, else
  /// legacy; `nil` if it cannot scan at all. `forced` overrides the choice.
  public static func choose(_ commands: SupportedCommands, forced: ScanCommandSet? = nil)
    -> ScanCommandSet?
  {
    switch forced {
    case .extended: return .extended
    case .legacy: return .legacy
    case nil:
      if commands.hasExtendedScanning { return .extended }
      if commands.hasLegacyScanning { return .legacy }
      return nil
    }
  }

  /// The commands that set parameters and start scanning.
  public func start(type: ScanType, timing: ScanTiming, filterDuplicates: Bool = false)
    -> [HCICommand]
  {
    switch self {
    case .legacy:
      [
        .leSetScanParameters(type: type, timing: timing),
        .leSetScanEnable(true, filterDuplicates: filterDuplicates),
      ]
    case .extended:
      [
        .leSetExtendedScanParameters(type: type, timing: timing),
        .leSetExtendedScanEnable(true, filterDuplicates: filterDuplicates),
      ]
    }
  }

  /// Scanning off (before new parameters: the controller refuses them
  /// while it scans).
  public var disable: HCICommand {
    switch self {
    case .legacy: .leSetScanEnable(false)
    case .extended: .leSetExtendedScanEnable(false)
    }
  }

  /// The commands that undo `start`: scanning off, then the parameters
  /// back to the Core spec's defaults (HCI has no command to read the
  /// previous ones; the kernel sets its own before every scan it starts).
  public var restore: [HCICommand] {
    switch self {
    case .legacy:
      [disable, .leSetScanParameters(type: .passive, timing: .specDefault)]
    case .extended:
      [disable, .leSetExtendedScanParameters(type: .passive, timing: .specDefault)]
    }
  }
}
