import XCTest

@testable import EarshotCore

/// Rooms for devices known by identity: `[rooms] track` names them, the
/// agent's sightings come from reports the region monitor's directory
/// resolved, and the aggregator places them as it places beacons.
final class RoomsIdentityTests: XCTestCase {
  let keyHex = "9f4a2c0e5b7d41e8a1c23d4e5f607182"
  let watch = BDAddress("C3:5A:10:22:33:44")!
  let phoneIdentity = BDAddress("00:1A:7D:DA:71:13")!
  let cipher = CountingMixCipher()

  var key: IdentityResolvingKey { try! IdentityResolvingKey(hex: keyHex) }
  var keyID: TrackedDeviceID { .key(tag: key.tag) }

  /// `[rooms] track` on line 3 of test.conf; `power`: a `[region "phone"]`
  /// naming the key with that `power =`.
  func config(_ track: String, regionPower: String? = nil) throws -> Config {
    var doc = ConfigDocument(file: "test.conf")
    doc.headers = [SectionHeader(name: "rooms", line: 1)]
    doc.entries = [
      ConfigEntry(section: "rooms", key: "room", value: "kitchen", line: 2),
      ConfigEntry(section: "rooms", key: "track", value: track, line: 3),
      ConfigEntry(section: "rooms", key: "interval", value: "1", line: 4),
    ]
    if let regionPower {
      doc.headers.append(SectionHeader(name: "region \"phone\"", line: 5))
      doc.entries += [
        ConfigEntry(section: "region \"phone\"", key: "irk", value: keyHex, line: 6),
        ConfigEntry(section: "region \"phone\"", key: "power", value: regionPower, line: 7),
      ]
    }
    return try Config.build(doc)
  }

  /// A monitor (whose directory resolves) and a publisher from one config.
  func agent(_ c: Config) -> (RegionMonitor, SightingPublisher) {
    (RegionMonitor(config: c, cipher: cipher), SightingPublisher(room: "kitchen", config: c))
  }

  /// One report as the shell hands it on: resolved once by the monitor's
  /// directory, the identity given to the publisher.
  func report(
    _ m: inout RegionMonitor, _ p: inout SightingPublisher, at t: Int64, _ address: BDAddress,
    type: AddressType = .random, rssi: Int8 = -59, tx: Int8? = nil
  ) -> SightingPublisher.Due? {
    let n = m.resolveDevice(address, type: type)
    _ = m.report(at: DecisionTime(micros: t), device: n, address: address, rssi: rssi, txPower: tx)
    return p.report(
      at: DecisionTime(micros: t), device: n.map { m.devices.entries[$0] }, address: address,
      rssi: rssi, txPower: tx)
  }

  // MARK: Config

  func testTrackTakesBeaconsAndNamedDevices() throws {
    let c = try config(
      "\(testUUID):1:10 phone=irk:\(keyHex.uppercased()) device:\(watch) desk.lamp=device:\(phoneIdentity)"
        + " altbeacon:\(testUUID):2 eddystone:8f2c1a3e5b7d4e90a1c2"
    )
    XCTAssertEqual(
      c.rooms.track,
      [
        TrackedMatch(uuid: testUUID, major: 1, minor: 10),
        TrackedMatch(kind: .altBeacon, uuid: testUUID, major: 2),
        try TrackedMatch.parse("eddystone:8f2c1a3e5b7d4e90a1c2"),
      ])
    XCTAssertEqual(
      c.rooms.trackDevices,
      [
        TrackedDevice(name: "phone", irk: key), TrackedDevice(address: watch),
        TrackedDevice(name: "desk.lamp", address: phoneIdentity),
      ])
    XCTAssertTrue(c.rooms.publishes)
    XCTAssertEqual(c.rooms.name(of: keyID), "phone")
    XCTAssertNil(c.rooms.name(of: .address(watch)))
    XCTAssertTrue(c.rooms.places(.device(.address(watch))))
    XCTAssertFalse(c.rooms.places(.device(.address(BDAddress(raw: 1)))))
    XCTAssertFalse(c.rooms.places(.beacon(TrackedID(uuid: testUUID, major: 1, minor: 11))))
    XCTAssertTrue(
      c.rooms.places(.beacon(TrackedID(kind: .altBeacon, uuid: testUUID, major: 2, minor: 7))))
    XCTAssertFalse(c.rooms.places(.beacon(TrackedID(uuid: testUUID, major: 2, minor: 7))))
    // Written back as read (the key in its most-significant-first form).
    XCTAssertTrue(
      c.render().contains(
        "track = \(testUUID):1:10 altbeacon:\(testUUID):2 eddystone:8f2c1a3e5b7d4e90a1c2"
          + " phone=irk:\(keyHex) device:\(watch) desk.lamp=device:\(phoneIdentity)\n"
      ), c.render())
    // Devices only: the aggregator places those, and no beacon.
    let devicesOnly = try config("device:\(watch)")
    XCTAssertTrue(devicesOnly.rooms.publishes)
    XCTAssertFalse(devicesOnly.rooms.places(.beacon(TrackedID(uuid: testUUID, major: 1, minor: 1))))
  }

