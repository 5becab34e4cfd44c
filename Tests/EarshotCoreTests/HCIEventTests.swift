import EarshotTestSupport
import XCTest

@testable import EarshotCore

final class HCIEventTests: XCTestCase {
  func testEventCodesAreTheSpecsAndTheKernels() {
    XCTAssertEqual(HCIEventCode.commandComplete.rawValue, 0x0E)
    XCTAssertEqual(HCIEventCode.commandStatus.rawValue, 0x0F)
    XCTAssertEqual(HCIEventCode.hardwareError.rawValue, 0x10)
    XCTAssertEqual(HCIEventCode.leMeta.rawValue, 0x3E)
    XCTAssertEqual(HCIEventCode.stackInternal.rawValue, 0xFD)
    XCTAssertEqual(HCIEventCode.vendorSpecific.rawValue, 0xFF)
    XCTAssertEqual(LESubeventCode.advertisingReport.rawValue, 0x02)
    XCTAssertEqual(LESubeventCode.directedAdvertisingReport.rawValue, 0x0B)
    XCTAssertEqual(LESubeventCode.extendedAdvertisingReport.rawValue, 0x0D)
    XCTAssertEqual(H4PacketType.command.rawValue, 0x01)
    XCTAssertEqual(H4PacketType.event.rawValue, 0x04)
    let kernel: [(HCIDeviceEvent, UInt16)] = [
      (.registered, 1), (.unregistered, 2), (.up, 3), (.down, 4), (.suspend, 5), (.resume, 6),
      (.open, 7), (.close, 8), (.setup, 9),
    ]
    for (event, value) in kernel { XCTAssertEqual(event.rawValue, value) }
  }

  func testStackInternalDeviceEventParses() {
    // FD 06 | type 0001 (device) | event 0002 (unregistered) | index 0003
    let unreg = hex("FD 06 01 00 02 00 03 00")
    let parsed = unreg.withUnsafeBytes { HCIStackInternal.deviceEvent(event: $0) }
    XCTAssertEqual(parsed?.event, .unregistered)
    XCTAssertEqual(parsed?.index, 3)
    let up = hex("FD 06 01 00 03 00 00 01")
    XCTAssertEqual(up.withUnsafeBytes { HCIStackInternal.deviceEvent(event: $0) }?.index, 0x100)
  }

  func testOtherEventsAreNoDeviceEvents() {
    for bytes in [
      hex("0E 04 01 0C 20 00"),  // Command Complete
      hex("FD 06 02 00 02 00 00 00"),  // another stack-internal type
      hex("FD 04 01 00 02 00"),  // too short for event and index
      hex("FD 06 01 00 02 00 00"),  // truncated
    ] {
      XCTAssertNil(bytes.withUnsafeBytes { HCIStackInternal.deviceEvent(event: $0) })
    }
  }
}
