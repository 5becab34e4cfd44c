/// A beacon, or every beacon sharing the leading part of an identity, as
/// a region, rooms' `track` and `earshot log --beacon` name it. One parser
/// and one matching rule for all three:
/// - `UUID[:MAJOR[:MINOR]]` (or `ibeacon:UUID…`): iBeacons;
/// - `altbeacon:ID1[:ID2[:ID3]]`: AltBeacons, any company;
/// - `eddystone:NAMESPACE[:INSTANCE]`: Eddystone-UIDs (20 and 12 hex digits).
public struct BeaconMatch: Sendable, Equatable, CustomStringConvertible {
  public var format: BeaconFormat
  /// `BeaconID`'s layout: iBeacon's UUID, AltBeacon's id1, or Eddystone's
  /// namespace then instance (zeros when no instance was given).
  public var uuid: BeaconUUID
  public var major: UInt16?
  public var minor: UInt16?
  /// Eddystone: whether the instance was given (else any instance counts).
  public var matchesInstance: Bool

  public init(
    format: BeaconFormat = .iBeacon, uuid: BeaconUUID, major: UInt16? = nil, minor: UInt16? = nil,
    matchesInstance: Bool = false
  ) {
    self.format = format
    self.uuid = uuid
    self.major = major
    self.minor = minor
    self.matchesInstance = matchesInstance
  }

  /// Every beacon of one Eddystone namespace, or one beacon of it.
  public init(eddystoneNamespace namespace: BeaconBytes, instance: BeaconBytes?) {
    let id = BeaconID(
      eddystoneNamespace: namespace,
      instance: instance ?? BeaconBytes(hex: "000000000000")!)
    self.init(format: .eddystoneUID, uuid: id.uuid, matchesInstance: instance != nil)
  }

  public func matches(_ id: BeaconID) -> Bool {
    guard id.format == format else { return false }
    if format == .eddystoneUID {
      // The namespace: bytes 0-9, all of `high` and the top 2 bytes of `low`.
      return matchesInstance
        ? id.uuid == uuid : id.uuid.high == uuid.high && id.uuid.low >> 48 == uuid.low >> 48
    }
    return id.uuid == uuid && (major.map { $0 == id.major } ?? true)
      && (minor.map { $0 == id.minor } ?? true)
  }

  /// The whole identity field when the match pins it (an index lookup can
  /// use it); `nil` for an Eddystone namespace, whose instances vary.
  public var wholeUUID: BeaconUUID? {
    format == .eddystoneUID && !matchesInstance ? nil : uuid
  }

  /// The one beacon the match names, when it names exactly one.
  public var single: BeaconID? {
    switch format {
    case .eddystoneUID:
      return matchesInstance ? BeaconID(format: .eddystoneUID, uuid: uuid, major: 0, minor: 0) : nil
    case .iBeacon, .altBeacon:
      guard let major, let minor else { return nil }
      return BeaconID(format: format, uuid: uuid, major: major, minor: minor)
    }
  }

  /// As it is written: `parse(m.description) == m`.
  public var description: String {
    switch format {
    case .eddystoneUID:
      let id = BeaconID(format: .eddystoneUID, uuid: uuid, major: 0, minor: 0)
      return "eddystone:\(id.namespaceHex)" + (matchesInstance ? ":\(id.instanceHex)" : "")
    case .iBeacon, .altBeacon:
      var s = (format == .altBeacon ? "altbeacon:" : "") + uuid.description
      if let major { s += ":\(major)" }
      if let minor { s += ":\(minor)" }
      return s
    }
  }

  /// Reads any of the forms above; the error says which form was expected.
  public static func parse(_ text: String) throws -> BeaconMatch {
    let lower = text.lowercased()
    for (prefix, format) in [
      ("altbeacon:", BeaconFormat.altBeacon), ("eddystone:", .eddystoneUID), ("ibeacon:", .iBeacon),
    ] where lower.hasPrefix(prefix) {
      let rest = String(text.dropFirst(prefix.count))
      switch format {
      case .altBeacon:
        let a = try ConfigValue.altBeacon(rest)
        return BeaconMatch(format: .altBeacon, uuid: a.uuid, major: a.id2, minor: a.id3)
      case .eddystoneUID:
        let e = try ConfigValue.eddystone(rest)
        return BeaconMatch(eddystoneNamespace: e.namespace, instance: e.instance)
      case .iBeacon:
        return try iBeacon(rest)
      }
    }
    return try iBeacon(text)
  }

  private static func iBeacon(_ text: String) throws -> BeaconMatch {
    let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
    guard (1...3).contains(parts.count) else {
      throw ConfigValueError(
        "'\(text)' is not a beacon: give UUID[:MAJOR[:MINOR]], altbeacon:ID1[:ID2[:ID3]] "
          + "or eddystone:NAMESPACE[:INSTANCE]")
    }
    var m = BeaconMatch(uuid: try ConfigValue.uuid(parts[0]))
    if parts.count > 1 { m.major = UInt16(try ConfigValue.integer(parts[1], in: 0...65535)) }
    if parts.count > 2 { m.minor = UInt16(try ConfigValue.integer(parts[2], in: 0...65535)) }
    return m
  }
}
