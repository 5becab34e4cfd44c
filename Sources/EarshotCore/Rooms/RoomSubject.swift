/// What rooms place: an iBeacon, or a device known by its identity (a
/// phone or watch that advertises from rotating private addresses, each
/// resolved by the agent that hears it).
public typealias RoomSubject = BeaconOrDevice<TrackedDeviceID>

extension BeaconOrDevice where Device == TrackedDeviceID {
  /// The topic segment: `uuid-major-minor`, `device-aabbccddeeff` or
  /// `irk-TAG`, lower case. The three never look alike, so a topic names
  /// its subject without anything else.
  public var slug: String {
    switch self {
    case .beacon(let b): MQTTTopics.slug(b)
    case .device(.address(let a)): "device-" + Self.hex(a.raw, digits: 12)
    case .device(.key(let tag)): "irk-" + tag
    }
  }

  public init?(slug: Substring) {
    if slug.hasPrefix("device-") {
      let hex = slug.dropFirst("device-".count)
      guard hex.utf8.count == 12, hex.allSatisfy(\.isHexDigit), hex == hex.lowercased()[...],
        let raw = UInt64(hex, radix: 16)
      else { return nil }
      self = .device(.address(BDAddress(raw: raw)))
    } else if slug.hasPrefix("irk-") {
      guard let d = TrackedDeviceID(tag: slug.dropFirst("irk-".count)) else { return nil }
      self = .device(d)
    } else if let b = RoomTopics.beacon(slug: slug) {
      self = .beacon(b)
    } else {
      return nil
    }
  }

  static func hex(_ v: UInt64, digits: Int) -> String {
    let s = String(v, radix: 16)
    return String(repeating: "0", count: max(0, digits - s.count)) + s
  }
}

/// The stable id of a tracked device, the same on every agent whatever
/// address it sends from: its identity address, or for a key given by hand
/// (`irk:KEY`) the key's tag (eight hex digits of a hash of it: outputs
/// and topics never carry the key itself). Written as the `[region]`
/// hooks' `EARSHOT_DEVICE` writes devices.
public enum TrackedDeviceID: Hashable, Sendable, Comparable, CustomStringConvertible {
  case address(BDAddress)
  case key(tag: String)

  /// From its printed form: `AA:BB:CC:DD:EE:FF` or `irk#TAG`.
  public init?(_ text: String) {
    if text.hasPrefix("irk#") {
      self.init(tag: text.dropFirst(4))
    } else if let a = BDAddress(text) {
      self = .address(a)
    } else {
      return nil
    }
  }

  init?(tag: Substring) {
    guard tag.utf8.count == 8, tag.allSatisfy(\.isHexDigit) else { return nil }
    self = .key(tag: tag.lowercased())
  }

  public var description: String {
    switch self {
    case .address(let a): a.description
    case .key(let tag): "irk#" + tag
    }
  }

  public static func < (a: TrackedDeviceID, b: TrackedDeviceID) -> Bool {
    switch (a, b) {
    case (.address(let x), .address(let y)): x < y
    case (.key(let x), .key(let y)): x < y
    case (.address, .key): true
    case (.key, .address): false
    }
  }
}

/// A `[rooms] track` device: `device:ADDRESS` (an identity address; a
/// device bonded with this machine also matches from its private
/// addresses, through the bond's key) or `irk:KEY` (a key given by hand),
/// each optionally named first (`phone=device:…`) for the aggregator's
/// output and Home Assistant.
public struct TrackedDevice: Sendable, Equatable, CustomStringConvertible {
  public var name: String?
  public var address: BDAddress?
  public var irk: IdentityResolvingKey?

  public init(name: String? = nil, address: BDAddress) {
    self.name = name
    self.address = address
  }

  public init(name: String? = nil, irk: IdentityResolvingKey) {
    self.name = name
    self.irk = irk
  }

  /// What topics and outputs call it.
  public var id: TrackedDeviceID {
    if let address { return .address(address) }
    return .key(tag: irk!.tag)
  }

  /// Whether a resolved device is this one: by its identity address or by
  /// its key (a bonded device known to one agent by both matches either).
  public func matches(_ d: DeviceIdentity) -> Bool {
    if let address, d.address == address { return true }
    if let irk, d.irk == irk { return true }
    return false
  }

  public var description: String {
    let what = address.map { "device:\($0)" } ?? "irk:" + (irk?.hex ?? "")
    return name.map { "\($0)=" + what } ?? what
  }

  /// `[NAME=]device:ADDRESS` or `[NAME=]irk:KEY`; `nil` when the word is
  /// neither (a beacon, perhaps); throws when it is one but malformed.
  static func parse(_ word: String) throws -> TrackedDevice? {
    var name: String? = nil
    var rest = Substring(word)
    if let eq = word.firstIndex(of: "=") {
      let n = word[..<eq]
      guard !n.isEmpty, n.utf8.count <= 64,
        n.unicodeScalars.allSatisfy({
          ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
            || $0 == "-" || $0 == "_" || $0 == "."
        })
      else {
        throw ConfigValueError(
          "'\(n)' is not a device name: use letters, digits, '-', '_' or '.' (up to 64), as in phone=device:AA:BB:CC:DD:EE:FF"
        )
      }
      name = String(n)
      rest = word[word.index(after: eq)...]
    }
    if rest.hasPrefix("device:") {
      let text = rest.dropFirst("device:".count)
      guard let a = BDAddress(text) else {
        throw ConfigValueError(
          "'\(text)' is not a Bluetooth address; write device: and six hex pairs separated by colons, e.g. device:AA:BB:CC:DD:EE:FF"
        )
      }
      return TrackedDevice(name: name, address: a)
    }
    if rest.hasPrefix("irk:") {
      do {
        return TrackedDevice(name: name, irk: try IdentityResolvingKey(hex: rest.dropFirst(4)))
      } catch {
        throw ConfigValueError("irk: \(error)")
      }
    }
    guard name == nil else {
      throw ConfigValueError(
        "'\(rest)' after '\(name!)=' is not device:ADDRESS or irk:KEY (a name is for devices)")
    }
    return nil
  }
}