  func testABadTrackValueNamesFileLineAndKey() throws {
    for (value, says) in [
      ("device:00:1A:7D:DA:71", "is not a Bluetooth address"),
      ("irk:9f4a2c0e", "32 hex digits"),
      ("phone=\(testUUID):1", "a name is for devices"),
      ("ph*ne=device:\(watch)", "is not a device name"),
      ("device:\(watch) watch=device:\(watch)", "tracked twice"),
      ("a=device:\(watch) a=irk:\(keyHex)", "two devices are named 'a'"),
      ("phone", "device:ADDRESS or irk:KEY"),
      ("\(testUUID):x", "device:ADDRESS or irk:KEY"),
    ] {
      XCTAssertThrowsError(try config(value), value) { e in
        let text = "\(e)"
        XCTAssertTrue(text.contains("test.conf:3: [rooms] track"), text)
        XCTAssertTrue(text.contains(says), text)
      }
    }
  }

  // MARK: Topics and messages

  func testDeviceSubjectsHaveTheirOwnTopicSegments() throws {
    let topics = RoomTopics(prefix: "earshot/rooms", shards: 16)
    let byAddress = RoomSubject.device(.address(phoneIdentity))
    let byKey = RoomSubject.device(keyID)
    XCTAssertEqual(byAddress.slug, "device-001a7dda7113")
    XCTAssertEqual(byKey.slug, "irk-" + key.tag)
    XCTAssertFalse(byKey.slug.contains(keyHex), "the key itself never goes out")
    for subject in [byAddress, byKey, .beacon(TrackedID(uuid: testUUID, major: 1, minor: 10))] {
      XCTAssertEqual(topics.subject(inStateTopic: topics.state(subject)), subject)
      let topic = topics.sighting(subject, room: "Kitchen")
      XCTAssertTrue(topic.hasPrefix("earshot/rooms/sighting/\(topics.shard(of: subject))/"))
      XCTAssertEqual(topics.subject(inSightingTopic: topic), subject)
    }
    for bad in ["device-001a7dda71", "device-001A7DDA7113", "irk-12345", "irk-zzzzzzzz"] {
      XCTAssertNil(topics.subject(inStateTopic: "earshot/rooms/beacon/\(bad)/state"), bad)
    }

    let s = RoomSighting(
      t: WallTime(micros: 1_733_000_000_123_000), subject: byKey, room: "kitchen", rssi: -60,
      distance: 1.5,
      count: 4, name: "phone")
    XCTAssertEqual(
      s.payload,
      "{\"t\":1733000000.123,\"room\":\"kitchen\",\"rssi\":-60.0,\"distance\":1.50,\"n\":4,\"name\":\"phone\"}"
    )
    let back = try XCTUnwrap(
      RoomSighting.parse(
        topic: topics.sighting(byKey, room: "kitchen"), payload: Array(s.payload.utf8),
        topics: topics))
    XCTAssertEqual(back, s)

    let change = RoomChange(
      t: WallTime(micros: 5_000_000), subject: byAddress, room: "kitchen", name: "phone")
    XCTAssertEqual(
      change.json,
      "{\"t\":5.000,\"event\":\"room\",\"device\":\"00:1A:7D:DA:71:13\",\"name\":\"phone\",\"room\":\"kitchen\"}"
    )
    XCTAssertEqual(RoomChange.parse(change.json), change)
    XCTAssertEqual(
      RoomsDiscovery.state(change),
      "{\"t\":5.000,\"device\":\"00:1A:7D:DA:71:13\",\"name\":\"phone\",\"room\":\"kitchen\"}")
    let keyed = RoomChange(t: WallTime(micros: 5_000_000), subject: byKey, room: nil)
    XCTAssertEqual(RoomChange.parse(keyed.json), keyed)
    XCTAssertTrue(keyed.json.contains("\"device\":\"irk#\(key.tag)\""), keyed.json)
  }

