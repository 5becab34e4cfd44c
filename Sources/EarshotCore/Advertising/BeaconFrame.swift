/// Up to 16 bytes kept inline (two integers), so an Eddystone namespace,
/// instance or EID costs no allocation per report.
public struct BeaconBytes: Hashable, Sendable, CustomStringConvertible {
  public let count: Int
  /// Bytes 0-7, byte 0 most significant; then bytes 8-15. Unused bytes are 0.
  @usableFromInline let high: UInt64
  @usableFromInline let low: UInt64

  @inlinable init(_ v: UnsafeRawBufferPointer, _ start: Int, _ count: Int) {
    precondition(count <= 16 && start + count <= v.count)
    var h: UInt64 = 0
    var l: UInt64 = 0
    for i in 0..<16 {
      let b = UInt64(i < count ? v[start + i] : 0)
      if i < 8 { h = h << 8 | b } else { l = l << 8 | b }
    }
    self.count = count
    high = h
    low = l
  }

  /// Parses hex ("12345678901234678901"); `nil` unless 1-16 whole bytes.
  public init?(hex: some StringProtocol) {
    guard let raw = hexDecoded(hex), (1...16).contains(raw.count) else {
      return nil
    }
    let parsed = raw.withUnsafeBytes { BeaconBytes($0, 0, raw.count) }
    self = parsed
  }

  public subscript(i: Int) -> UInt8 {
    precondition(i >= 0 && i < count)
    return UInt8(truncatingIfNeeded: (i < 8 ? high : low) >> UInt64(8 * (7 - i % 8)))
  }

  public var bytes: [UInt8] { (0..<count).map { self[$0] } }

  /// Lower-case hex, no separators.
  public var description: String { bytes.withUnsafeBytes { $0.hexString } }
}

/// An AltBeacon (github.com/AltBeacon/spec): 26 bytes of manufacturer data.
public struct AltBeacon: Hashable, Sendable {
  /// Whoever made the beacon; the format does not depend on it.
  public let companyID: UInt16
  public let id1: BeaconUUID
  public let id2: UInt16
  public let id3: UInt16
  /// Average RSSI at 1 m, in dBm, as the beacon claims it.
  public let referenceRSSI: Int8
  /// The manufacturer's reserved byte.
  public let mfgReserved: UInt8

  public init(
    companyID: UInt16, id1: BeaconUUID, id2: UInt16, id3: UInt16, referenceRSSI: Int8,
    mfgReserved: UInt8
  ) {
    self.companyID = companyID
    self.id1 = id1
    self.id2 = id2
    self.id3 = id3
    self.referenceRSSI = referenceRSSI
    self.mfgReserved = mfgReserved
  }
}

/// Eddystone-UID: a 10-byte namespace and a 6-byte instance.
public struct EddystoneUID: Hashable, Sendable {
  public let namespace: BeaconBytes
  public let instance: BeaconBytes
  /// Calibrated TX power at 0 m, in dBm (41 dB more than at 1 m).
  public let txPowerAt0m: Int8

  public init(namespace: BeaconBytes, instance: BeaconBytes, txPowerAt0m: Int8) {
    self.namespace = namespace
    self.instance = instance
    self.txPowerAt0m = txPowerAt0m
  }
}

/// Eddystone-URL, expanded ("https://" + "github" + ".com/" ...).
public struct EddystoneURL: Hashable, Sendable {
  public let url: String
  public let txPowerAt0m: Int8

  public init(url: String, txPowerAt0m: Int8) {
    self.url = url
    self.txPowerAt0m = txPowerAt0m
  }

  static let schemes = ["http://www.", "https://www.", "http://", "https://"]
  static let expansions = [
    ".com/", ".org/", ".edu/", ".net/", ".info/", ".biz/", ".gov/",
    ".com", ".org", ".edu", ".net", ".info", ".biz", ".gov",
  ]

  /// Expands a scheme byte and an encoded URL (eddystone-url/README.md).
  /// Codes 0x0E-0x20 and 0x7F-0xFF are reserved: a URL holding one is
  /// refused, not shown with a hole in it.
  public static func expand(scheme: UInt8, encoded: UnsafeRawBufferPointer) -> String? {
    guard Int(scheme) < schemes.count else { return nil }
    var out = Array(schemes[Int(scheme)].utf8)
    for b in encoded {
      switch b {
      case 0x00...0x0D: out += expansions[Int(b)].utf8
      case 0x21...0x7E: out.append(b)
      default: return nil
      }
    }
    return String(decoding: out, as: UTF8.self)
  }
}

