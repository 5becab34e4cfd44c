/// Maps one JSON line printed by `earshot monitor` (or `earshot scan`) to
/// log events. This is the adapter between the monitor's output and the
/// log until the monitor writes the log directly.
///
/// - `state`, `enter`, `exit`: a region event; the beacon is taken from
///   `uuid`/`major`/`minor` on the line or the first entry of `beacons`.
/// - `range`: one sighting per beacon (rssi, accuracy as distance,
///   address), remembered as ranged in the line's region; devices skipped.
/// - `adapter` (`adapter`, `state` up/down), `find_phone` (`action`,
///   `device`, `detail`), `volume` (`volume` 0-1, `muted`, `source`).
/// - A line without `event` but with `uuid` (an `earshot scan` report) is
///   a sighting.
/// Other events are ignored (`[]`); malformed lines throw, saying why.
public enum MonitorLineImport {
  public struct LineError: Error, CustomStringConvertible, Equatable {
    public let reason: String
    public var description: String { reason }
  }

  public static func events(fromLine line: String) throws -> [ProximityEvent] {
    let v: JSONValue
    do { v = try JSONParser.parse(line) } catch { throw LineError(reason: "not JSON: \(error)") }
    guard case .object = v else { throw LineError(reason: "not a JSON object") }
    guard let seconds = v["t"]?.number, seconds.isFinite else {
      throw LineError(reason: "no numeric \"t\" (Unix seconds)")
    }
    let t = WallTime(seconds: seconds)
    guard let event = v["event"]?.string else {
      if v["uuid"] != nil { return [.sighting(try sighting(v, t: t, region: nil))] }
      throw LineError(reason: "no \"event\"")
    }
    switch event {
    case "state", "enter", "exit":
      guard let region = v["region"]?.string, !region.isEmpty else {
        throw LineError(reason: "\(event) without \"region\"")
      }
      guard let stateText = v["state"]?.string, let state = PresenceState(rawValue: stateText)
      else { throw LineError(reason: "\"state\" must be inside, outside or unknown") }
      var beacon = try beaconID(v)
      if beacon == nil, let first = v["beacons"]?.array?.first { beacon = try beaconID(first) }
      return [
        .region(
          RegionLogEvent(
            t: t, region: region, kind: RegionLogEvent.Kind(rawValue: event)!, state: state,
            beacon: beacon))
      ]
    case "range":
      let region = v["region"]?.string
      guard let beacons = v["beacons"]?.array else {
        throw LineError(reason: "range without a \"beacons\" array")
      }
      // Devices (identity regions) have no sighting rows, as when the agent logs.
      return try beacons.filter { $0["device"] == nil }.map {
        .sighting(try sighting($0, t: t, region: region))
      }
    case "adapter":
      guard let s = v["state"]?.string, let kind = AdapterLogEvent.Kind(rawValue: s) else {
        throw LineError(reason: "adapter \"state\" must be up or down")
      }
      return [.adapter(AdapterLogEvent(t: t, adapter: v["adapter"]?.string ?? "", kind: kind))]
    case "find_phone", "find-phone":
      guard let a = v["action"]?.string, let kind = FindPhoneLogEvent.Kind(rawValue: a) else {
        throw LineError(reason: "find_phone \"action\" must be started, stopped, found or notice")
      }
      return [
        .findPhone(
          FindPhoneLogEvent(
            t: t, kind: kind, device: v["device"]?.string ?? "", detail: v["detail"]?.string))
      ]
    case "volume":
      guard let vol = v["volume"]?.number, (0...1).contains(vol) else {
        throw LineError(reason: "volume \"volume\" must be a number 0-1")
      }
      return [
        .volume(
          VolumeLogEvent(
            t: t, volume: vol, muted: v["muted"]?.bool ?? false, source: v["source"]?.string))
      ]
    default:
      return []
    }
  }

  static func beaconID(_ v: JSONValue) throws -> TrackedID? {
    guard let text = v["uuid"]?.string else { return nil }
    guard let uuid = BeaconUUID(text) else { throw LineError(reason: "bad uuid '\(text)'") }
    func u16(_ k: String) throws -> UInt16 {
      guard let n = v[k]?.number, n >= 0, n <= 65535, n == n.rounded() else {
        throw LineError(reason: "\"\(k)\" must be 0-65535")
      }
      return UInt16(n)
    }
    return TrackedID(uuid: uuid, major: try u16("major"), minor: try u16("minor"))
  }

  static func sighting(_ v: JSONValue, t: WallTime, region: String?) throws -> BeaconSighting {
    guard let id = try beaconID(v) else { throw LineError(reason: "beacon without \"uuid\"") }
    var address: BDAddress? = nil
    if let a = v["address"]?.string {
      guard let parsed = BDAddress(a) else { throw LineError(reason: "bad address '\(a)'") }
      address = parsed
    }
    let distance = v["accuracy"]?.number ?? v["distance"]?.number
    return BeaconSighting(
      t: t, beacon: id, address: address, rssi: v["rssi"]?.number, distance: distance,
      region: region)
  }
}
