import EarshotCore
import XCTest

/// Every discovery payload the agent and the rooms aggregator send, checked
/// against the rules today's Home Assistant enforces (2026.11: it ignores
/// `object_id`, validates `default_entity_id`, units per device class,
/// entity categories per platform, `via_device`), so `make test` catches
/// what only a real HA showed before (scripts/ha-real.sh runs them there).
final class HomeAssistantDiscoveryRulesTests: XCTestCase {
  let uuid = BeaconUUID(high: 0x8F2C_1A3E_5B7D_4E90, low: 0xA1C2_3D4E_5F60_7182)
  let otherUUID = BeaconUUID(high: 0x1111_2222_3333_4444, low: 0x5555_6666_7777_8888)

  /// The agent's discovery for host `vm` (as in scripts/ha-real.sh) with one
  /// of each kind of entity, and the rooms aggregator's for two beacons
  /// that differ only in their UUID and for a device.
  func allMessages(hostname: String = "vm") -> [HomeAssistantDiscovery.Message] {
    let d = HomeAssistantDiscovery(
      topics: MQTTTopics(base: "earshot/\(hostname)"), hostname: hostname, version: "1")
    let desk = TrackedID(uuid: uuid, major: 1, minor: 10)
    let keys = TrackedID(
      eddystoneNamespace: BeaconBytes(hex: "8f2c1a3e5b7d4e90a1c2")!,
      instance: BeaconBytes(hex: "0000000000a1")!)
    var out = [d.region("desk"), d.deviceTracker("Anna's phone"), d.beacon(desk), d.beacon(keys)]
    out += d.beaconTelemetry(keys, temperature: true)
    out += d.tag("Keys") + [d.findPhone(), d.scanDuty()] + d.controls()
    let rooms = RoomsDiscovery(
      topics: RoomTopics(prefix: "earshot/rooms", shards: 16),
      aggregatorStatus: "earshot/rooms/aggregator/x/status", version: "1", prefix: "homeassistant")
    out += rooms.messages(for: desk)
    out += rooms.messages(for: TrackedID(uuid: otherUUID, major: 1, minor: 10))
    out += rooms.messages(for: .device(.address(BDAddress("C3:5A:10:22:33:44")!)), name: "Watch")
    return out
  }

  /// Units HA accepts per device class (its `DEVICE_CLASS_UNITS`), for the
  /// classes Earshot uses; a class missing here fails the test.
  static let unitsByDeviceClass: [String: Set<String?>] = [
    "distance": ["km", "m", "cm", "mm", "mi", "nmi", "yd", "in", "ft"],
    "voltage": ["V", "mV", "µV", "kV", "MV"],
    "temperature": ["°C", "°F", "K"],
    "battery": ["%"],
    "enum": [nil],
    // binary sensors have no unit
    "occupancy": [nil], "connectivity": [nil],
  ]