/// Eddystone-TLM version 0 (tlm-plain.md): telemetry, no identity. It
/// belongs to whichever UID or URL frame the same address sends.
public struct EddystoneTLM: Hashable, Sendable {
  /// Battery voltage in mV; 0 when the beacon has no battery to report.
  public let batteryMillivolts: UInt16
  /// Temperature in signed 8.8 fixed point (°C × 256); 0x8000 (-128 °C)
  /// means the beacon has no sensor.
  public let temperatureRaw: Int16
  /// Advertising PDUs sent since power-on or reboot.
  public let advertisingCount: UInt32
  /// Time since power-on or reboot, in 0.1 s units.
  public let uptimeTenths: UInt32

  public init(
    batteryMillivolts: UInt16, temperatureRaw: Int16, advertisingCount: UInt32,
    uptimeTenths: UInt32
  ) {
    self.batteryMillivolts = batteryMillivolts
    self.temperatureRaw = temperatureRaw
    self.advertisingCount = advertisingCount
    self.uptimeTenths = uptimeTenths
  }

  public static let temperatureNotSupported = Int16(bitPattern: 0x8000)

  /// Degrees Celsius, or `nil` for 0x8000.
  public var temperature: Double? {
    temperatureRaw == Self.temperatureNotSupported ? nil : Double(temperatureRaw) / 256
  }

  public var uptimeSeconds: Double { Double(uptimeTenths) / 10 }
}

/// Eddystone-TLM version 1 (tlm-encrypted.md). Decrypting needs the
/// beacon's identity key from an EID registration, which Earshot does not
/// have: the frame is recognised and counted, its fields kept opaque.
public struct EddystoneEncryptedTLM: Hashable, Sendable {
  /// The 12 encrypted bytes.
  public let encrypted: BeaconBytes
  /// Big-endian, as the spec says all multi-byte values are.
  public let salt: UInt16
  public let mic: UInt16

  public init(encrypted: BeaconBytes, salt: UInt16, mic: UInt16) {
    self.encrypted = encrypted
    self.salt = salt
    self.mic = mic
  }
}

/// Eddystone-EID: an 8-byte id that rotates, resolvable only by whoever
/// holds the beacon's key. Recognised, not tracked.
public struct EddystoneEID: Hashable, Sendable {
  public let eid: BeaconBytes
  public let txPowerAt0m: Int8

  public init(eid: BeaconBytes, txPowerAt0m: Int8) {
    self.eid = eid
    self.txPowerAt0m = txPowerAt0m
  }
}

/// A frame of a user's layout. Identifiers and data fields are given most
/// significant byte first (an `l` field is reversed into that order).
public struct CustomBeacon: Hashable, Sendable {
  public let layoutName: String
  /// The company id of manufacturer data (`nil` for service data).
  public let companyID: UInt16?
  public let identifiers: [[UInt8]]
  /// The power byte, signed, plus the layout's correction (`p:3-3:-41`).
  public let power: Int?
  public let data: [[UInt8]]
  /// The layout has `x`: telemetry, no identity of its own.
  public let isExtraFrame: Bool

  public init(
    layoutName: String, companyID: UInt16?, identifiers: [[UInt8]], power: Int?, data: [[UInt8]],
    isExtraFrame: Bool
  ) {
    self.layoutName = layoutName
    self.companyID = companyID
    self.identifiers = identifiers
    self.power = power
    self.data = data
    self.isExtraFrame = isExtraFrame
  }
}

/// One beacon frame found in advertising data.
public enum BeaconFrame: Hashable, Sendable {
  case iBeacon(TrackedBeacon)
  case altBeacon(AltBeacon)
  case eddystoneUID(EddystoneUID)
  case eddystoneURL(EddystoneURL)
  case eddystoneTLM(EddystoneTLM)
  case eddystoneEncryptedTLM(EddystoneEncryptedTLM)
  case eddystoneEID(EddystoneEID)
  case custom(CustomBeacon)

