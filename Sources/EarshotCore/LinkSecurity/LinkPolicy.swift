/// Who may use the link: decided per write from what BlueZ tells about the
/// connection. A refusal is answered with an ATT error and logged.
public struct LinkPolicy: Sendable {
  public let config: LinkConfig

  public init(config: LinkConfig) { self.config = config }

  /// What the shell knows about the writer.
  public struct Writer: Equatable, Sendable {
    public var address: BDAddress
    /// Device1.Bonded (or Paired where BlueZ has no Bonded): keys are stored.
    public var bonded: Bool
    /// The connection is encrypted at the configured level. BlueZ enforces
    /// the characteristic's `encrypt-*` flags before it calls WriteValue,
    /// so through BlueZ this is true; it is checked again here on purpose.
    public var encrypted: Bool

    public init(address: BDAddress, bonded: Bool, encrypted: Bool) {
      self.address = address
      self.bonded = bonded
      self.encrypted = encrypted
    }
  }

  public enum Refusal: Equatable, Sendable, CustomStringConvertible {
    case disabled
    case notEncrypted
    case notBonded
    case notAllowed

    public var description: String {
      switch self {
      case .disabled: "the link is disabled ([link] enabled = false)"
      case .notEncrypted: "the connection is not encrypted; bond the device first"
      case .notBonded:
        "the device is not bonded; pair and bond it with this laptop (bluetoothctl pair ADDRESS)"
      case .notAllowed: "the device is not in [link] allow; add its address there"
      }
    }

    /// Every refusal is "Insufficient Authorization": the one code BlueZ
    /// lets an application return for it (org.bluez.Error.NotAuthorized).
    public var attErrorCode: UInt8 { LinkATTError.insufficientAuthorization }
  }

  public enum Decision: Equatable, Sendable {
    case accept
    case refuse(Refusal)
  }

  /// The rules, in order: enabled, encrypted, bonded, then the allowlist.
  public func decide(_ w: Writer) -> Decision {
    guard config.enabled else { return .refuse(.disabled) }
    guard w.encrypted else { return .refuse(.notEncrypted) }
    guard w.bonded else { return .refuse(.notBonded) }
    switch config.allow {
    case .bonded: return .accept
    case .addresses(let set): return set.contains(w.address) ? .accept : .refuse(.notAllowed)
    }
  }
}

/// Log lines for refusals without letting a neighbour flood the log: the
/// first refusal of a device for a reason is logged at once, repeats at most
/// once per `interval` with how many were left out. Time is injected.
public struct RefusalLog: Sendable {
  public let intervalNanos: UInt64
  private var last: [Key: (at: UInt64, suppressed: Int)] = [:]

  private struct Key: Hashable, Sendable {
    let address: BDAddress
    let refusal: LinkPolicy.Refusal
  }

  public init(intervalSeconds: Double = 60) {
    intervalNanos = UInt64(intervalSeconds * 1e9)
  }

  /// The line to log now, or `nil` when it is a repeat within the interval.
  public mutating func record(
    _ refusal: LinkPolicy.Refusal, address: BDAddress, what: String, now: UInt64
  ) -> String? {
    let key = Key(address: address, refusal: refusal)
    if let entry = last[key], now &- entry.at < intervalNanos {
      last[key] = (entry.at, entry.suppressed + 1)
      return nil
    }
    let suppressed = last[key]?.suppressed ?? 0
    last[key] = (now, 0)
    var line = "link: refused \(what) from \(address): \(refusal)"
    if suppressed > 0 { line += " (\(suppressed) more since the last line)" }
    return line
  }
}

extension LinkPolicy.Refusal: Hashable {}
