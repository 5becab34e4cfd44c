/// Sightings as the ESPresense firmware (v4) publishes them, so
/// ESPresense-companion and Home Assistant's `mqtt_room` place a laptop
/// beside ESP32 nodes: `espresense/devices/<id>/<room>`, QoS 0, not
/// retained, the JSON fields in the firmware's order (`BleFingerprint::fill`
/// in ESPresense v4.0.6): `mac`, `id`, `name` (when known), `rssi@1m`,
/// `rssi`, `rxAdj`, `distance`. Left out, as the firmware leaves out what
/// it does not know: `rssiVar`, `var`, `int` and the sensor fields.
///
/// `rssi` is already this receiver's calibrated RSSI (`rssi_offset`
/// applied), so `rxAdj` is 0 and `distance` is Earshot's own (the path-loss
/// model of `[ranging]`, not the firmware's absorption).
public enum ESPresenseFormat {
  public static let prefix = "espresense"

  /// The id ESPresense gives a subject, or `nil` where it has none
  /// (AltBeacons of a real company; see `ESPresenseID`): iBeacons and
  /// Eddystone-UIDs by `ESPresenseID`, a device tracked by its key
  /// `irk:<32 hex>`, one tracked by its identity address the bare address
  /// (12 lower-case hex digits, as the firmware names a public address).
  public static func id(_ subject: RoomSubject, irk: IdentityResolvingKey? = nil) -> String? {
    switch subject {
    case .beacon(let b):
      switch b.kind {
      case .iBeacon:
        return ESPresenseID.iBeacon(b)
      case .eddystoneUID:
        return ESPresenseID.eddystone(namespace: b.text(field: 0), instance: b.text(field: 1))
      default:  // AltBeacons (see above), and kinds ESPresense gives no id
        return nil
      }
    case .device(.address(let a)):
      return mac(a)
    case .device(.key):
      return irk.map { "irk:" + $0.hex.lowercased() }
    }
  }

  /// The firmware's room slug: lower case, each run of characters other
  /// than a-z, 0-9 and `_` one `_`, none at either end.
  public static func room(_ name: String) -> String {
    var out = ""
    var pendingUnderscore = false
    for scalar in name.lowercased().unicodeScalars {
      switch scalar {
      case "a"..."z", "0"..."9", "_":
        if pendingUnderscore && !out.isEmpty { out += "_" }
        pendingUnderscore = false
        out.unicodeScalars.append(scalar)
      default:
        pendingUnderscore = true
      }
    }
    return out
  }

  public static func mac(_ a: BDAddress) -> String {
    a.description.lowercased().replacingColons()
  }

  public static func topic(id: String, room: String) -> String {
    "\(prefix)/devices/\(id)/\(self.room(room))"
  }

  /// The message for sighting `s` heard last from `address` with 1 m
  /// power `power`; `nil` without an id or a distance (`mqtt_room` needs
  /// both).
  public static func message(
    _ s: RoomSighting, id: String, address: BDAddress, power: Int8?
  ) -> (topic: String, payload: String)? {
    guard let distance = s.distance else { return nil }
    var j = JSONLine()
    j.add("mac", mac(address))
    j.add("id", id)
    if let name = s.name { j.add("name", name) }
    if let power { j.add("rssi@1m", Int(power)) }
    if let rssi = s.rssi { j.add("rssi", rssi, decimals: 2) }
    j.add("rxAdj", 0)
    j.add("distance", distance, decimals: 2)
    return (topic(id: id, room: s.room), j.line)
  }
}

// MARK: In: ESPresense nodes as agents of `earshot rooms`

extension ESPresenseFormat {
  /// What the aggregator subscribes to with `[rooms] espresense_nodes`.
  public static let sightingFilter = prefix + "/devices/+/+"
  public static let statusFilter = prefix + "/rooms/+/status"

