/// What the scanner's adapter is doing; reported on every change.
public enum AdapterState: Equatable, Sendable {
  /// Earshot's own scan is running.
  case scanning(adapter: String, commands: ScanCommandSet, type: ScanType)
  /// Another program (usually bluetoothd through the kernel) is scanning:
  /// Earshot reads the reports it receives, with its parameters and its
  /// duplicate filter, and changes nothing.
  case sharing(adapter: String)
  /// Powered off; scanning resumes when it is powered on again.
  case down(adapter: String)
  /// Gone (unplugged, driver unloaded); scanning resumes when it comes back.
  case removed(adapter: String)
  /// Scanning could not be restarted; it is retried.
  case failed(adapter: String, reason: String)

  public var adapter: String {
    switch self {
    case .scanning(let a, _, _), .sharing(let a), .down(let a), .removed(let a), .failed(let a, _):
      a
    }
  }

  /// Whether reports are flowing.
  public var isReceiving: Bool {
    switch self {
    case .scanning, .sharing: true
    default: false
    }
  }

  public var message: String {
    switch self {
    case .scanning(let a, let c, let t):
      "\(a): scanning (\(c.rawValue) commands, \(t == .active ? "active" : "passive"))"
    case .sharing(let a):
      "\(a): another program (bluetoothd?) is already scanning (Command Disallowed); "
        + "reading the reports that are already flowing instead, with its parameters "
        + "(duplicates may be filtered). Earshot's own scan starts when that scan stops for 5 s."
    case .down(let a):
      "\(a) is down (powered off); scanning resumes when it is powered on"
    case .removed(let a):
      "\(a) was removed; scanning resumes when it comes back"
    case .failed(let a, let reason):
      "\(a): cannot scan now (\(reason)); retrying"
    }
  }
}

/// Why the shell could not open an adapter or get a command answered, as
/// far as the supervisor's decisions go; `reason` is what the user reads.
public struct ScanFailure: Equatable, Sendable {
  public enum Kind: Equatable, Sendable {
    /// The kernel lists no adapter at all.
    case noAdapter
    /// The adapter asked for is not there, or went away meanwhile.
    case gone
    /// Powered off (and not to be, or could not be, powered on).
    case down
    /// Waiting cannot fix it (a missing capability): a first start fails
    /// at once even when told to wait for the adapter.
    case permanent
    /// The controller answered a command with this error status.
    case refused(HCIOpcode, HCIStatus)
    /// Anything else (a timeout, a system error).
    case other
  }

  public var kind: Kind
  public var reason: String

  public init(_ kind: Kind, reason: String) {
    self.kind = kind
    self.reason = reason
  }

  /// The controller refused a command: what it means and what to try.
  public static func refused(adapter: String, _ opcode: HCIOpcode, _ status: HCIStatus)
    -> ScanFailure
  {
    var s = "\(adapter) refused \(opcode.name): \(status)."
    switch status {
    case .unknownCommand:
      s +=
        " The controller does not implement it; try the other command set (--legacy or --extended)."
    case .commandDisallowed:
      s +=
        " Another program is using the controller in a way that excludes scanning; stop it or try again."
    case .invalidParameters:
      s += " The controller rejects Earshot's scan parameters; try --legacy or --passive."
    default:
      s += " Check `btmon` for what the controller is doing."
    }
    return ScanFailure(.refused(opcode, status), reason: s)
  }
}
