/// What the proximity log keeps of a monitor event: `state`, `enter` and
/// `exit` become region events with the first beacon as the cause; each
/// beacon of a `range` event becomes a sighting, its `accuracy` the
/// distance. Devices (identity regions) have no row of their own: their
/// regions' events are kept, without a cause. Beacons of every kind are
/// kept: a row holds the kind's name and its 20 identifier bytes (in the
/// `uuid`, `major` and `minor` columns, `TrackedID`'s iBeacon view). The
/// same mapping `earshot log import` applies to the monitor's JSON lines,
/// for the agent that writes the log itself.
extension ProximityEvent {
  public static func from(_ e: MonitorEvent) -> [ProximityEvent] {
    let state = PresenceState(rawValue: e.state.rawValue) ?? .unknown
    switch e.kind {
    case .state, .enter, .exit:
      let kind: RegionLogEvent.Kind = e.kind == .enter ? .enter : e.kind == .exit ? .exit : .state
      return [
        .region(
          RegionLogEvent(
            t: e.shown, region: e.region, kind: kind, state: state,
            beacon: e.beacons.first?.id.beacon))
      ]
    case .range:
      return e.beacons.compactMap { b in
        guard let id = b.id.beacon else { return nil }
        return .sighting(
          BeaconSighting(
            t: e.shown, beacon: id, address: b.address, rssi: b.rssi, distance: b.accuracy,
            region: e.region))
      }
    }
  }
}
