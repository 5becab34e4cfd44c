import XCTest

@testable import EarshotCore

/// Sightings in the ESPresense firmware's format: ids, room slugs and the
/// message (`ESPresenseFormat`).
final class ESPresenseFormatTests: XCTestCase {
  let uuid = BeaconUUID("8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182")!

  func testIdsAsTheFirmwareMakesThem() throws {
    XCTAssertEqual(
      ESPresenseFormat.id(.beacon(BeaconID(uuid: uuid, major: 1, minor: 10))),
      "iBeacon:8f2c1a3e-5b7d-4e90-a1c2-3d4e5f607182-1-10")
    let eddy = BeaconID(
      eddystoneNamespace: BeaconBytes(hex: "00112233445566778899")!,
      instance: BeaconBytes(hex: "aabbccddeeff")!)
    // The firmware prints the namespace's fifth byte twice.
    XCTAssertEqual(ESPresenseFormat.id(.beacon(eddy)), "eddy:0011223344445566778899-aabbccddeeff")
    XCTAssertNil(
      ESPresenseFormat.id(.beacon(BeaconID(format: .altBeacon, uuid: uuid, major: 1, minor: 2))),
      "an AltBeacon of a real company has no beacon id in ESPresense")
    XCTAssertEqual(
      ESPresenseFormat.id(.device(.address(BDAddress("00:1A:7D:DA:71:13")!))), "001a7dda7113")
    let irk = try IdentityResolvingKey(hex: "9F4A2C0E5B7D41E8A1C23D4E5F607182")
    XCTAssertEqual(
      ESPresenseFormat.id(.device(.key(tag: irk.tag)), irk: irk),
      "irk:9f4a2c0e5b7d41e8a1c23d4e5f607182")
  }

  func testRoomSlugs() {
    XCTAssertEqual(ESPresenseFormat.room("Living Room"), "living_room")
    XCTAssertEqual(ESPresenseFormat.room("  Küche -- 2 "), "k_che_2")
    XCTAssertEqual(ESPresenseFormat.room("office_1"), "office_1")
  }

  func testTheMessage() throws {
    let s = RoomSighting(
      t: 1_767_225_600_000_000, beacon: BeaconID(uuid: uuid, major: 1, minor: 10),
      room: "Living Room", rssi: -71.234, distance: 2.345, count: 3)
    let m = try XCTUnwrap(
      ESPresenseFormat.message(
        s, id: "iBeacon:8f2c1a3e-5b7d-4e90-a1c2-3d4e5f607182-1-10",
        address: BDAddress("C0:00:00:01:00:0A")!, power: -59))
    XCTAssertEqual(
      m.topic, "espresense/devices/iBeacon:8f2c1a3e-5b7d-4e90-a1c2-3d4e5f607182-1-10/living_room")
    XCTAssertEqual(
      m.payload,
      #"{"mac":"c0000001000a","id":"iBeacon:8f2c1a3e-5b7d-4e90-a1c2-3d4e5f607182-1-10","rssi@1m":-59,"rssi":-71.23,"rxAdj":0,"distance":2.35}"#
    )
    var noDistance = s
    noDistance.distance = nil
    XCTAssertNil(
      ESPresenseFormat.message(
        noDistance, id: "x", address: BDAddress("C0:00:00:01:00:0A")!, power: -59),
      "mqtt_room needs a distance")
  }
}
