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
}

extension LinkConfig: ConfigSection {
  public static let section = "link"
  public static let summary =
    "The BLE device link: accessories reach this agent over GATT (bonded devices only)."
  public static let keys: [ConfigKey<LinkConfig>] = [
    .bool("enabled", "Register the BLE GATT service and advertise it.", \.enabled),
    .init(
      "allow",
      "'bonded' (any bonded device) or a list of addresses 'AA:BB:CC:DD:EE:FF, ...' (bonded too).",
      set: { s, v in s.allow = try LinkAllow.parse(v) }, show: { $0.allow.description }),
    .choice(
      "security",
      "'authenticated' (MITM-protected pairing, the default) or 'encrypted' (Just Works, for devices without display or keys).",
      \.security),
    .bool(
      "legacy_remote_volume",
      "Also serve the hobby remote-volume protocol (REQ_NAME, REQ_VOLUME, 8-byte doubles).",
      \.legacyRemoteVolume),
    .init(
      "name", "Advertised name and REQ_NAME answer (1-20 bytes); empty = the host name.",
      set: { s, v in
        let n = v.trimmingSpaces
        guard n.utf8.count <= maxNameBytes else {
          throw ConfigValueError(
            "expected a name of at most \(maxNameBytes) bytes of UTF-8 (it must fit the advertisement), got '\(v)'"
          )
        }
        s.name = n.isEmpty ? nil : n
      }, show: { $0.name ?? "" }),
    .init(
      "adapter", "BlueZ adapter such as hci0; empty = the first one.",
      set: { s, v in
        guard !v.isEmpty else {
          s.adapter = nil
          return
        }
        guard v.hasPrefix("hci"), let n = Int(v.dropFirst(3)), n >= 0 else {
          throw ConfigValueError("expected an adapter name such as hci0, or empty, got '\(v)'")
        }
        s.adapter = v
      }, show: { $0.adapter ?? "" }),
  ]
}

public enum LinkSecurityLevel: String, Sendable, Equatable, CaseIterable {
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
        throw ConfigValueError(
          "'\(item)' is not an address like AA:BB:CC:DD:EE:FF; allow is 'bonded' or a list of addresses"
        )
      }
      set.insert(a)
    }
    guard !set.isEmpty else {
      throw ConfigValueError("allow is empty; write 'bonded' or a list of addresses")
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
