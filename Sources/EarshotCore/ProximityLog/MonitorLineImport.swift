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
    // Within ±3,000 years of 1970: beyond, microseconds overflow an Int64.
    guard let seconds = v["t"]?.number, seconds.isFinite, abs(seconds) < 1e11 else {
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

  /// A beacon as the monitor's lines write it (`TrackedID.addFields`): an
  /// iBeacon's `uuid`, `major`, `minor`; another kind's `format` and its
  /// row's fields. `nil` when the object names no beacon.
  static func beaconID(_ v: JSONValue) throws -> TrackedID? {
    let kind: TrackedKind
    if let name = v["format"]?.string {
      guard let k = TrackedKind(name: name) else {
        throw LineError(reason: "unknown beacon format '\(name)'")
      }
      kind = k
    } else {
      guard v["uuid"] != nil else { return nil }
      kind = .iBeacon
    }
    var bytes: [UInt8] = []
    for f in kind.row.fields {
      switch f.text {
      case .decimal:
        guard let n = v[f.name]?.number, n >= 0, n <= Double(f.maximum), n == n.rounded(),
          let b = f.bytes(from: String(UInt64(n)))
        else { throw LineError(reason: "\"\(f.name)\" must be 0-\(f.maximum)") }
        bytes += b
      case .uuid, .hex:
        let text = v[f.name]?.string ?? ""
        guard let b = f.bytes(from: text) else {
          throw LineError(reason: "bad \(f.name) '\(text)'")
        }
        bytes += b
      }
    }
    return TrackedID(kind: kind, bytes: bytes)
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
