import EarshotTestSupport
import XCTest

@testable import EarshotCore

/// Identity regions in the pure monitor: devices found by their identity
/// addresses or by resolvable private addresses that a key resolves. The
/// cipher is the counting stand-in (`CountingMixCipher`): resolution only
/// needs a function both sides agree on; AES itself is tested on libcrypto.
final class IdentityRegionTests: XCTestCase {
  let keyA = try! IdentityResolvingKey(hex: "ec0234a357c8ad05341010a60a397d9b")
  let keyB = try! IdentityResolvingKey(hex: "0123456789abcdef0123456789abcdef")
  let phoneIdentity = BDAddress("00:1A:7D:DA:71:13")!

  func deviceRegion(
    _ name: String, devices: [BDAddress] = [], irks: [IdentityResolvingKey] = [],
    exitAfter: ExitAfter = .seconds(10)
  ) -> RegionConfig {
    var r = RegionConfig(name: name, line: 1)
    r.devices = devices
    r.irks = irks
    r.exitAfter = exitAfter
    return r
  }

  func phone(
    kind: ScenarioDevice.AddressKind = .rpa, irk: IdentityResolvingKey?, rotate: Double = 60,
    present: [Range<Double>]
  ) -> ScenarioDevice {
    var d = ScenarioDevice(name: "phone")
    d.kind = kind
    d.irk = irk
    d.identity = phoneIdentity
    d.rotate = rotate
    d.interval = 0.5
    d.loss = 0.3
    d.present = present
    return d
  }

  func scenario(_ devices: [ScenarioDevice], duration: Double = 600) -> Scenario {
    var s = Scenario()
    s.duration = duration
    s.seed = 7
    s.devices = devices
    return s
  }

  func config(_ regions: [RegionConfig]) -> Config {
    var c = Config()
    c.regions = regions
    return c
  }

  // MARK: Resolution against configured keys

  /// A phone rotating its private address every minute, present 30-200 s
  /// and 300-450 s: the region named by its key enters and exits at the
  /// right times, and never exits while it is there (the address changes
  /// are not absences).
  func testRotatingPrivateAddressesGiveEnterAndExitOnTime() {
    let s = scenario([phone(irk: keyA, present: [30..<200, 300..<450])])
    let reports = s.events(cipher: CountingMixCipher())
    let addresses = Set(
      reports.compactMap { e -> BDAddress? in
        if case .deviceReport(_, let a, _, _, _) = e { return a }
        return nil
      })
    XCTAssertGreaterThanOrEqual(addresses.count, 5, "the address rotates")
    XCTAssertTrue(addresses.allSatisfy(\.isResolvablePrivate))
    let region = deviceRegion("phone", irks: [keyA])
    let (_, events) = runScenario(s, config(config: [region]), cipher: CountingMixCipher())
    assertMatchesTruth(
      events, region: "phone", truth: s.presence(matching: region), scenario: s,
      enterBound: 2, exitBound: 12)
    XCTAssertEqual(events.filter { $0.kind == .enter }.count, 2)
    XCTAssertEqual(events.filter { $0.kind == .exit }.count, 2)
  }

  /// Another key's addresses are not this region's device.
  func testAnotherKeyDoesNotMatch() {
    let s = scenario([phone(irk: keyB, present: [30..<200])])
    let (m, events) = runScenario(
      s, config(config: [deviceRegion("phone", irks: [keyA])]), cipher: CountingMixCipher())
    XCTAssertFalse(events.contains { $0.state == .inside })
    XCTAssertEqual(m.state(of: "phone"), .outside)
  }

  /// Non-resolvable private addresses never match, whatever the keys: not
  /// even one whose 24 low bits happen to equal a hash.
  func testNonResolvablePrivateAddressesNeverMatch() {
    let s = scenario([phone(kind: .nrpa, irk: keyA, present: [0..<600])])
    let region = deviceRegion("phone", devices: [phoneIdentity], irks: [keyA])
    let (m, events) = runScenario(s, config(config: [region]), cipher: CountingMixCipher())
    XCTAssertFalse(events.contains { $0.state == .inside })
    XCTAssertEqual(m.devices.resolvedCount, 0)
    XCTAssertEqual(m.devices.unresolvedCount, 0, "never tried: not resolvable")
    // An NRPA built from a real RPA's bits but with the top bits 0b00.
    let cipher = CountingMixCipher()
    let rpa = keyA.address(prand: 0x12_3456, cipher: cipher)
    var monitor = RegionMonitor(config: config(config: [region]), cipher: cipher)
    _ = monitor.start(at: DecisionTime(micros: 0), scanning: true)
    let nrpa = BDAddress(raw: rpa.raw & 0x3FFF_FFFF_FFFF)
    XCTAssertTrue(
      monitor.report(
        at: DecisionTime(micros: 1), address: nrpa, type: .random, rssi: -60, txPower: nil
      )
      .isEmpty)
    XCTAssertEqual(
      monitor.report(
        at: DecisionTime(micros: 2), address: rpa, type: .random, rssi: -60, txPower: nil
      ).map(\.state),
      [.inside])
  }