  func testDiscoveryNamesTheDevice() throws {
    let topics = RoomTopics(prefix: "earshot/rooms", shards: 16)
    let d = RoomsDiscovery(
      topics: topics, aggregatorStatus: "earshot/rooms/aggregator/pi/status", version: "1.0",
      prefix: "homeassistant")
    let subject = RoomSubject.device(.address(phoneIdentity))
    let m = d.messages(for: subject, name: "phone")
    XCTAssertEqual(
      m.map(\.topic),
      [
        "homeassistant/sensor/earshot_rooms/earshot_room_device-001a7dda7113/config",
        "homeassistant/device_tracker/earshot_rooms/earshot_room_device-001a7dda7113/config",
      ])
    let sensor = try JSONParser.parse(m[0].payload)
    // Home Assistant puts the device's name first: "phone Room", and the
    // tracker (name null) is "phone".
    XCTAssertEqual(sensor["name"]?.string, "Room")
    XCTAssertEqual(sensor["device"]?["name"]?.string, "phone")
    XCTAssertEqual(sensor["state_topic"]?.string, topics.state(subject))
    XCTAssertEqual(try JSONParser.parse(m[1].payload)["name"], .null)
    // Unnamed: the device is labelled by its id.
    let unnamed = try JSONParser.parse(d.messages(for: subject)[1].payload)
    XCTAssertEqual(unnamed["device"]?["name"]?.string, "Device 00:1A:7D:DA:71:13")
  }

  // MARK: The agent's sightings

  func testARotatingPrivateAddressIsOneTrackedIdentity() throws {
    let c = try config("phone=irk:\(keyHex)")
    var (m, p) = agent(c)
    XCTAssertTrue(m.watchesDevices, "rooms alone make the monitor resolve devices")
    var sent: [SightingPublisher.Due] = []
    var addresses: Set<BDAddress> = []
    // Ten minutes at 2 Hz, a new private address every minute.
    for k in 0..<1200 {
      let t = Int64(k) * 500_000
      let address = key.address(prand: UInt32(0x1000 + k / 120 * 7919), cipher: cipher)
      addresses.insert(address)
      if let s = report(&m, &p, at: t, address) { sent.append(s) }
    }
    XCTAssertEqual(addresses.count, 10)
    XCTAssertEqual(p.trackedCount, 1, "one identity, whatever the address")
    XCTAssertEqual(Set(sent.map(\.subject)), [.device(keyID)])
    XCTAssertEqual(sent.count, 600, "one a second, address changes or not")
    XCTAssertTrue(sent.allSatisfy { $0.name == "phone" && $0.room == "kitchen" })
    XCTAssertEqual(sent.dropFirst().map(\.count).max(), 2)
    // No TX power and no region: the default 1 m power, -59 dBm.
    XCTAssertEqual(try XCTUnwrap(sent.last?.distance), 1, accuracy: 0.05)
    // The monitor's one cache holds each address once.
    XCTAssertEqual(m.devices.resolvedCount, 10)
  }

  func testAnUnresolvablePrivateAddressIsNotPublished() throws {
    let c = try config("phone=irk:\(keyHex)")
    var (m, p) = agent(c)
    let stranger = try IdentityResolvingKey(hex: "00112233445566778899aabbccddeeff")
    for k in 0..<50 {
      let t = Int64(k) * 1_000_000
      // Another key's RPA, a non-resolvable private address carrying our
      // key's hash, and a public address: none is the phone.
      let rpa = stranger.address(prand: UInt32(k + 1), cipher: cipher)
      let mine = key.address(prand: UInt32(k + 1), cipher: cipher)
      let nrpa = BDAddress(raw: mine.raw & 0x3FFF_FFFF_FFFF)
      XCTAssertNil(report(&m, &p, at: t, rpa))
      XCTAssertNil(report(&m, &p, at: t, nrpa))
      XCTAssertNil(report(&m, &p, at: t, phoneIdentity, type: .public))
    }
    XCTAssertEqual(p.trackedCount, 0)
    // A beacon report does not reach the device path either.
    XCTAssertNil(
      p.report(
        at: DecisionTime(micros: 0),
        beacon: TrackedBeacon(
          id: TrackedID(uuid: testUUID, major: 1, minor: 1), measuredPower: -59),
        address: phoneIdentity, rssi: -50))
  }

  func testABondedDeviceIsTrackedByItsIdentityAddressFromItsPrivateAddresses() throws {
    let c = try config("device:\(phoneIdentity)")
    var (m, p) = agent(c)
    let rpa = key.address(prand: 0x2222, cipher: cipher)
    XCTAssertNil(report(&m, &p, at: 0, rpa), "no key yet: the private address is nobody")
    // The identity address matches directly even before the bond is known.
    XCTAssertEqual(
      report(&m, &p, at: 1_000_000, phoneIdentity, type: .public)?.subject,
      .device(.address(phoneIdentity)))
    m.updateBondedKeys([BondedKey(identity: phoneIdentity, identityType: .public, irk: key)])
    let s = try XCTUnwrap(report(&m, &p, at: 3_000_000, rpa))
    XCTAssertEqual(s.subject, .device(.address(phoneIdentity)))
    XCTAssertNil(s.name)
    XCTAssertEqual(p.trackedCount, 1)
    // Tracked by key instead, the same bonded device matches through its key.
    var (m2, p2) = agent(try config("irk:\(keyHex)"))
    m2.updateBondedKeys([BondedKey(identity: phoneIdentity, identityType: .public, irk: key)])
    XCTAssertEqual(report(&m2, &p2, at: 0, rpa)?.subject, .device(keyID))
  }

