import EarshotCore
import XCTest

/// Eddystone-TLM joined to its beacon by address, and how often a reading
/// is passed on (TelemetryJoiner, TelemetryThrottle, TrackedFrame).
final class BeaconTelemetryTests: XCTestCase {
  let uid = TrackedID(
    eddystoneNamespace: BeaconBytes(hex: "8f2c1a3e5b7d4e90a1c2")!,
    instance: BeaconBytes(hex: "000000000001")!)
  let other = TrackedID(
    eddystoneNamespace: BeaconBytes(hex: "8f2c1a3e5b7d4e90a1c2")!,
    instance: BeaconBytes(hex: "000000000002")!)
  let a = BDAddress("C1:00:00:00:00:01")!
  let b = BDAddress("C1:00:00:00:00:02")!

  func tlm(_ mv: UInt16, temp: Int16 = 0x1300, count: UInt32 = 5223) -> EddystoneTLM {
    EddystoneTLM(
      batteryMillivolts: mv, temperatureRaw: temp, advertisingCount: count, uptimeTenths: 10948)
  }

  func decode(_ bytes: [UInt8]) -> TrackedFrame? {
    bytes.withUnsafeBytes { TrackedFrame.decode(advertisingData: $0) }
  }

  /// The frames the monitor takes: a UID as a beacon, a TLM as telemetry
  /// (what the encoder writes reads back), nothing from malformed data.
  func testTrackedFrameTellsBeaconsFromTelemetry() throws {
    let data = HCIEventEncoder.beaconAdvertisingData(TrackedBeacon(id: uid, measuredPower: -59))
    guard case .beacon(let beacon)? = decode(data) else { return XCTFail("a UID is a beacon") }
    XCTAssertEqual(beacon.id, uid)
    let frame = HCIEventEncoder.eddystoneTLMAdvertisingData(tlm(2840))
    guard case .telemetry(let t)? = decode(frame) else { return XCTFail("a TLM is telemetry") }
    XCTAssertEqual(t, tlm(2840))
    XCTAssertNil(decode(frame.dropLast()), "a truncated TLM is malformed data")
    XCTAssertNil(decode(frame + [0x05]), "a structure cut short is malformed data")
    XCTAssertNil(decode([0x02, 0x01, 0x06]), "flags alone are neither")
    XCTAssertNil(
      frame.withUnsafeBytes { TrackedBeacon.decode(advertisingData: $0) },
      "a TLM is not a beacon to track")
  }

  func testAReadingJoinsTheBeaconItsAddressNamed() throws {
    var j = TelemetryJoiner()
    XCTAssertNil(j.beacon(uid, address: a, at: 0), "nothing waited")
    let shown = WallTime(micros: 1_767_225_600_000_000)
    let (id, reading) = try XCTUnwrap(
      j.telemetry(tlm(2840), address: a, at: DecisionTime(micros: 1_000_000), shown: shown))
    XCTAssertEqual(id, uid)
    XCTAssertEqual(reading.batteryMillivolts, 2840)
    XCTAssertEqual(reading.temperature, 19)
    XCTAssertEqual(reading.uptimeSeconds, 1094.8, accuracy: 1e-9)
    XCTAssertEqual(reading.decided, DecisionTime(micros: 1_000_000))
    XCTAssertEqual(reading.shown, shown, "the time shown travels with the reading")
    XCTAssertEqual(j.telemetry(of: uid), reading)
    XCTAssertNil(j.telemetry(of: other))
    // Another address's TLM is not this beacon's.
    XCTAssertNil(j.telemetry(tlm(3000), address: b, at: 2_000_000))
    XCTAssertEqual(j.telemetry(of: uid)?.batteryMillivolts, 2840)
  }

  /// A TLM heard first waits for its address's identity frame; only the
  /// newest waits.
  func testATelemetryHeardFirstWaitsForItsBeacon() throws {
    var j = TelemetryJoiner()
    XCTAssertNil(j.telemetry(tlm(2900), address: a, at: 0))
    XCTAssertNil(j.telemetry(tlm(2890), address: a, at: 1))
    XCTAssertNil(j.telemetry(of: uid))
    let joined = try XCTUnwrap(j.beacon(uid, address: a, at: 2))
    XCTAssertEqual(joined.batteryMillivolts, 2890)
    XCTAssertEqual(joined.decided, DecisionTime(micros: 1), "when it was heard, not joined")
    XCTAssertEqual(j.telemetry(of: uid), joined)
    XCTAssertNil(j.beacon(uid, address: a, at: 3), "joined once")
  }

