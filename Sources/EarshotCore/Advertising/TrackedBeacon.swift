/// A 128-bit beacon proximity UUID, kept as two integers (no allocation).
public struct BeaconUUID: Hashable, Comparable, Sendable, CustomStringConvertible {
  public let high: UInt64
  public let low: UInt64

  @inlinable public init(high: UInt64, low: UInt64) {
    self.high = high
    self.low = low
  }

  /// Reads 16 bytes in network (big-endian) order.
  @inlinable init(bigEndian bytes: UnsafeRawBufferPointer, at offset: Int) {
    high = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self).bigEndian
    low = bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self).bigEndian
  }

  /// Parses "8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182" (any case; the dashes
  /// must be where RFC 4122 puts them, or absent altogether).
  public init?(_ text: some StringProtocol) {
    let chars = Array(text.utf8)
    let hex: [UInt8]
    if chars.count == 36 {
      for i in [8, 13, 18, 23] where chars[i] != UInt8(ascii: "-") { return nil }
      hex = chars.enumerated().filter { ![8, 13, 18, 23].contains($0.offset) }.map(\.element)
    } else if chars.count == 32 {
      hex = chars
    } else {
      return nil
    }
    guard let raw = bytes(fromHex: String(decoding: hex, as: UTF8.self)), raw.count == 16 else {
      return nil
    }
    self.init(bytes: raw)
  }

  /// Upper case with dashes, as Earshot prints it everywhere.
  public var description: String {
    let digits = Array("0123456789ABCDEF".utf8)
    var out = [UInt8]()
    out.reserveCapacity(36)
    for i in 0..<16 {
      let word = i < 8 ? high : low
      let b = UInt8(truncatingIfNeeded: word >> UInt64(8 * (7 - i % 8)))
      if i == 4 || i == 6 || i == 8 || i == 10 { out.append(UInt8(ascii: "-")) }
      out.append(digits[Int(b >> 4)])
      out.append(digits[Int(b & 0xF)])
    }
    return String(decoding: out, as: UTF8.self)
  }

  public static func < (a: BeaconUUID, b: BeaconUUID) -> Bool {
    (a.high, a.low) < (b.high, b.low)
  }
}

/// A beacon the monitor tracks, as one advertisement gave it: its
/// identity and the power it claims at 1 m. (Named `TrackedBeacon` while every
/// tracked format had iBeacon's shape.)
public struct TrackedBeacon: Hashable, Sendable {
  public let id: TrackedID
  /// Calibrated RSSI at 1 m, in dBm, as the beacon claims it.
  public let measuredPower: Int8

  public init(id: TrackedID, measuredPower: Int8) {
    self.id = id
    self.measuredPower = measuredPower
  }

  public var uuid: BeaconUUID { id.uuid }
  public var major: UInt16 { id.major }
  public var minor: UInt16 { id.minor }

  /// Plausible calibrated powers. A value outside (say +116 dBm, seen on
  /// real Estimote beacons) is kept for display but never used for ranging.
  public static let plausiblePower: ClosedRange<Int8> = -100...20

  public var isPowerSuspect: Bool { !Self.plausiblePower.contains(measuredPower) }

  /// Strictly decodes the value of a manufacturer-specific AD structure
  /// (company ID first). Only Apple's exact layout is accepted: company
  /// 0x004C, type 0x02, length 0x15, and nothing after the measured power.
  @inlinable public static func iBeacon(manufacturerData v: UnsafeRawBufferPointer)
    -> TrackedBeacon?
  {
    guard v.count == 25, v[0] == 0x4C, v[1] == 0x00, v[2] == 0x02, v[3] == 0x15 else { return nil }
    let uuid = BeaconUUID(bigEndian: v, at: 4)
    let major = UInt16(v[20]) << 8 | UInt16(v[21])
    let minor = UInt16(v[22]) << 8 | UInt16(v[23])
    return TrackedBeacon(
      id: TrackedID(uuid: uuid, major: major, minor: minor),
      measuredPower: Int8(bitPattern: v[24]))
  }