  /// The row's name: "iBeacon", "Eddystone-UID", or the user's name.
  public var layoutName: String {
    switch self {
    case .iBeacon: "iBeacon"
    case .altBeacon: "AltBeacon"
    case .eddystoneUID: "Eddystone-UID"
    case .eddystoneURL: "Eddystone-URL"
    case .eddystoneTLM: "Eddystone-TLM"
    case .eddystoneEncryptedTLM: "Eddystone-eTLM"
    case .eddystoneEID: "Eddystone-EID"
    case .custom(let c): c.layoutName
    }
  }

  /// Whether the frame names a beacon that stays the same from report to
  /// report. Telemetry (TLM, eTLM, `x` layouts) names nothing, and an EID
  /// changes on purpose; those are counted, never tracked as beacons.
  public var hasStableIdentity: Bool {
    switch self {
    case .iBeacon, .altBeacon, .eddystoneUID, .eddystoneURL: true
    case .eddystoneTLM, .eddystoneEncryptedTLM, .eddystoneEID: false
    case .custom(let c): !c.isExtraFrame
    }
  }
}

/// Finds the beacon frames in a report's advertising data with one walk of
/// its AD structures, trying each manufacturer-data and 16-bit service-data
/// structure against the layout table in order.
public struct BeaconClassifier: Sendable {
  /// The built-in rows, then the user's.
  public let layouts: [BeaconLayout]

  public init(custom: [BeaconLayout] = []) {
    layouts = BeaconLayout.builtIn + custom
  }

  /// The built-in formats only.
  public static let standard = BeaconClassifier()

  /// Every frame in the data, in AD order. The data must walk cleanly as AD
  /// structures: a frame inside malformed data is not trusted, so none is
  /// returned (as `TrackedBeacon.iBeacon(advertisingData:)` does).
  public func frames(in data: UnsafeRawBufferPointer) -> [BeaconFrame] {
    var found: [BeaconFrame] = []
    forEachFrame(in: data) { found.append($0) }
    return found
  }

  /// The same without an array: `body` sees each frame. Returns false (and
  /// calls nothing) when the data does not walk cleanly.
  @discardableResult
  public func forEachFrame(in data: UnsafeRawBufferPointer, _ body: (BeaconFrame) -> Void) -> Bool {
    guard ADWalker.isWellFormed(data) else { return false }
    for ad in ADWalker(data) {
      if let frame = frame(type: ad.type, value: ad.value) { body(frame) }
    }
    return true
  }

  /// The frame in one AD structure: the first row that matches decodes it.
  /// A structure a row claims but whose fields are invalid (a reserved URL
  /// code) gives nothing; later rows are not tried.
  public func frame(type: UInt8, value v: UnsafeRawBufferPointer) -> BeaconFrame? {
    guard type == ADType.manufacturerData || type == ADType.serviceData16 else { return nil }
    for layout in layouts where layout.accepts(type: type, value: v) {
      return Self.decode(layout, v)
    }
    return nil
  }