  func testEveryPayloadFollowsTodaysHomeAssistantRules() throws {
    let messages = allMessages()
    XCTAssertEqual(messages.count, 21)
    var uniqueIDs = Set<String>()
    var entityIDs = Set<String>()
    for m in messages {
      let parts = m.topic.split(separator: "/")
      XCTAssertEqual(parts.count, 5, m.topic)
      XCTAssertEqual(parts.last, "config", m.topic)
      let component = String(parts[1])
      let j = try JSONParser.parse(Array(m.payload.utf8))
      let uniqueID = try XCTUnwrap(j["unique_id"]?.string, m.topic)
      let entityID = try XCTUnwrap(
        j["default_entity_id"]?.string, "\(m.topic): no object_id alone, default_entity_id always")
      // <component>.<object id>, the object id as HA's entity ids allow it.
      XCTAssertTrue(entityID.hasPrefix(component + "."), "\(entityID) on \(m.topic)")
      let object = entityID.dropFirst(component.count + 1)
      XCTAssertFalse(object.isEmpty || object.hasPrefix("_") || object.hasSuffix("_"), entityID)
      XCTAssertFalse(object.contains("__"), entityID)
      XCTAssertTrue(
        object.allSatisfy { ("a"..."z").contains($0) || $0.isNumber || $0 == "_" }, entityID)
      // object_id (for HA before 2025.10) names the same entity.
      if let objectID = j["object_id"]?.string {
        XCTAssertEqual(HomeAssistantDiscovery.entityID(component, objectID), entityID)
      }
      XCTAssertTrue(uniqueIDs.insert(uniqueID).inserted, "unique_id \(uniqueID) twice")
      XCTAssertTrue(entityIDs.insert(entityID).inserted, "entity id \(entityID) twice")
      // Units valid for the device class.
      let unit = j["unit_of_measurement"]?.string
      if let deviceClass = j["device_class"]?.string {
        let allowed = try XCTUnwrap(Self.unitsByDeviceClass[deviceClass], "class \(deviceClass)")
        XCTAssertTrue(allowed.contains(unit), "\(m.topic): \(unit ?? "no unit") for \(deviceClass)")
        if deviceClass == "enum" {
          XCTAssertNil(j["state_class"], "\(m.topic): enum with state_class")
        }
      }
      // Sensors and binary sensors may only be diagnostic.
      if component == "sensor" || component == "binary_sensor",
        let category = j["entity_category"]?.string
      {
        XCTAssertEqual(category, "diagnostic", m.topic)
      }
      // No device is its own via_device.
      if let device = j["device"] {
        let ids = device["identifiers"]?.array?.compactMap(\.string) ?? []
        XCTAssertFalse(ids.isEmpty, m.topic)
        if let via = device["via_device"]?.string { XCTAssertFalse(ids.contains(via), m.topic) }
      }
    }
  }

  /// The ids users write automations with, pinned: they are the ids HA
  /// 2024.3 made from `object_id`, so nobody's change on upgrade.
  func testEntityIDsArePinned() throws {
    let ids = try allMessages().map { m in
      try XCTUnwrap(JSONParser.parse(Array(m.payload.utf8))["default_entity_id"]?.string)
    }
    let beacon = "8f2c1a3e_5b7d_4e90_a1c2_3d4e5f607182_1_10"
    let eddystone = "eddystone_8f2c1a3e5b7d4e90a1c2_0000000000a1"
    XCTAssertEqual(
      ids,
      [
        "binary_sensor.earshot_vm_region_desk",
        "device_tracker.earshot_vm_tracker_anna_s_phone",
        "sensor.earshot_vm_beacon_\(beacon)",
        "sensor.earshot_vm_beacon_\(eddystone)",
        "sensor.earshot_vm_beacon_\(eddystone)_battery",
        "sensor.earshot_vm_beacon_\(eddystone)_temperature",
        "button.earshot_vm_tag_keys_ring",
        "sensor.earshot_vm_tag_keys_battery",
        "binary_sensor.earshot_vm_tag_keys_connected",
        "sensor.earshot_vm_find_phone",
        "sensor.earshot_vm_scan_duty",
        "button.earshot_vm_ring",
        "button.earshot_vm_found",
        "number.earshot_vm_volume",
        "switch.earshot_vm_mute",
        // rooms: the beacon's full identity (UUID too), so two beacons with
        // the same major and minor never share an id
        "sensor.earshot_room_\(beacon)",
        "device_tracker.earshot_room_\(beacon)_tracker",
        "sensor.earshot_room_11112222_3333_4444_5555_666677778888_1_10",
        "device_tracker.earshot_room_11112222_3333_4444_5555_666677778888_1_10_tracker",
        "sensor.earshot_room_device_c35a10223344",
        "device_tracker.earshot_room_device_c35a10223344_tracker",
      ])
  }

  /// HA's slugify, as far as object ids go: lower case, each run of other
  /// characters one `_`, none at the ends, `unknown` for nothing.
  func testEntityIDIsHomeAssistantsSlugOfTheObjectID() {
    let rows: [(String, String)] = [
      ("earshot_vm_region_desk", "earshot_vm_region_desk"),
      ("earshot_my-laptop_region_a-b", "earshot_my_laptop_region_a_b"),
      ("earshot__x--_y_", "earshot_x_y"),
      ("_Earshot_", "earshot"),
      ("__", "unknown"),
    ]
    for (object, want) in rows {
      XCTAssertEqual(HomeAssistantDiscovery.entityID("sensor", object), "sensor." + want, object)
    }
  }
}