  /// Finds an iBeacon in advertising data. The data must walk cleanly as AD
  /// structures; a frame inside malformed data is not trusted.
  @inlinable public static func iBeacon(advertisingData data: UnsafeRawBufferPointer)
    -> TrackedBeacon?
  {
    var walker = ADWalker(data)
    var found: TrackedBeacon? = nil
    while let ad = walker.next() {
      if found == nil, ad.type == ADType.manufacturerData {
        found = iBeacon(manufacturerData: ad.value)
      }
    }
    return walker.isMalformed ? nil : found
  }

  /// The beacon Earshot tracks in advertising data, whatever its format:
  /// an iBeacon (the fast path), else an AltBeacon or an Eddystone-UID, as
  /// a value of this type whose `id.format` says which. `measuredPower` is
  /// the power at 1 m: an AltBeacon's reference RSSI; an Eddystone's TX
  /// power at 0 m less 41 dB (the Eddystone spec's figure for 0 m to 1 m).
  public static func decode(advertisingData data: UnsafeRawBufferPointer) -> TrackedBeacon? {
    if case .beacon(let b)? = TrackedFrame.decode(advertisingData: data) { return b }
    return nil
  }
}

/// What the monitor takes from one report: a beacon it can track, or an
/// Eddystone-TLM to join to the beacon of the same address.
public enum TrackedFrame: Sendable {
  case beacon(TrackedBeacon)
  case telemetry(EddystoneTLM)

  /// One walk of the data: an iBeacon anywhere in it, else the first
  /// other tracked beacon, else the first TLM frame. Nothing from data
  /// that does not walk cleanly. (Three walks, the iBeacon's, a check and
  /// the layouts', were a third of a non-iBeacon report's cost.)
  public static func decode(advertisingData data: UnsafeRawBufferPointer) -> TrackedFrame? {
    var walker = ADWalker(data)
    var iBeacon: TrackedBeacon? = nil
    var found: TrackedBeacon? = nil
    var tlm: EddystoneTLM? = nil
    // The walk goes to the end whatever is found: data that does not walk
    // cleanly is not trusted.
    while let ad = walker.next() {
      if iBeacon != nil { continue }
      if ad.type == ADType.manufacturerData,
        let b = TrackedBeacon.iBeacon(manufacturerData: ad.value)
      {
        iBeacon = b
        continue
      }
      guard found == nil,
        let frame = BeaconClassifier.standard.frame(type: ad.type, value: ad.value)
      else { continue }
      switch frame {
      case .altBeacon(let a):
        found = TrackedBeacon(
          id: TrackedID(kind: .altBeacon, uuid: a.id1, major: a.id2, minor: a.id3),
          measuredPower: a.referenceRSSI)
      case .eddystoneUID(let e):
        let power = max(Int(Int8.min), Int(e.txPowerAt0m) - 41)
        found = TrackedBeacon(
          id: TrackedID(eddystoneNamespace: e.namespace, instance: e.instance),
          measuredPower: Int8(power))
      case .eddystoneTLM(let t):
        if tlm == nil { tlm = t }
      default: break
      }
    }
    guard !walker.isMalformed else { return nil }
    if let iBeacon { return .beacon(iBeacon) }
    if let found { return .beacon(found) }
    return tlm.map { .telemetry($0) }
  }

  /// The same, then the config's own layouts (`[layout "NAME"]`) where no
  /// built-in format names a beacon: a second walk only for those reports.
  public static func decode(advertisingData data: UnsafeRawBufferPointer, layouts: LayoutKinds)
    -> TrackedFrame?
  {
    let builtIn = decode(advertisingData: data)
    if case .beacon? = builtIn { return builtIn }
    if let b = layouts.beacon(in: data) { return .beacon(b) }
    return builtIn
  }
}
