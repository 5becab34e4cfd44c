/// The keys file: what `earshot keys export` hands the unprivileged agent.
/// It holds only what resolving needs (identity address and type, IRK)
/// and a name for display; none of the store's link or long-term keys.
///
///     [device "AA:BB:CC:DD:EE:FF"]
///     type = public
///     irk = ec0234a357c8ad05341010a60a397d9b
///     name = Alice's phone
///
/// `irk` is written most significant byte first, like the config's
/// `irk =`, so a key copied from here into a region means the same key.
public enum BondedKeysFile {
  /// More devices than anyone bonds; a longer file is refused, so memory
  /// stays bounded whatever the file holds.
  public static let maxDevices = 1024
  /// Names are for display; longer ones are cut (the INI reader takes
  /// lines of up to 198 bytes).
  public static let maxNameBytes = 120

  public static func render(_ keys: [BondedKey], source: String) -> String {
    var out = "# Identity keys of the devices bonded with this machine, exported from\n"
    out += "# \(source) by `earshot keys export`. Rewritten when bonds change.\n"
    for key in keys.sorted(by: { $0.identity < $1.identity }) {
      out += "\n[device \"\(key.identity)\"]\n"
      out += "type = \(key.identityType.rawValue)\n"
      if let irk = key.irk { out += "irk = \(irk.hex)\n" }
      if let name = key.name, !name.isEmpty { out += "name = \(escape(name))\n" }
    }
    return out
  }

  /// The devices a keys file lists, and what was wrong with the rest
  /// (each naming file, line and key; a device with an error is left out).
  public static func parse(_ doc: ConfigDocument) -> (keys: [BondedKey], errors: [ConfigError]) {
    var errors = doc.syntaxErrors
    var keys: [BondedKey] = []
    var broken: Set<String> = []
    var bySection: [String: Int] = [:]
    for header in doc.headers {
      guard bySection[header.name] == nil else { continue }
      guard let address = deviceAddress(header.name) else {
        errors.append(
          ConfigError(
            file: doc.file, line: header.line, section: header.name,
            message: "expected [device \"AA:BB:CC:DD:EE:FF\"]"))
        broken.insert(header.name)
        continue
      }
      guard keys.count < maxDevices else {
        errors.append(
          ConfigError(
            file: doc.file, line: header.line, section: header.name,
            message: "more than \(maxDevices) devices; the rest are ignored"))
        break
      }
      bySection[header.name] = keys.count
      keys.append(BondedKey(identity: address, identityType: .public))
    }
    for entry in doc.entries {
      guard let index = bySection[entry.section] else { continue }
      func fail(_ message: String) {
        errors.append(
          ConfigError(
            file: doc.file, line: entry.line, section: entry.section, key: entry.key,
            message: message))
        broken.insert(entry.section)
      }
      switch entry.key {
      case "type":
        guard let type = BondedKey.IdentityType(rawValue: entry.value) else {
          fail("expected public or static, got '\(entry.value)'")
          continue
        }
        keys[index].identityType = type
      case "irk":
        do {
          keys[index].irk = try IdentityResolvingKey(hex: entry.value)
        } catch {
          fail(error.description)
        }
      case "name":
        keys[index].name = unescape(entry.value)
      default:
        fail("unknown key; expected type, irk or name")
      }
    }
    let kept = keys.filter { key in !broken.contains("device \"\(key.identity)\"") }
    return (kept, errors)
  }

  static func deviceAddress(_ section: String) -> BDAddress? {
    guard section.hasPrefix("device \""), section.hasSuffix("\""), section.count == 26 else {
      return nil
    }
    return BDAddress(section.dropFirst(8).dropLast())
  }

  /// A name on one INI line: control characters become spaces, `\` and
  /// `;` are escaped (libinih takes " ;" as the start of a comment), and
  /// it is cut to `maxNameBytes` on a character boundary.
  static func escape(_ name: String) -> String {
    var out = ""
    var bytes = 0
    for c in name {
      var piece: String
      switch c {
      case "\\": piece = "\\\\"
      case ";": piece = "\\;"
      default:
        piece =
          c.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F } ? String(c) : " "
      }
      if out.isEmpty, piece == " " { piece = "\\s" }
      bytes += piece.utf8.count
      guard bytes <= maxNameBytes else { break }
      out += piece
    }
    if out.hasSuffix(" ") { out = String(out.dropLast()) + "\\s" }
    return out
  }

  static func unescape(_ text: String) -> String {
    BlueZBondStore.unescapeKeyFileString(text)
  }
}