  /// Reads a row's fields. `accepts` has checked the length, so every fixed
  /// field is inside `v`.
  static func decode(_ l: BeaconLayout, _ v: UnsafeRawBufferPointer) -> BeaconFrame? {
    func u(_ f: BeaconLayout.Field) -> UInt64 {
      var x: UInt64 = 0
      for i in 0..<f.count { x = x << 8 | UInt64(v[f.start + i]) }
      return f.littleEndian ? x.byteSwapped >> UInt64(64 - 8 * f.count) : x
    }
    func power() -> Int8 { Int8(bitPattern: v[l.power!.start]) }
    switch l.kind {
    case .iBeacon:
      return TrackedBeacon.iBeacon(manufacturerData: v).map { .iBeacon($0) }
    case .altBeacon:
      return .altBeacon(
        AltBeacon(
          companyID: UInt16(v[0]) | UInt16(v[1]) << 8,
          id1: BeaconUUID(bigEndian: v, at: l.identifiers[0].start),
          id2: UInt16(u(l.identifiers[1])), id3: UInt16(u(l.identifiers[2])),
          referenceRSSI: power(), mfgReserved: UInt8(u(l.data[0]))))
    case .eddystoneUID:
      let (ns, inst) = (l.identifiers[0], l.identifiers[1])
      return .eddystoneUID(
        EddystoneUID(
          namespace: BeaconBytes(v, ns.start, ns.count),
          instance: BeaconBytes(v, inst.start, inst.count), txPowerAt0m: power()))
    case .eddystoneURL:
      let at = l.identifiers[0].start
      let encoded = UnsafeRawBufferPointer(rebasing: v[(at + 1)...])
      return EddystoneURL.expand(scheme: v[at], encoded: encoded).map {
        .eddystoneURL(EddystoneURL(url: $0, txPowerAt0m: power()))
      }
    case .eddystoneTLM:
      return .eddystoneTLM(
        EddystoneTLM(
          batteryMillivolts: UInt16(u(l.data[0])),
          temperatureRaw: Int16(bitPattern: UInt16(u(l.data[1]))),
          advertisingCount: UInt32(u(l.data[2])), uptimeTenths: UInt32(u(l.data[3]))))
    case .eddystoneEncryptedTLM:
      let e = l.data[0]
      return .eddystoneEncryptedTLM(
        EddystoneEncryptedTLM(
          encrypted: BeaconBytes(v, e.start, e.count), salt: UInt16(u(l.data[1])),
          mic: UInt16(u(l.data[2]))))
    case .eddystoneEID:
      let e = l.identifiers[0]
      return .eddystoneEID(
        EddystoneEID(eid: BeaconBytes(v, e.start, e.count), txPowerAt0m: power()))
    case .custom:
      func bytes(_ f: BeaconLayout.Field) -> [UInt8] {
        let end = f.variableLength ? min(f.end, v.count - 1) : f.end
        let b = Array(v[f.start...end])
        return f.littleEndian ? b.reversed() : b
      }
      var companyID: UInt16? = nil
      if case .manufacturerData = l.carrier { companyID = UInt16(v[0]) | UInt16(v[1]) << 8 }
      return .custom(
        CustomBeacon(
          layoutName: l.name, companyID: companyID, identifiers: l.identifiers.map(bytes),
          power: l.power.map { Int(Int8(bitPattern: v[$0.start])) + l.powerCorrection },
          data: l.data.map(bytes), isExtraFrame: l.isExtraFrame))
    }
  }
}

extension BeaconFrame {
  /// The frame as `earshot scan --all` shows it: `{"frame":"Eddystone-TLM",
  /// "battery_mv":2840,…}`, identifiers in hex, powers in dBm as sent.
  public var json: String {
    var j = JSONLine()
    j.add("frame", layoutName)
    switch self {
    case .iBeacon(let b):
      b.id.addFields(to: &j)
      j.add("power", Int(b.measuredPower))
    case .altBeacon(let a):
      j.add("company", Int(a.companyID))
      j.add("id1", a.id1.description)
      j.add("id2", Int(a.id2))
      j.add("id3", Int(a.id3))
      j.add("power", Int(a.referenceRSSI))
      j.add("reserved", Int(a.mfgReserved))
    case .eddystoneUID(let u):
      j.add("namespace", u.namespace.description)
      j.add("instance", u.instance.description)
      j.add("tx_power_0m", Int(u.txPowerAt0m))
    case .eddystoneURL(let u):
      j.add("url", u.url)
      j.add("tx_power_0m", Int(u.txPowerAt0m))
    case .eddystoneTLM(let t):
      j.add("battery_mv", Int(t.batteryMillivolts))
      if let c = t.temperature {
        j.add("temperature", c, decimals: 2)
      } else {
        j.addNull("temperature")
      }
      j.add("adv_count", Int(t.advertisingCount))
      j.add("uptime", t.uptimeSeconds, decimals: 1)
    case .eddystoneEncryptedTLM(let e):
      j.add("encrypted", e.encrypted.description)
      j.add("salt", Int(e.salt))
      j.add("mic", Int(e.mic))
    case .eddystoneEID(let e):
      j.add("eid", e.eid.description)
      j.add("tx_power_0m", Int(e.txPowerAt0m))
    case .custom(let c):
      if let company = c.companyID { j.add("company", Int(company)) }
      j.addRaw(
        "ids",
        "["
          + c.identifiers.map { JSONLine.quoted($0.withUnsafeBytes { $0.hexString }) }
          .joined(separator: ",") + "]")
      if let p = c.power { j.add("power", p) }
      j.addRaw(
        "data",
        "["
          + c.data.map { JSONLine.quoted($0.withUnsafeBytes { $0.hexString }) }
          .joined(separator: ",") + "]")
    }
    return j.line
  }
}