  func testAReloadKeepsResolvingTheDevicesTheSightingsWereSetUpFor() throws {
    var (m, p) = agent(try config("phone=irk:\(keyHex)"))
    let rpa = key.address(prand: 0x4444, cipher: cipher)
    XCTAssertNotNil(report(&m, &p, at: 0, rpa))
    // A reload without the device (which waits for a restart for rooms).
    _ = m.reconfigure(try config("device:\(watch)"), at: DecisionTime(micros: 1_000_000))
    XCTAssertTrue(m.watchesDevices)
    XCTAssertNotNil(report(&m, &p, at: 2_000_000, rpa), "still resolved: still published")
  }

  func testDistanceUsesTxPowerElseTheRegionsPowerElseTheDefault() throws {
    func distance(_ c: Config, tx: Int8?) throws -> Double {
      var (m, p) = agent(c)
      var last: SightingPublisher.Due? = nil
      for k in 0..<5 {
        let a = key.address(prand: 0x3333, cipher: cipher)
        last = report(&m, &p, at: Int64(k) * 1_000_000, a, rssi: -65, tx: tx) ?? last
      }
      return try XCTUnwrap(last?.distance)
    }
    let plain = try config("irk:\(keyHex)")
    let region = try config("irk:\(keyHex)", regionPower: "-55")
    // Path-loss exponent 2: d = 10^((power - rssi) / 20).
    XCTAssertEqual(try distance(plain, tx: nil), pow(10, 6.0 / 20), accuracy: 0.05)
    XCTAssertEqual(try distance(region, tx: nil), pow(10, 10.0 / 20), accuracy: 0.05)
    // TX power 8 dBm: 8 - 41 = -33 dBm at 1 m.
    XCTAssertEqual(try distance(region, tx: 8), pow(10, 32.0 / 20), accuracy: 0.5)
  }

  func testMemoryStaysBoundedUnderAFloodOfAddresses() throws {
    let c = try config("phone=irk:\(keyHex) \(testUUID)")
    var (m, p) = agent(c)
    let stranger = try IdentityResolvingKey(hex: "00112233445566778899aabbccddeeff")
    for k in 0..<10_000 {
      let t = Int64(k) * 1000
      XCTAssertNil(report(&m, &p, at: t, stranger.address(prand: UInt32(k), cipher: cipher)))
      if k % 100 == 0 {
        _ = report(&m, &p, at: t, key.address(prand: UInt32(k), cipher: cipher))
      }
    }
    XCTAssertLessThanOrEqual(m.devices.unresolvedCount, 4096)
    XCTAssertLessThanOrEqual(m.devices.resolvedCount, 4096)
    XCTAssertEqual(p.trackedCount, 1)
    // Beacons of a UUID-only track: any number of identities, kept to capacity.
    for k in 0..<(SightingPublisher.capacity + 50) {
      let id = TrackedID(uuid: testUUID, major: UInt16(k / 65536), minor: UInt16(k % 65536))
      _ = p.report(
        at: DecisionTime(micros: 20_000_000 + Int64(k)),
        beacon: TrackedBeacon(id: id, measuredPower: -59),
        address: BDAddress(raw: 7), rssi: -60)
    }
    XCTAssertEqual(p.trackedCount, SightingPublisher.capacity)
  }

  // MARK: The aggregator's rule

  func testTheRulePlacesADeviceAsItPlacesABeacon() {
    var rule = RoomRule(settings: .init())
    let phone = RoomSubject.device(keyID)
    var out: [RoomChange] = []
    // A minute for the rule to learn how the links stray, then the move.
    for sec in 0...80 {
      let near = sec < 60 ? "kitchen" : "living"
      let far = sec < 60 ? "living" : "kitchen"
      for (room, d) in [(near, 1.0), (far, 6.0)] {
        out += rule.sighting(
          RoomSighting(
            t: WallTime(micros: Int64(sec) * 1_000_000), subject: phone, room: room, rssi: nil,
            distance: d,
            count: 1, name: "phone"))
      }
    }
    out += rule.advance(to: WallTime(micros: 120_000_000))
    XCTAssertEqual(out.map(\.subject), [phone, phone, phone])
    XCTAssertEqual(out.map(\.room), ["kitchen", "living", nil])
    XCTAssertEqual(rule.room(of: phone), nil)
    // switch_after holds it back, as for a beacon: a lead this clear (31 dB)
    // waits a third of it, after the quick mean has seen the move.
    XCTAssertGreaterThanOrEqual(out[1].t.micros, 61_000_000)
    XCTAssertLessThanOrEqual(out[1].t.micros, 70_000_000)
  }
}