  /// A device without privacy is matched by its identity address: public,
  /// or static random.
  func testPublicAndStaticIdentitiesMatchDirectly() {
    for kind in [ScenarioDevice.AddressKind.public, .static] {
      var d = phone(kind: kind, irk: nil, present: [50..<150])
      if kind == .static { d.identity = BDAddress("C3:11:22:33:44:55")! }
      let s = scenario([d], duration: 300)
      let region = deviceRegion("phone", devices: [d.identity!])
      // No cipher at all: identity addresses need none.
      let (_, events) = runScenario(s, config(config: [region]))
      assertMatchesTruth(
        events, region: "phone", truth: [50..<150], scenario: s, enterBound: 2, exitBound: 12)
      XCTAssertEqual(events.filter { $0.kind == .exit }.count, 1, "\(kind)")
    }
    // A public address with a static random's top bits still matches as public.
    var m = RegionMonitor(config: config(config: [deviceRegion("x", devices: [phoneIdentity])]))
    _ = m.start(at: DecisionTime(micros: 0), scanning: true)
    XCTAssertTrue(
      m.report(
        at: DecisionTime(micros: 1), address: phoneIdentity, type: .random, rssi: -50, txPower: nil
      ).isEmpty,
      "a random address equal to a public identity's bits is not that device")
    XCTAssertEqual(
      m.report(
        at: DecisionTime(micros: 2), address: phoneIdentity, type: .publicIdentity, rssi: -50,
        txPower: nil
      )
      .map(\.state), [.inside])
  }

  // MARK: Bonded keys

  /// `device =` names a bonded device: its private addresses resolve only
  /// once the bond store has handed over its key, and stop when the bond goes.
  func testBondedKeysResolveTheNamedDevice() {
    let cipher = CountingMixCipher()
    let region = deviceRegion("phone", devices: [phoneIdentity])
    var m = RegionMonitor(config: config(config: [region]), emitRange: false, cipher: cipher)
    _ = m.start(at: DecisionTime(micros: 0), scanning: true)
    let rpa1 = keyA.address(prand: 0x11_1111, cipher: cipher)
    XCTAssertTrue(
      m.report(
        at: DecisionTime(micros: 1_000_000), address: rpa1, type: .random, rssi: -60, txPower: nil
      )
      .isEmpty)
    XCTAssertEqual(m.devices.unresolvedCount, 0, "no key yet: nothing to try")
    m.updateBondedKeys([
      BondedKey(identity: phoneIdentity, identityType: .public, irk: keyA, name: "Pixel")
    ])
    let entered = m.report(
      at: DecisionTime(micros: 2_000_000), address: rpa1, type: .random, rssi: -60, txPower: nil)
    XCTAssertEqual(entered.map(\.state), [.inside])
    XCTAssertEqual(entered.first?.beacons.first?.id.device?.address, phoneIdentity)
    XCTAssertEqual(m.lastSeen(device: phoneIdentity)?.micros, 2_000_000)
    // The bond removed: its addresses no longer count, and the region exits.
    m.updateBondedKeys([])
    let rpa2 = keyA.address(prand: 0x22_2222, cipher: cipher)
    _ = m.report(
      at: DecisionTime(micros: 3_000_000), address: rpa2, type: .random, rssi: -60, txPower: nil)
    XCTAssertEqual(m.devices.resolvedCount, 0)
    let later = m.advance(to: DecisionTime(micros: 13_000_000))
    XCTAssertEqual(later.map(\.kind), [.exit])
    XCTAssertNil(m.lastSeen(device: phoneIdentity))
  }