  /// An address that names another beacon moves its later readings there.
  func testAnAddressThatNamesAnotherBeaconMovesItsReadings() throws {
    var j = TelemetryJoiner()
    _ = j.beacon(uid, address: a, at: 0)
    _ = j.telemetry(tlm(2840), address: a, at: 1)
    _ = j.beacon(other, address: a, at: 2)
    XCTAssertEqual(j.telemetry(tlm(3100), address: a, at: 3)?.0, other)
    XCTAssertEqual(j.telemetry(of: uid)?.batteryMillivolts, 2840)
    XCTAssertEqual(j.telemetry(of: other)?.batteryMillivolts, 3100)
  }

  /// No sensor, no battery: the fields are absent, not zero or -128 °C.
  func testMissingBatteryAndSensorAreLeftOut() {
    let r = BeaconTelemetry(tlm(0, temp: EddystoneTLM.temperatureNotSupported), at: 5)
    XCTAssertNil(r.batteryMillivolts)
    XCTAssertNil(r.temperature)
    var j = JSONLine()
    r.addFields(to: &j)
    XCTAssertEqual(j.line, #"{"adv_count":5223,"uptime":1094.8}"#)
    var k = JSONLine()
    BeaconTelemetry(tlm(2840), at: 5).addFields(to: &k)
    XCTAssertEqual(
      k.line, #"{"battery_mv":2840,"temperature":19.00,"adv_count":5223,"uptime":1094.8}"#)
  }

  /// Whatever the flood of addresses and beacons, the joiner holds at most
  /// its capacity of each, and keeps the most recently heard.
  func testMemoryIsBoundedAndTheRecentStay() {
    var j = TelemetryJoiner(capacity: 8)
    for n in 0..<1000 {
      let address = BDAddress(raw: 0xC100_0000_0000 | UInt64(n))
      let id = TrackedID(
        eddystoneNamespace: BeaconBytes(hex: "8f2c1a3e5b7d4e90a1c2")!,
        instance: BeaconBytes(hex: format6(n))!)
      _ = j.beacon(id, address: address, at: Int64(n) * 10)
      _ = j.telemetry(tlm(3000), address: address, at: Int64(n) * 10 + 1)
      XCTAssertLessThanOrEqual(j.counts.addresses, 8)
      XCTAssertLessThanOrEqual(j.counts.readings, 8)
    }
    let last = TrackedID(
      eddystoneNamespace: BeaconBytes(hex: "8f2c1a3e5b7d4e90a1c2")!,
      instance: BeaconBytes(hex: format6(999))!)
    XCTAssertNotNil(j.telemetry(of: last))
    XCTAssertEqual(
      j.telemetry(tlm(2000), address: BDAddress(raw: 0xC100_0000_0000 | 999), at: 20_000)?.0, last)
  }

  func format6(_ n: Int) -> String {
    let hex = String(n, radix: 16)
    return String(repeating: "0", count: 12 - hex.count) + hex
  }

  /// The first reading passes, then one per interval, or sooner when the
  /// battery moved by the step; a clock going back passes (a restart).
  func testTheThrottlePassesTheFirstThenOnePerIntervalOrABatteryMove() {
    var th = TelemetryThrottle(interval: 60, batteryStep: 50)
    func r(_ s: Double, _ mv: UInt16) -> BeaconTelemetry {
      BeaconTelemetry(tlm(mv), at: Int64(s * 1e6))
    }
    XCTAssertTrue(th.shouldPass(uid, r(0, 3000)))
    XCTAssertFalse(th.shouldPass(uid, r(10, 3000)))
    XCTAssertFalse(th.shouldPass(uid, r(59.9, 2960)), "moved 40 mV: less than the step")
    XCTAssertTrue(th.shouldPass(uid, r(60, 2960)))
    XCTAssertTrue(th.shouldPass(uid, r(61, 2910)), "moved 50 mV")
    XCTAssertTrue(th.shouldPass(other, r(61.5, 2910)), "another beacon's first")
    XCTAssertFalse(th.shouldPass(uid, r(62, 2910)))
    XCTAssertTrue(th.shouldPass(uid, BeaconTelemetry(tlm(0), at: 63_000_000)), "the battery went")
    XCTAssertTrue(th.shouldPass(uid, r(1, 2910)), "time went back")
  }
}

extension BeaconTelemetryTests {
  /// A scenario beacon with `telemetry` sends a TLM frame after every tenth
  /// heard event, from its own address; the other beacons' reports are the
  /// same as without it (the generator is not drawn for it). A bad value
  /// names what was expected.
  func testAScenarioBeaconSendsTelemetry() throws {
    func build(_ telemetry: String?) throws -> Scenario {
      try Scenario.build(
        document(
          """
          [scenario]
          start = 1767225600
          duration = 100
          seed = 3
          [beacon "keys"]
          eddystone = 8f2c1a3e5b7d4e90a1c2:000000000001
          interval = 1
          loss = 0.3
          present = 0-100
          \(telemetry.map { "telemetry = \($0)" } ?? "")
          [beacon "desk"]
          uuid = 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182
          interval = 0.5
          loss = 0.2
          present = 0-100

          """))
    }
    let with = try build("2950:21.5").events()
    let without = try build(nil).events()
    let tlm = with.compactMap { e -> (WallTime, EddystoneTLM, BDAddress)? in
      if case .telemetry(let t, let f, let a, _) = e { (t, f, a) } else { nil }
    }
    let heard = without.filter {
      if case .report(_, let b, _, _) = $0 { b.id == uid } else { false }
    }
    XCTAssertEqual(tlm.count, heard.count / 10)
    XCTAssertEqual(Set(tlm.map(\.1.batteryMillivolts)), [2950])
    XCTAssertEqual(tlm.first?.1.temperature, 21.5)
    XCTAssertEqual(tlm.map(\.1.advertisingCount), (1...tlm.count).map { UInt32($0 * 10) })
    let others = with.filter { if case .telemetry = $0 { false } else { true } }
    XCTAssertEqual(others, without)
    // Through a capture, each TLM decodes and joins the beacon.
    var joiner = TelemetryJoiner()
    var joined = 0
    for e in with {
      switch e {
      case .report(let t, let b, let a, _): _ = joiner.beacon(b.id, address: a, at: t.micros)
      case .telemetry(let t, let f, let a, _):
        let frame = HCIEventEncoder.eddystoneTLMAdvertisingData(f)
        guard case .telemetry(let decoded)? = decode(frame) else { return XCTFail("\(frame)") }
        XCTAssertEqual(decoded, f)
        if joiner.telemetry(decoded, address: a, at: t.micros)?.0 == uid { joined += 1 }
      default: break
      }
    }
    XCTAssertEqual(joined, tlm.count)
    for bad in ["2950", "0:20", "2950:200", "x:1"] {
      XCTAssertThrowsError(try build(bad), bad) { error in
        XCTAssertTrue("\(error)".contains("MILLIVOLTS:CELSIUS"), "\(error)")
      }
    }
  }
}

/// The tests' readings are heard and shown at the same microsecond.
extension TelemetryJoiner {
  fileprivate mutating func beacon(_ id: TrackedID, address: BDAddress, at micros: Int64)
    -> BeaconTelemetry?
  {
    beacon(id, address: address, at: DecisionTime(micros: micros))
  }

  fileprivate mutating func telemetry(_ tlm: EddystoneTLM, address: BDAddress, at micros: Int64)
    -> (TrackedID, BeaconTelemetry)?
  {
    telemetry(
      tlm, address: address, at: DecisionTime(micros: micros), shown: WallTime(micros: micros))
  }
}

extension BeaconTelemetry {
  fileprivate init(_ tlm: EddystoneTLM, at micros: Int64) {
    self.init(tlm, decided: DecisionTime(micros: micros), shown: WallTime(micros: micros))
  }
}
