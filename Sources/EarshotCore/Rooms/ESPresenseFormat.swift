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
      switch b.format {
      case .iBeacon:
        return "iBeacon:\(b.uuid.description.lowercased())-\(b.major)-\(b.minor)"
      case .altBeacon:
        return nil
      case .eddystoneUID:
        let ns = b.namespaceHex
        let cut = ns.index(ns.startIndex, offsetBy: 10)
        let fifth = ns[ns.index(cut, offsetBy: -2)..<cut]
        return "eddy:\(ns[..<cut])\(fifth)\(ns[cut...])-\(b.instanceHex)"
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

extension String {
  fileprivate func replacingColons() -> String { String(filter { $0 != ":" }) }
}
