/// Builds btsnoop captures from scratch: for benchmarks, scenario tests and
/// the bundled demo. Deterministic for a given seed.
public struct SyntheticCapture {
  public private(set) var bytes: [UInt8] = BtsnoopWriter.header

  public init() {}

  /// Appends one report as a legacy (or, with `extended`, an extended)
  /// advertising report event.
  public mutating func append(micros: Int64, report: AdvertisingReport, extended: Bool = false) {
    guard
      let event = extended
        ? HCIEventEncoder.extendedReport(report) : HCIEventEncoder.legacyReport(report)
    else { return }
    bytes += event.withUnsafeBytes { BtsnoopWriter.record(event: $0, micros: micros) }
  }

  /// Appends an iBeacon advertisement (ADV_NONCONN_IND).
  public mutating func appendBeacon(
    micros: Int64, beacon: TrackedBeacon, address: BDAddress, rssi: Int8?, extended: Bool = false
  ) {
    let data = HCIEventEncoder.beaconAdvertisingData(beacon)
    data.withUnsafeBytes { d in
      append(
        micros: micros,
        report: AdvertisingReport(
          pdu: .advNonconnInd, address: address, addressType: .random, rssi: rssi, data: d),
        extended: extended)
    }
  }

  /// Appends a device's connectable advertisement: flags, and its TX Power
  /// Level when it has one.
  public mutating func appendDevice(
    micros: Int64, address: BDAddress, type: AddressType, rssi: Int8?, txPower: Int8?,
    extended: Bool = false
  ) {
    var data: [UInt8] = [0x02, ADType.flags, 0x06]
    if let txPower { data += [0x02, ADType.txPowerLevel, UInt8(bitPattern: txPower)] }
    data.withUnsafeBytes { d in
      append(
        micros: micros,
        report: AdvertisingReport(
          pdu: .advInd, address: address, addressType: type, rssi: rssi, data: d),
        extended: extended)
    }
  }

  /// A mix like a busy room: one report in `beaconEvery` is an iBeacon, the
  /// rest are other vendors' advertisements. Used by `earshot bench`.
  public static func busyRoom(reports: Int, beaconEvery: Int = 4, seed: UInt64 = 1)
    -> SyntheticCapture
  {
    var capture = SyntheticCapture()
    var rng = seed
    func next() -> UInt64 {
      rng = rng &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return rng >> 33
    }
    let other: [UInt8] =
      [0x02, 0x01, 0x06, 0x03, 0x03, 0xAA, 0xFE, 0x0C, 0x09] + Array("earshot-dev".utf8)
    for i in 0..<reports {
      let t = 1_767_225_600_000_000 + Int64(i) * 1000
      let address = BDAddress(raw: 0xC000_0000_0000 | (next() % 64))
      let rssi = Int8(-40 - Int(next() % 50))
      if i % beaconEvery == 0 {
        let beacon = TrackedBeacon(
          id: TrackedID(
            uuid: BeaconUUID(high: 0x8F2C_1A3E_5B7D_4E90, low: 0xA1C2_3D4E_5F60_7182),
            major: 1, minor: UInt16(next() % 8)), measuredPower: -59)
        capture.appendBeacon(micros: t, beacon: beacon, address: address, rssi: rssi)
      } else {
        other.withUnsafeBytes { d in
          capture.append(
            micros: t,
            report: AdvertisingReport(
              pdu: .advInd, address: address, addressType: .public, rssi: rssi, data: d))
        }
      }
    }
    return capture
  }
}
