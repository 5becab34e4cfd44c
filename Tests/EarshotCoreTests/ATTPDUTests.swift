import EarshotTestSupport
import XCTest

@testable import EarshotCore

final class ATTPDUTests: XCTestCase {
  func testUUIDIsLittleEndianOnTheWire() {
    XCTAssertEqual(
      ATT.uuidBytes("80ebd27d-5e77-455e-9d73-d30dfd1b5b6a"),
      hex("6a 5b 1b fd 0d d3 73 9d 5e 45 77 5e 7d d2 eb 80"))
    XCTAssertNil(ATT.uuidBytes("1234"))
  }

  func testRequests() {
    XCTAssertEqual(ATT.exchangeMTU(247), hex("02 f7 00"))
    XCTAssertEqual(ATT.readByType(start: 1, end: 0xFFFF, type: 0x2803), hex("08 01 00 ff ff 03 28"))
    XCTAssertEqual(ATT.findInformation(start: 0x10, end: 0x12), hex("04 10 00 12 00"))
    XCTAssertEqual(ATT.write(handle: 0x0203, value: [1, 7]), hex("12 03 02 01 07"))
    XCTAssertEqual(
      ATT.findByTypeValue(start: 1, end: 0xFFFF, type: 0x2800, value: [0xAA]),
      hex("06 01 00 ff ff 00 28 aa"))
    XCTAssertEqual(ATT.error(request: 0x10, handle: 1, code: 0x0A), hex("01 10 01 00 0a"))
  }

  func testResponses() {
    XCTAssertEqual(ATT.decode(hex("01 12 05 00 0d")), .error(request: 0x12, handle: 5, code: 0x0D))
    XCTAssertEqual(ATT.decode(hex("03 17 00")), .mtu(23))
    XCTAssertEqual(ATT.decode(hex("07 0a 00 10 00")), .servicesFound([(10, 16)]))
    XCTAssertEqual(
      ATT.decode(hex("09 07 02 00 10 03 00 2a 28 04 00 08 05 00 2b 28")),
      .characteristics([
        .init(declaration: 2, properties: 0x10, valueHandle: 3, uuid: [0x2A, 0x28]),
        .init(declaration: 4, properties: 0x08, valueHandle: 5, uuid: [0x2B, 0x28]),
      ]))
    XCTAssertEqual(ATT.decode(hex("05 01 0e 00 02 29")), .information([(14, 0x2902)]))
    XCTAssertEqual(ATT.decode(hex("13")), .written)
    XCTAssertEqual(
      ATT.decode(hex("1b 0e 00 81 07 00 00")), .notification(handle: 14, value: hex("81 07 00 00")))
    XCTAssertEqual(ATT.decode(hex("1d 0e 00")), .indication(handle: 14, value: []))
    // The peer's own discovery needs an answer; commands do not.
    XCTAssertEqual(ATT.decode(hex("10 01 00 ff ff 00 28")), .peerRequest(opcode: 0x10))
    XCTAssertEqual(ATT.decode(hex("52 01 00 00")), .other(opcode: 0x52))
  }

  func testMalformedIsNil() {
    for h in [
      "", "01 12", "03 17", "07 0a 00 10", "09 06 02 00", "09 07 02 00 10", "05 03 01 00", "1b 0e",
    ] {
      XCTAssertNil(ATT.decode(h.isEmpty ? [] : hex(h)), h)
    }
    var rng = SplitMix64(seed: 7)
    for _ in 0..<20_000 {
      let bytes = (0..<Int(rng.next() % 24)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
      _ = ATT.decode(bytes)
    }
  }
}
