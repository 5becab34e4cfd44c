import XCTest

@testable import EarshotCore

/// A dense room (a conference hall: thousands of phones, each rotating its
/// resolvable private address): every table the report path keeps that an
/// address or identity could grow stays bounded, with 100,000 distinct
/// addresses. State sizes are asserted, never timings (`earshot bench`
/// measures those).
final class DenseRoomBoundsTests: XCTestCase {
  static let addresses = 100_000

  /// A resolvable private address (top bits 01) for advertiser `i`.
  func rpa(_ i: Int) -> BDAddress {
    BDAddress(raw: 0x4000_0000_0000 | UInt64(i) &* 2_654_435_761 & 0x3FFF_FFFF_FFFF)
  }

  func testDecoderPendingChainsStayBoundedAndChainsStillJoin() {
    var decoder = AdvertisingEventDecoder()
    let part: [UInt8] = [0x05, 0xFF, 0x4C, 0x00, 0x10, 0x01]
    // Each advertiser sends a first fragment and never its last one.
    for i in 0..<Self.addresses {
      let event = part.withUnsafeBytes { d in
        HCIEventEncoder.extendedReport(
          AdvertisingReport(
            pdu: .extended([]), address: rpa(i), addressType: .random, rssi: -70, sid: 1,
            dataStatus: .incomplete, data: d))!
      }
      let outcome = event.withUnsafeBytes { e in decoder.decode(event: e) { _ in } }
      XCTAssertEqual(outcome, .reports(0))
      XCTAssertLessThanOrEqual(decoder.pendingChains, AdvertisingEventDecoder.maxPendingChains)
    }
    XCTAssertEqual(decoder.pendingChains, AdvertisingEventDecoder.maxPendingChains)
    // A chain begun now still joins.
    let address = BDAddress(raw: 0xC0FF_EE00_0001)
    var joined: [UInt8] = []
    for (status, data) in [(DataStatus.incomplete, [0x02, 0x01] as [UInt8]), (.complete, [0x06])] {
      let event = data.withUnsafeBytes { d in
        HCIEventEncoder.extendedReport(
          AdvertisingReport(
            pdu: .extended([]), address: address, addressType: .random, rssi: -70, sid: 1,
            dataStatus: status, data: d))!
      }
      _ = event.withUnsafeBytes { e in decoder.decode(event: e) { joined = Array($0.data) } }
    }
    XCTAssertEqual(joined, [0x02, 0x01, 0x06])
  }

  func testScanResponseMergerStaysBounded() {
    var merger = ScanResponseMerger()
    let data: [UInt8] = [0x02, 0x01, 0x06]
    for i in 0..<Self.addresses {
      data.withUnsafeBytes { d in
        merger.observe(
          AdvertisingReport(pdu: .advInd, address: rpa(i), addressType: .random, rssi: -60, data: d)
        ) { _ in }
      }
      XCTAssertLessThanOrEqual(merger.count, merger.capacity)
    }
  }

  /// Reports as `MonitorDriver` hands them over: iBeacons to `report`,
  /// everything else only moves time.
  func feed(_ m: inout RegionMonitor, at t: Int64, data: [UInt8], address: BDAddress) {
    data.withUnsafeBytes { d in
      if let b = TrackedBeacon.iBeacon(advertisingData: d) {
        _ = m.report(at: DecisionTime(micros: t), beacon: b, address: address, rssi: -70)
      } else {
        _ = m.advance(to: DecisionTime(micros: t))
      }
    }
  }

  func testMonitorKeepsOneRecordPerIdentityWhateverTheAddresses() {
    var c = Config()
    c.regions = [region("hall"), region("desk", major: 1, minor: 3)]
    var m = RegionMonitor(config: c)
    _ = m.start(at: DecisionTime(micros: 0), scanning: true)
    // Phones' own advertisements (Apple continuity, not iBeacons) from
    // 100,000 addresses, and 20 iBeacons whose addresses rotate as well.
    let phone: [UInt8] = [0x02, 0x01, 0x1A, 0x07, 0xFF, 0x4C, 0x00, 0x10, 0x02, 0x0B, 0x00]
    let beacons = (0..<20).map {
      HCIEventEncoder.iBeaconAdvertisingData(
        TrackedBeacon(
          id: TrackedID(uuid: testUUID, major: 1, minor: UInt16($0)), measuredPower: -59))
    }
    for i in 0..<Self.addresses {
      let t = Int64(i) * 200  // 5,000 reports/s
      feed(&m, at: t, data: i % 20 == 0 ? beacons[(i / 20) % 20] : phone, address: rpa(i))
      // The deadline remembered between reports is the one worked out afresh.
      XCTAssertEqual(m.deadline(), m.nextDeadline)
    }
    XCTAssertEqual(m.trackedBeacons, 20)
    XCTAssertEqual(m.state(of: "hall"), .inside)
    XCTAssertEqual(m.state(of: "desk"), .inside)
  }

  func testMonitorForgetsTheOldestWhenAFloodOfIdentitiesFillsIt() {
    var c = Config()
    c.monitor.exitAfter = .seconds(30)
    c.regions = [region("hall", exitAfter: .seconds(30)), region("desk", major: 9)]
    var m = RegionMonitor(config: c, emitRange: false)
    _ = m.start(at: DecisionTime(micros: 0), scanning: true)
    let desk = TrackedID(uuid: testUUID, major: 9, minor: 1)
    _ = m.report(
      at: DecisionTime(micros: 0), beacon: TrackedBeacon(id: desk, measuredPower: -59),
      address: rpa(0), rssi: -60)
    // 100,000 identities under the hall's UUID, one address each, within
    // 100 s: far sooner than the hour after which beacons are forgotten.
    var peak = 0
    for i in 1...Self.addresses {
      let id = TrackedID(uuid: testUUID, major: UInt16(i >> 16) + 1, minor: UInt16(i & 0xFFFF))
      _ = m.report(
        at: DecisionTime(micros: Int64(i) * 1_000),
        beacon: TrackedBeacon(id: id, measuredPower: -59), address: rpa(i),
        rssi: -70)
      peak = max(peak, m.trackedBeacons)
    }
    XCTAssertLessThanOrEqual(peak, RegionMonitor.defaultBeaconCapacity)
    XCTAssertGreaterThan(m.trackedBeacons, RegionMonitor.defaultBeaconCapacity / 2)
    _ = m.advance(to: DecisionTime(micros: Int64(Self.addresses) * 1_000 + 40_000_000))
    XCTAssertEqual(m.state(of: "hall"), .outside)
    XCTAssertEqual(m.state(of: "desk"), .outside)
    // The desk's beacon, seen first, is the one its exit names: kept.
    XCTAssertEqual(
      m.rangedBeacons(region: "desk", at: DecisionTime(micros: 0)).map(\.id.beacon), [desk])
  }

  /// Ranging's filter and the interval estimator live inside each record,
  /// with fixed sizes: a beacon heard for hours costs what one heard once does.
  func testPerBeaconStateHasAFixedSize() {
    var e = AdvertisingIntervalEstimator()
    var f = RSSIFilter()
    for i in 0..<Self.addresses {
      e.observe(at: DecisionTime(micros: Int64(i) * 100_000))
      f.add(-60, at: DecisionTime(micros: Int64(i) * 100_000))
    }
    XCTAssertEqual(e.intervalSeconds!, 0.1, accuracy: 0.004)
    XCTAssertLessThanOrEqual(MemoryLayout<BeaconRecord>.size, 600)
  }
}
