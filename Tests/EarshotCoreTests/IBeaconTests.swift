import EarshotTestSupport
import XCTest

@testable import EarshotCore

final class IBeaconTests: XCTestCase {
  func decode(_ h: String) -> TrackedBeacon? {
    hex(h).withUnsafeBytes { TrackedBeacon.iBeacon(advertisingData: $0) }
  }

  func testDecodesAFrameByteByByte() throws {
    let b = try XCTUnwrap(decode("0201061aff4c0002154142434445464748494041424344454600010002f8"))
    XCTAssertEqual(b.uuid.description, "41424344-4546-4748-4940-414243444546")
    XCTAssertEqual(b.major, 1)
    XCTAssertEqual(b.minor, 2)
    XCTAssertEqual(b.measuredPower, -8)
    XCTAssertFalse(b.isPowerSuspect)
  }

  func testRejectsWrongCompanyTypeLengthAndTruncation() {
    XCTAssertNil(decode("1aff4d0002154142434445464748494041424344454600010002f8"), "company 0x004D")
    XCTAssertNil(decode("1aff4c0003154142434445464748494041424344454600010002f8"), "type 0x03")
    XCTAssertNil(decode("1aff4c0002144142434445464748494041424344454600010002f8"), "length 0x14")
    XCTAssertNil(decode("19ff4c00021541424344454647484940414243444546000100f8"), "24-byte payload")
    XCTAssertNil(
      decode("1bff4c0002154142434445464748494041424344454600010002f800"), "26-byte payload")
    XCTAssertNil(decode("1aff4c0002154142434445464748494041424344454600010002"), "overrun")
  }

  func testRejectsIBeaconBytesInsideOtherVendorData() {
    // Govee-style: another company's data that happens to contain 4C 00 02 15.
    XCTAssertNil(decode("1eff88ec4c0002154142434445464748494041424344454600010002f8aabb"))
  }

  func testFlagsImplausibleMeasuredPower() throws {
    let b = try XCTUnwrap(
      hex("4c000215b9407f30f5f8466eaff925556b57fe6d294c903974").withUnsafeBytes {
        TrackedBeacon.iBeacon(manufacturerData: $0)
      })
    XCTAssertEqual(b.measuredPower, 116)
    XCTAssertTrue(b.isPowerSuspect)
  }

  func testUUIDParsesAndPrintsUpperCase() throws {
    let u = try XCTUnwrap(BeaconUUID("8f2c1a3e-5b7d-4e90-a1c2-3d4e5f607182"))
    XCTAssertEqual(u.description, "8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182")
    XCTAssertNil(BeaconUUID("8f2c1a3e5-b7d-4e90-a1c2-3d4e5f607182"))
    XCTAssertNil(BeaconUUID("8f2c1a3e-5b7d-4e90-a1c2-3d4e5f60718"))
  }
}
