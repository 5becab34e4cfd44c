import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

/// A reload that brings a `[layout]` and a region naming it: the driver
/// decodes the new format from then on, so the region enters (the kinds
/// are interned, so the region's match and the decoder agree).
final class LayoutReloadTests: XCTestCase {
  func testAReloadBringsALayoutAndItsRegion() throws {
    let before = try Config.build(
      IniReader.parse(
        "[region \"desk\"]\nuuid = 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182\n", file: "a.conf"))
    let after = try Config.build(
      IniReader.parse(
        """
        [region "desk"]
        uuid = 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182
        [layout "crates"]
        layout = m:2-3=c4a7,i:4-9,p:10-10
        [region "crate"]
        beacon = crates:0a0b0c0d0e0f
        exit_after = 30
        """, file: "b.conf"))
    var events: [MonitorEvent] = []
    let driver = try MonitorDriver(
      config: before, emitRange: false, stateFile: nil, runHooks: false,
      output: { events.append($0) }, log: { _ in })
    let id = try XCTUnwrap(TrackedID.parse("crates:0a0b0c0d0e0f"))
    let frame = HCIEventEncoder.beaconAdvertisingData(TrackedBeacon(id: id, measuredPower: -59))
    func hear(_ s: Int64) {
      frame.withUnsafeBytes { d in
        driver.report(
          at: DecisionTime(micros: s * 1_000_000),
          AdvertisingReport(
            pdu: .advNonconnInd, address: BDAddress("C0:00:00:00:00:0C")!, addressType: .random,
            rssi: -60, data: d))
      }
    }
    driver.start(at: DecisionTime(micros: 0), scanning: true)
    hear(1)
    driver.reconfigure(after, at: DecisionTime(micros: 2_000_000))
    hear(3)
    hear(4)
    XCTAssertTrue(
      events.contains { $0.region == "crate" && $0.state == .inside },
      events.map { "\($0.kind) \($0.region) \($0.state)" }.joined(separator: "\n"))
  }
}