  /// The node's room of a status topic (`espresense/rooms/ROOM/status`).
  public static func room(inStatusTopic topic: String) -> String? {
    let parts = topic.split(separator: "/", omittingEmptySubsequences: false)
    guard parts.count == 4, parts[0] == prefix, parts[1] == "rooms", parts[3] == "status",
      !parts[2].isEmpty
    else { return nil }
    return String(parts[2])
  }

  /// A node's sighting as the rule takes it, `nil` for anything else or
  /// malformed: the subject from the id (`iBeacon:UUID-MAJOR-MINOR`,
  /// `altBeacon:ID1-ID2-ID3`, `eddy:NAMESPACE-INSTANCE` with the firmware's
  /// repeated fifth byte, or a device of `track` by `irk:KEY` or by its bare
  /// or `known:` address),
  /// the room from the topic, its `distance` (required, as `mqtt_room`
  /// requires it) and `rssi`. The node's own calibration (`rxAdj`) is in
  /// them already. A node's sighting carries no time: `t` is the
  /// aggregator's `now` (its arrival).
  public static func sighting(
    topic: String, payload: [UInt8], trackDevices: [TrackedDevice], now: WallTime
  ) -> RoomSighting? {
    let parts = topic.split(separator: "/", omittingEmptySubsequences: false)
    guard parts.count == 4, parts[0] == prefix, parts[1] == "devices", !parts[3].isEmpty,
      parts[3].utf8.count <= 128, let subject = subject(id: parts[2], trackDevices: trackDevices),
      let json = try? JSONParser.parse(payload),
      let distance = json["distance"]?.number, distance.isFinite, distance > 0
    else { return nil }
    let rssi = json["rssi"]?.number.flatMap { $0.isFinite ? $0 : nil }
    let name =
      subject.device == nil
      ? nil : json["name"]?.string.flatMap { $0.isEmpty || $0.utf8.count > 64 ? nil : $0 }
    return RoomSighting(
      t: now, subject: subject, room: String(parts[3]), rssi: rssi, distance: distance, count: 1,
      name: name)
  }

  static func subject(id: Substring, trackDevices: [TrackedDevice]) -> RoomSubject? {
    for (prefix, format) in [("iBeacon:", TrackedKind.iBeacon), ("altBeacon:", .altBeacon)]
    where id.hasPrefix(prefix) {
      // The UUID has dashes of its own: the last two parts are the numbers.
      let p = id.dropFirst(prefix.count).split(separator: "-", omittingEmptySubsequences: false)
      guard p.count == 7, let uuid = BeaconUUID(p[0..<5].joined(separator: "-")),
        let major = UInt16(p[5]), let minor = UInt16(p[6])
      else { return nil }
      return .beacon(TrackedID(kind: format, uuid: uuid, major: major, minor: minor))
    }
    if id.hasPrefix("eddy:") {
      // `eddy:` 11 namespace bytes (the fifth printed twice) `-` 6 instance bytes.
      let p = id.dropFirst("eddy:".count).split(separator: "-", omittingEmptySubsequences: false)
      guard p.count == 2, p[0].utf8.count == 22, p[1].utf8.count == 12 else { return nil }
      let hex = Array(p[0].utf8)
      guard hex[8..<10] == hex[10..<12],
        let namespace = BeaconBytes(hex: String(decoding: hex[..<10] + hex[12...], as: UTF8.self)),
        let instance = BeaconBytes(hex: p[1])
      else { return nil }
      return .beacon(TrackedID(eddystoneNamespace: namespace, instance: instance))
    }
    if id.hasPrefix("irk:") {
      let hex = id.dropFirst("irk:".count).lowercased()
      guard let d = trackDevices.first(where: { $0.irk?.hex.lowercased() == hex }) else {
        return nil
      }
      return .device(d.id)
    }
    let mac = id.hasPrefix("known:") ? id.dropFirst("known:".count) : id
    guard mac.count == 12,
      let d = trackDevices.first(where: { $0.address.map(Self.mac) == mac.lowercased() })
    else { return nil }
    return .device(d.id)
  }
}

extension String {
  fileprivate func replacingColons() -> String { String(filter { $0 != ":" }) }
}
