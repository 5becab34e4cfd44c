import XCTest

@testable import EarshotCore

/// Sightings in the ESPresense firmware's format: ids, room slugs and the
/// message (`ESPresenseFormat`).
final class ESPresenseFormatTests: XCTestCase {
  let uuid = BeaconUUID("8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182")!

  func testIdsAsTheFirmwareMakesThem() throws {
    XCTAssertEqual(
      ESPresenseFormat.id(.beacon(TrackedID(uuid: uuid, major: 1, minor: 10))),
      "iBeacon:8f2c1a3e-5b7d-4e90-a1c2-3d4e5f607182-1-10")
    let eddy = TrackedID(
      eddystoneNamespace: BeaconBytes(hex: "00112233445566778899")!,
      instance: BeaconBytes(hex: "aabbccddeeff")!)
    // The firmware prints the namespace's fifth byte twice.
    XCTAssertEqual(ESPresenseFormat.id(.beacon(eddy)), "eddy:0011223344445566778899-aabbccddeeff")
    XCTAssertNil(
      ESPresenseFormat.id(.beacon(TrackedID(kind: .altBeacon, uuid: uuid, major: 1, minor: 2))),
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
      t: WallTime(micros: 1_767_225_600_000_000),
      beacon: TrackedID(uuid: uuid, major: 1, minor: 10),
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

  func testANodesSightingAsTheAggregatorTakesIt() throws {
    let phone = TrackedDevice(name: "phone", address: BDAddress("A4:C1:38:1F:2B:3C")!)
    let irk = try IdentityResolvingKey(hex: "9F4A2C0E5B7D41E8A1C23D4E5F607182")
    let watch = TrackedDevice(name: "watch", irk: irk)
    func take(_ topic: String, _ payload: String) -> RoomSighting? {
      ESPresenseFormat.sighting(
        topic: topic, payload: Array(payload.utf8), trackDevices: [phone, watch],
        now: WallTime(micros: 42))
    }
    // As the firmware writes a public-address phone (fields in its order).
    let s = try XCTUnwrap(
      take(
        "espresense/devices/a4c1381f2b3c/living_room",
        #"{"mac":"a4c1381f2b3c","id":"a4c1381f2b3c","rssi@1m":-71,"rssi":-78.50,"rxAdj":0,"rssiVar":3.12,"distance":1.90,"var":0.41,"int":1093}"#
      ))
    XCTAssertEqual(s.subject, .device(phone.id))
    XCTAssertEqual(s.room, "living_room")
    XCTAssertEqual(s.distance, 1.9)
    XCTAssertEqual(s.rssi, -78.5)
    XCTAssertEqual(s.t, WallTime(micros: 42), "a node's sighting is dated by its arrival")
    XCTAssertEqual(
      take(
        "espresense/devices/known:a4c1381f2b3c/hall", #"{"id":"known:a4c1381f2b3c","distance":3}"#)?
        .subject, .device(phone.id))
    XCTAssertEqual(
      take(
        "espresense/devices/irk:9f4a2c0e5b7d41e8a1c23d4e5f607182/hall",
        #"{"id":"irk:9f4a2c0e5b7d41e8a1c23d4e5f607182","distance":3}"#)?.subject,
      .device(watch.id))
    let b = take(
      "espresense/devices/iBeacon:8f2c1a3e-5b7d-4e90-a1c2-3d4e5f607182-1-10/hall",
      #"{"mac":"c0000001000a","id":"iBeacon:8f2c1a3e-5b7d-4e90-a1c2-3d4e5f607182-1-10","rssi@1m":-59,"rssi":-65.00,"rxAdj":0,"distance":1.99,"var":0.10,"int":1010}"#
    )
    XCTAssertEqual(b?.subject, .beacon(TrackedID(uuid: uuid, major: 1, minor: 10)))
    // Not sightings the rule takes: no distance, an untracked device, a
    // query report's topic, garbage.
    XCTAssertNil(take("espresense/devices/a4c1381f2b3c/hall", #"{"id":"a4c1381f2b3c"}"#))
    XCTAssertNil(take("espresense/devices/001122334455/hall", #"{"distance":1}"#))
    XCTAssertNil(take("espresense/devices/a4c1381f2b3c/hall/q1", #"{"distance":1}"#))
    XCTAssertNil(take("espresense/devices/a4c1381f2b3c/hall", "not json"))
    XCTAssertNil(take("espresense/devices/iBeacon:8f2c-1-2/hall", #"{"distance":1}"#))
    // Each beacon format's id, as Earshot writes it going out, reads back
    // as the same beacon; an Eddystone id whose repeated byte differs does not.
    let eddy = TrackedID(
      eddystoneNamespace: BeaconBytes(hex: "8f2c1a3e5b7d4e90a1c2")!,
      instance: BeaconBytes(hex: "0000000000a1")!)
    let alt = TrackedID(kind: .altBeacon, uuid: uuid, major: 7, minor: 9)
    XCTAssertEqual(
      ESPresenseID.eddystone(namespace: "8f2c1a3e5b7d4e90a1c2", instance: "0000000000a1"),
      "eddy:8f2c1a3e5b5b7d4e90a1c2-0000000000a1")
    for (id, beacon) in [
      ("eddy:8f2c1a3e5b5b7d4e90a1c2-0000000000a1", eddy),
      ("altBeacon:8f2c1a3e-5b7d-4e90-a1c2-3d4e5f607182-7-9", alt),
    ] {
      XCTAssertEqual(
        take("espresense/devices/\(id)/hall", #"{"id":"x","distance":2}"#)?.subject,
        .beacon(beacon), id)
    }
    XCTAssertNil(
      take("espresense/devices/eddy:8f2c1a3e5b5c7d4e90a1c2-0000000000a1/hall", #"{"distance":2}"#))
    XCTAssertNil(take("espresense/devices/eddy:8f2c1a3e5b5b7d4e90a1c2/hall", #"{"distance":2}"#))
    XCTAssertEqual(ESPresenseFormat.room(inStatusTopic: "espresense/rooms/hall/status"), "hall")
    XCTAssertNil(ESPresenseFormat.room(inStatusTopic: "espresense/rooms/hall/telemetry"))
  }
}
