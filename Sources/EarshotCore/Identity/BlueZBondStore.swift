/// Reads BlueZ's bond store: bluetoothd keeps one directory per adapter
/// under /var/lib/bluetooth, and in it one directory per remote device,
/// named by the device's identity address, holding an `info` key file.
/// The shell lists the directories and reads each `info` with the INI
/// reader; this turns one into a `BondedKey`.
///
/// What bluetoothd writes (src/adapter.c `store_irk`, src/device.c
/// `update_technologies`, checked against BlueZ's source):
/// - `[IdentityResolvingKey] Key=` is the 16 key bytes as 32 upper-case hex
///   digits in the order the kernel's management interface hands them
///   over, which is least significant byte first (the order of the SMP
///   Identity Information PDU). Older versions wrote a `0x` prefix, which
///   bluetoothd still accepts, so this does too.
/// - `[General] AddressType=` is `public` or `static`, written only for a
///   device that has LE; a device with a key but no address type is taken
///   as public, as bluetoothd does.
/// - `[General] Name=` and `Alias=` are GLib key-file strings (`\s`, `\n`,
///   `\t`, `\r`, `\\` escapes).
public enum BlueZBondStore {
  /// Sections whose presence means the device is bonded (holds a key).
  static let keySections: Set<String> = [
    "IdentityResolvingKey", "LinkKey", "LongTermKey", "PeripheralLongTermKey",
    "SlaveLongTermKey",
  ]

  /// Whether a directory name in an adapter directory names a device (the
  /// others are `cache`, `settings`, `identity`, `attributes`).
  public static func deviceAddress(directoryName: String) -> BDAddress? {
    directoryName.utf8.count == 17 ? BDAddress(directoryName) : nil
  }

  /// The bonded device described by one `info` file, nil when the device
  /// holds no key (bluetoothd also stores devices that were only seen or
  /// trusted). A malformed key or address type is an error naming the
  /// file, line and key; lines the INI reader could not read (bluetoothd
  /// writes some longer than it takes, such as long service lists) are
  /// ignored unless they are needed.
  public static func bondedKey(address: BDAddress, info: ConfigDocument) throws(ConfigError)
    -> BondedKey?
  {
    let sections = Set(info.headers.map(\.name))
    guard !sections.isDisjoint(with: keySections) else { return nil }
    func entry(_ section: String, _ key: String) -> ConfigEntry? {
      info.entries.last { $0.section == section && $0.key == key }
    }
    var irk: IdentityResolvingKey? = nil
    if sections.contains("IdentityResolvingKey") {
      guard let key = entry("IdentityResolvingKey", "Key") else {
        let line = info.headers.first { $0.name == "IdentityResolvingKey" }?.line ?? 0
        throw ConfigError(
          file: info.file, line: line, section: "IdentityResolvingKey", key: "Key",
          message: "the section has no readable Key line")
      }
      irk = try storedKey(key, file: info.file)
    }
    var type = BondedKey.IdentityType.public
    if let stored = entry("General", "AddressType") {
      switch stored.value {
      case "public": type = .public
      case "static": type = .staticRandom
      default:
        throw ConfigError(
          file: info.file, line: stored.line, section: "General", key: "AddressType",
          message: "expected public or static, got '\(stored.value)'")
      }
    }
    let name = (entry("General", "Alias") ?? entry("General", "Name")).map {
      unescapeKeyFileString($0.value)
    }
    return BondedKey(identity: address, identityType: type, irk: irk, name: name)
  }

  /// `Key=` as bluetoothd writes it: optional `0x`, then 16 bytes in hex,
  /// least significant byte first.
  static func storedKey(_ entry: ConfigEntry, file: String) throws(ConfigError)
    -> IdentityResolvingKey
  {
    var digits = Substring(entry.value)
    if digits.hasPrefix("0x") { digits = digits.dropFirst(2) }
    let fail = { (message: String) in
      ConfigError(
        file: file, line: entry.line, section: "IdentityResolvingKey", key: "Key",
        message: message)
    }
    guard digits.utf8.count == 32 else {
      throw fail("expected 32 hex digits (16 bytes), got \(digits.utf8.count) characters")
    }
    var bytes = [UInt8]()
    bytes.reserveCapacity(16)
    var i = digits.startIndex
    while i < digits.endIndex {
      let next = digits.index(i, offsetBy: 2)
      guard let byte = UInt8(digits[i..<next], radix: 16) else {
        throw fail("'\(digits[i..<next])' is not a hex byte")
      }
      bytes.append(byte)
      i = next
    }
    do {
      return try IdentityResolvingKey(leastSignificantFirst: bytes)
    } catch {
      throw fail(error.description)
    }
  }

  /// Undoes GLib's key-file string escapes.
  public static func unescapeKeyFileString(_ text: String) -> String {
    guard text.contains("\\") else { return text }
    var out = ""
    var escaped = false
    for c in text {
      if escaped {
        switch c {
        case "s": out.append(" ")
        case "n": out.append("\n")
        case "t": out.append("\t")
        case "r": out.append("\r")
        default: out.append(c)
        }
        escaped = false
      } else if c == "\\" {
        escaped = true
      } else {
        out.append(c)
      }
    }
    return out
  }
}