  /// A controller that resolves addresses itself (its resolving list
  /// holds the bonded device's key) reports the identity address with
  /// type 0x02 (public identity) or 0x03 (random static identity) instead
  /// of the RPA: that is the bonded device, with no cipher call.
  func testControllerResolvedIdentityReportsMatchBondedDevices() {
    let cipher = CountingMixCipher()
    let watchIdentity = BDAddress("C4:11:22:33:44:55")!
    var m = RegionMonitor(
      config: config(config: [
        deviceRegion("phone", devices: [phoneIdentity]),
        deviceRegion("watch", devices: [watchIdentity]),
      ]), emitRange: false, cipher: cipher)
    _ = m.start(at: DecisionTime(micros: 0), scanning: true)
    m.updateBondedKeys([
      BondedKey(identity: phoneIdentity, identityType: .public, irk: keyA, name: "Pixel"),
      BondedKey(identity: watchIdentity, identityType: .staticRandom, irk: keyB, name: "Watch"),
    ])
    cipher.calls = 0
    let phone = m.report(
      at: DecisionTime(micros: 1_000_000), address: phoneIdentity, type: .publicIdentity, rssi: -60,
      txPower: nil)
    XCTAssertEqual(phone.map(\.region), ["phone"])
    XCTAssertEqual(phone.map(\.state), [.inside])
    let watch = m.report(
      at: DecisionTime(micros: 1_100_000), address: watchIdentity, type: .randomIdentity, rssi: -60,
      txPower: nil)
    XCTAssertEqual(watch.map(\.region), ["watch"])
    XCTAssertEqual(m.lastSeen(device: phoneIdentity)?.micros, 1_000_000)
    XCTAssertEqual(m.lastSeen(device: watchIdentity)?.micros, 1_100_000)
    XCTAssertEqual(cipher.calls, 0, "an identity report is a lookup")
    // The identity types keep public and static apart: the watch's address
    // as a public identity is some other device.
    XCTAssertTrue(
      m.report(
        at: DecisionTime(micros: 1_200_000), address: watchIdentity, type: .publicIdentity,
        rssi: -60, txPower: nil
      )
      .isEmpty)
    XCTAssertEqual(m.lastSeen(device: watchIdentity)?.micros, 1_100_000)
  }

  /// A known address costs a lookup, not a cipher call; a miss is
  /// remembered too; new keys forget both.
  func testResolvedAndMissedAddressesAreCached() {
    let cipher = CountingMixCipher()
    let keys = (0..<50).map { i in
      IdentityResolvingKey(Block128(high: 0x1000 + UInt64(i), low: 0xABCD ^ UInt64(i)))
    }
    let region = deviceRegion("all", irks: keys)
    var m = RegionMonitor(config: config(config: [region]), emitRange: false, cipher: cipher)
    _ = m.start(at: DecisionTime(micros: 0), scanning: true)
    let mine = keys[49].address(prand: 0x33_3333, cipher: cipher)
    let stranger = keyB.address(prand: 0x44_4444, cipher: cipher)
    cipher.calls = 0
    _ = m.report(at: DecisionTime(micros: 1), address: mine, type: .random, rssi: -60, txPower: nil)
    _ = m.report(
      at: DecisionTime(micros: 2), address: stranger, type: .random, rssi: -60, txPower: nil)
    XCTAssertEqual(cipher.calls, 50 + 50, "the last key of 50, and all 50 for the stranger")
    for t in 3..<100 {
      _ = m.report(
        at: DecisionTime(micros: Int64(t)), address: t % 2 == 0 ? mine : stranger, type: .random,
        rssi: -60, txPower: nil)
    }
    XCTAssertEqual(cipher.calls, 100, "repeats are lookups")
    XCTAssertEqual(m.devices.resolvedCount, 1)
    XCTAssertEqual(m.devices.unresolvedCount, 1)
    m.updateBondedKeys([BondedKey(identity: phoneIdentity, identityType: .public, irk: keyB)])
    XCTAssertEqual(m.devices.resolvedCount + m.devices.unresolvedCount, 0, "new keys, fresh caches")
    // The same set again keeps them.
    _ = m.report(
      at: DecisionTime(micros: 200), address: mine, type: .random, rssi: -60, txPower: nil)
    m.updateBondedKeys([BondedKey(identity: phoneIdentity, identityType: .public, irk: keyB)])
    XCTAssertEqual(m.devices.resolvedCount, 1)
  }

  // MARK: Ranging

