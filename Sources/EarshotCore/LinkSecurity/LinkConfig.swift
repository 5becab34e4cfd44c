/// `[link]` in the config: the BLE device link.
public struct LinkConfig: Sendable, Equatable {
  /// Register the GATT service and advertise it.
  public var enabled = false
  /// Who may write: bonded devices, or only these bonded devices.
  public var allow = LinkAllow.bonded
  /// The link security a characteristic demands of the connection.
  public var security = LinkSecurityLevel.authenticated
  /// Also serve the hobby remote-volume app's protocol (docs/link-protocol.md).
  public var legacyRemoteVolume = false
  /// The advertised local name and the legacy REQ_NAME answer; `nil`: the host name.
  public var name: String? = nil
  /// BlueZ adapter (`hci0`); `nil`: the first one BlueZ lists.
  public var adapter: String? = nil

  public init() {}

  /// Longest name: it must fit the advertising data next to the 128-bit
  /// service UUID (31 bytes in all), so 20 bytes of UTF-8 at most.
  public static let maxNameBytes = 20

  /// The keys as a table: name, help, parser, printer (the config module
  /// builds `[link]` from it).
  public struct Key: Sendable {
    public let name: String
    public let help: String
    public let set: @Sendable (inout LinkConfig, String) throws -> Void
    public let show: @Sendable (LinkConfig) -> String
  }

  public static let keys: [Key] = [
    Key(
      name: "enabled", help: "register the BLE GATT service and advertise it (true/false)",
      set: { $0.enabled = try parseBool($1) }, show: { "\($0.enabled)" }),
    Key(
      name: "allow",
      help:
        "'bonded' (any bonded device) or a list of addresses 'AA:BB:CC:DD:EE:FF, ...' (bonded too)",
      set: { $0.allow = try LinkAllow.parse($1) }, show: { $0.allow.description }),
    Key(
      name: "security",
      help:
        "'authenticated' (MITM-protected pairing, the default) or 'encrypted' (Just Works, for devices without display or keys)",
      set: {
        guard let level = LinkSecurityLevel(rawValue: $1) else {
          throw LinkConfigError("expected 'authenticated' or 'encrypted', got '\($1)'")
        }
        $0.security = level
      }, show: { $0.security.rawValue }),
    Key(
      name: "legacy_remote_volume",
      help: "also serve the hobby remote-volume protocol (REQ_NAME, REQ_VOLUME, 8-byte doubles)",
      set: { $0.legacyRemoteVolume = try parseBool($1) }, show: { "\($0.legacyRemoteVolume)" }),
    Key(
      name: "name", help: "advertised name and REQ_NAME answer (default: the host name)",
      set: {
        let n = $1.trimmingSpaces
        guard !n.isEmpty, n.utf8.count <= maxNameBytes else {
          throw LinkConfigError("a name of 1 to \(maxNameBytes) bytes of UTF-8, got '\($1)'")
        }
        $0.name = n
      }, show: { $0.name ?? "" }),
    Key(
      name: "adapter", help: "BlueZ adapter such as hci0 (default: the first one)",
      set: {
        guard $1.hasPrefix("hci"), let n = Int($1.dropFirst(3)), n >= 0 else {
          throw LinkConfigError("expected an adapter name such as hci0, got '\($1)'")
        }
        $0.adapter = $1
      }, show: { $0.adapter ?? "" }),
  ]

  /// Sets one key; unknown keys throw with the list of known ones.
  public mutating func set(_ key: String, _ value: String) throws {
    guard let k = Self.keys.first(where: { $0.name == key }) else {
      throw LinkConfigError(
        "unknown key '\(key)' in [link]; keys: \(Self.keys.map(\.name).joined(separator: ", "))")
    }
    try k.set(&self, value.trimmingSpaces)
  }

  static func parseBool(_ v: String) throws -> Bool {
    switch v.lowercased() {
    case "true", "yes", "on", "1": return true
    case "false", "no", "off", "0": return false
    default: throw LinkConfigError("expected true or false, got '\(v)'")
    }
  }
}

public struct LinkConfigError: Error, Equatable, Sendable, CustomStringConvertible {
  public var message: String
  public init(_ message: String) { self.message = message }
  public var description: String { message }
}

public enum LinkSecurityLevel: String, Sendable, Equatable {
  /// Encrypted with a key from MITM-protected pairing (passkey or numeric
  /// comparison): BlueZ flags `encrypt-authenticated-*`.
  case authenticated
  /// Encrypted, any pairing (Just Works too): BlueZ flags `encrypt-*`.
  case encrypted
}

/// `[link] allow`.
public enum LinkAllow: Sendable, Equatable, CustomStringConvertible {
  /// Any device bonded with this laptop.
  case bonded
  /// Only these addresses (identity addresses, as `bluetoothctl devices` shows), bonded too.
  case addresses(Set<BDAddress>)

  public static func parse(_ text: String) throws -> LinkAllow {
    let t = text.trimmingSpaces
    if t == "bonded" { return .bonded }
    var set = Set<BDAddress>()
    for item in t.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }) {
      guard let a = BDAddress(item) else {
        throw LinkConfigError(
          "'\(item)' is not an address like AA:BB:CC:DD:EE:FF; allow is 'bonded' or a list of addresses"
        )
      }
      set.insert(a)
    }
    guard !set.isEmpty else {
      throw LinkConfigError("allow is empty; write 'bonded' or a list of addresses")
    }
    return .addresses(set)
  }

  public var description: String {
    switch self {
    case .bonded: "bonded"
    case .addresses(let set): set.sorted().map(\.description).joined(separator: ", ")
    }
  }
}

extension StringProtocol {
  var trimmingSpaces: String {
    var s = Substring(self)
    while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
    while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
    return String(s)
  }
}
