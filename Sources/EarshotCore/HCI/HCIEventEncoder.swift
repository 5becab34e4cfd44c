/// Builds HCI LE advertising report events, the inverse of
/// `AdvertisingEventDecoder`: used to write sniffer captures as btsnoop,
/// to generate scenario captures, and in tests.
public enum HCIEventEncoder {
  /// A bare LE Advertising Report event (event code first) with one report.
  /// Extended-only PDUs cannot be expressed and return `nil`.
  public static func legacyReport(_ r: AdvertisingReport) -> [UInt8]? {
    let type: UInt8
    switch r.pdu {
    case .advInd: type = 0
    case .advDirectInd: type = 1
    case .advScanInd: type = 2
    case .advNonconnInd: type = 3
    case .scanRsp: type = 4
    case .extended: return nil
    }
    guard r.data.count <= 31 else { return nil }
    var w = ByteWriter(capacity: 14 + r.data.count)
    w.u8(HCIEventCode.leMeta.rawValue)
    w.u8(UInt8(12 + r.data.count))
    w.u8(LESubeventCode.advertisingReport.rawValue)
    w.u8(1)  // Num_Reports
    w.u8(type)
    w.u8(r.addressType.rawValue)
    w.address(r.address)
    w.u8(UInt8(r.data.count))
    w.append(r.data)
    w.i8(ReportRSSI.encode(r.rssi))
    return w.bytes
  }

  /// A bare LE Extended Advertising Report event with one report.
  public static func extendedReport(_ r: AdvertisingReport) -> [UInt8]? {
    var eventType: UInt16
    switch r.pdu {
    case .advInd: eventType = 0x13
    case .advDirectInd: eventType = 0x15
    case .advScanInd: eventType = 0x12
    case .advNonconnInd: eventType = 0x10
    case .scanRsp: eventType = 0x1B
    case .extended(let p): eventType = p.rawValue
    }
    eventType |= UInt16(r.dataStatus.rawValue) << 5
    guard r.data.count <= 229 else { return nil }
    var w = ByteWriter(capacity: 28 + r.data.count)
    w.u8(HCIEventCode.leMeta.rawValue)
    w.u8(UInt8(2 + 24 + r.data.count))
    w.u8(LESubeventCode.extendedAdvertisingReport.rawValue)
    w.u8(1)
    w.u16le(eventType)
    w.u8(r.addressType.rawValue)
    w.address(r.address)
    w.u8(r.primaryPHY)
    w.u8(r.secondaryPHY)
    w.u8(r.sid ?? 0xFF)
    w.i8(r.txPower ?? 127)
    w.i8(ReportRSSI.encode(r.rssi))
    w.u16le(0)
    w.u8(0)
    w.address(r.directAddress ?? BDAddress(raw: 0))
    w.u8(UInt8(r.data.count))
    w.append(r.data)
    return w.bytes
  }

  /// AD data holding one iBeacon frame (flags + manufacturer data), as a
  /// beacon advertises it.
  public static func iBeaconAdvertisingData(_ b: TrackedBeacon) -> [UInt8] {
    var w = ByteWriter(capacity: 30)
    w.append([0x02, 0x01, 0x06, 0x1A, 0xFF, 0x4C, 0x00, 0x02, 0x15])
    w.u32be(UInt32(truncatingIfNeeded: b.uuid.high >> 32))
    w.u32be(UInt32(truncatingIfNeeded: b.uuid.high))
    w.u32be(UInt32(truncatingIfNeeded: b.uuid.low >> 32))
    w.u32be(UInt32(truncatingIfNeeded: b.uuid.low))
    w.u16be(b.major)
    w.u16be(b.minor)
    w.i8(b.measuredPower)
    return w.bytes
  }

  /// AD data holding `b`'s frame in its own kind's format (flags first),
  /// as its row of `TrackedKind.table` writes it.
  public static func beaconAdvertisingData(_ b: TrackedBeacon) -> [UInt8] {
    b.id.kind.row.advertisingData(b)
  }

  /// An AltBeacon with Radius Networks' company id (0x0118, as the
  /// AltBeacon spec's example) and a reserved byte of 0.
  static func altBeaconAdvertisingData(_ b: TrackedBeacon) -> [UInt8] {
    var w = ByteWriter(capacity: 31)
    w.append([0x02, 0x01, 0x06, 0x1B, 0xFF, 0x18, 0x01, 0xBE, 0xAC])
    w.u64be(b.uuid.high)
    w.u64be(b.uuid.low)
    w.u16be(b.major)
    w.u16be(b.minor)
    w.i8(b.measuredPower)
    w.u8(0)
    return w.bytes
  }

  /// An Eddystone-UID as service data of 0xFEAA with its TX power at 0 m
  /// (the 1 m power + 41 dB) and the two reserved bytes.
  static func eddystoneUIDAdvertisingData(_ b: TrackedBeacon) -> [UInt8] {
    var w = ByteWriter(capacity: 31)
    w.append([0x02, 0x01, 0x06, 0x03, 0x03, 0xAA, 0xFE, 0x17, 0x16, 0xAA, 0xFE, 0x00])
    w.i8(Int8(clamping: Int(b.measuredPower) + 41))
    w.u64be(b.uuid.high)
    w.u64be(b.uuid.low)
    w.u16be(0)
    return w.bytes
  }

  /// AD data holding an unencrypted Eddystone-TLM frame (flags first), as
  /// a beacon interleaves it with its UID frames.
  public static func eddystoneTLMAdvertisingData(_ t: EddystoneTLM) -> [UInt8] {
    var w = ByteWriter(capacity: 25)
    w.append([0x02, 0x01, 0x06, 0x03, 0x03, 0xAA, 0xFE, 0x11, 0x16, 0xAA, 0xFE, 0x20, 0x00])
    w.u16be(t.batteryMillivolts)
    w.u16be(UInt16(bitPattern: t.temperatureRaw))
    w.u32be(t.advertisingCount)
    w.u32be(t.uptimeTenths)
    return w.bytes
  }
}