  /// The TX Power field gives the 1 m power (less 41 dB); without it, the
  /// region's `power =`; range lines say which.
  func testRangingSaysWhichPowerItUsed() {
    let cipher = CountingMixCipher()
    var region = deviceRegion("phone", irks: [keyA])
    region.power = -65
    var m = RegionMonitor(config: config(config: [region]), emitRange: true, cipher: cipher)
    _ = m.start(at: DecisionTime(micros: 0), scanning: true)
    let rpa = keyA.address(prand: 0x55_5555, cipher: cipher)
    _ = m.report(
      at: DecisionTime(micros: 100_000), address: rpa, type: .random, rssi: -65, txPower: nil)
    var ranged = m.rangedBeacons(region: "phone", at: DecisionTime(micros: 200_000))
    XCTAssertEqual(ranged.first?.powerSource, .region)
    XCTAssertEqual(try XCTUnwrap(ranged.first?.accuracy), 1, accuracy: 0.01)
    _ = m.report(
      at: DecisionTime(micros: 300_000), address: rpa, type: .random, rssi: -65, txPower: 8)
    ranged = m.rangedBeacons(region: "phone", at: DecisionTime(micros: 400_000))
    XCTAssertEqual(ranged.first?.powerSource, .txPower)
    // -65 dBm heard from 8 - 41 = -33 dBm at 1 m: well beyond a metre.
    XCTAssertGreaterThan(try XCTUnwrap(ranged.first?.accuracy), 10)
    let line = MonitorEventFormatter.beaconJSON(ranged[0])
    XCTAssertTrue(line.hasPrefix(#"{"device":"irk#"#), line)
    XCTAssertTrue(line.hasSuffix(#","power":"tx_power"}"#), line)
    XCTAssertFalse(line.contains(keyA.hex), "the key is not printed")
  }

  // MARK: Beacons and devices together; the state file

  func testRegionWithBeaconsAndDevices() {
    let cipher = CountingMixCipher()
    var both = deviceRegion("desk", irks: [keyA])
    both.uuid = testUUID
    var m = RegionMonitor(config: config(config: [both]), emitRange: false, cipher: cipher)
    _ = m.start(at: DecisionTime(micros: 0), scanning: true)
    let b = TrackedBeacon(id: TrackedID(uuid: testUUID, major: 1, minor: 1), measuredPower: -59)
    XCTAssertEqual(
      m.report(
        at: DecisionTime(micros: 1_000_000), beacon: b, address: BDAddress(raw: 1), rssi: -60
      ).map(\.state),
      [.inside])
    // The beacon goes quiet; the phone keeps the region inside.
    let rpa = keyA.address(prand: 0x66_6666, cipher: cipher)
    for s in 2..<30 {
      XCTAssertTrue(
        m.report(
          at: DecisionTime(micros: Int64(s) * 1_000_000), address: rpa, type: .random, rssi: -60,
          txPower: nil
        )
        .isEmpty)
    }
    XCTAssertEqual(m.state(of: "desk"), .inside)
    XCTAssertEqual(m.advance(to: DecisionTime(micros: 40_000_000)).map(\.kind), [.exit])
    XCTAssertTrue(both.identity.contains("+irk=" + keyA.tag))
    XCTAssertFalse(both.identity.contains(keyA.hex))
  }

  /// The proximity log keeps an identity region's events, without a cause,
  /// and no sightings of devices, whether the agent logs or lines are imported.
  func testLogKeepsRegionEventsButNoDeviceSightings() throws {
    let device = RangedBeacon(
      id: .device(DeviceIdentity(address: phoneIdentity, irk: nil)),
      address: phoneIdentity, rssi: -60, accuracy: 1.2, proximity: .near, powerSource: .region)
    XCTAssertEqual(
      ProximityEvent.from(
        MonitorEvent(capture: 5, kind: .enter, region: "alice", state: .inside, beacons: [device])),
      [
        .region(
          RegionLogEvent(
            t: WallTime(micros: 5), region: "alice", kind: .enter, state: .inside, beacon: nil))
      ])
    let range = MonitorEvent(
      capture: 6, kind: .range, region: "alice", state: .inside, beacons: [device])
    XCTAssertEqual(ProximityEvent.from(range), [])
    XCTAssertEqual(
      try MonitorLineImport.events(fromLine: MonitorEventFormatter.json(range)), [])
  }

  func config(config regions: [RegionConfig]) -> Config { config(regions) }
}
