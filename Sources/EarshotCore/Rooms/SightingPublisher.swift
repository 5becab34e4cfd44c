/// The agent's side of rooms: turns iBeacon reports of tracked beacons
/// into at most one sighting per beacon per `interval` (filtered RSSI,
/// calibrated distance, reports heard since the last one). Pure; time is
/// the report's (capture time in a replay, the clock live).
public struct SightingPublisher: Sendable {
  public let room: String
  public let track: [BeaconMatch]
  public let intervalMicros: Int64
  public let model: PathLossModel
  /// Beacons kept at most; past this the one heard longest ago goes (a
  /// UUID-only `track` can match any number of identities).
  public static let capacity = 10_000

  struct Entry: Sendable {
    let beacon: BeaconID
    var track: BeaconTrack
    var lastSent: Int64? = nil
    var count = 0

    mutating func add(
      at t: Int64, address: BDAddress, rssi: Int8?, measuredPower: Int8, room: String,
      interval: Int64, model: PathLossModel
    ) -> RoomSighting? {
      track.observe(address: address, rssi: rssi, measuredPower: measuredPower, at: t)
      count += 1
      if let last = lastSent, t - last < interval { return nil }
      // Readings older than a few intervals say nothing about now.
      let r = track.ranged(at: t, model: model, staleAfter: max(1, 3 * Double(interval) / 1e6))
      let s = RoomSighting(
        t: t, beacon: beacon, room: room, rssi: r.rssi.map { $0 + model.rssiOffset },
        distance: r.accuracy, count: count)
      lastSent = t
      count = 0
      return s
    }
  }

  private var entries: [BeaconID: Entry] = [:]

  public init(room: String, config: Config) {
    self.room = room
    track = config.rooms.track
    intervalMicros = Int64((config.rooms.interval * 1e6).rounded())
    model = config.ranging.model
  }

  /// One report; a sighting when this beacon's interval has passed.
  public mutating func report(
    at t: Int64, beacon: IBeacon, address: BDAddress, rssi: Int8?
  ) -> RoomSighting? {
    guard track.contains(where: { $0.matches(beacon.id) }) else { return nil }
    if entries[beacon.id] == nil {
      if entries.count >= Self.capacity,
        let stalest = entries.min(by: { $0.value.track.lastSeen < $1.value.track.lastSeen })
      {
        entries[stalest.key] = nil
      }
      entries[beacon.id] = Entry(
        beacon: beacon.id,
        track: BeaconTrack(
          id: beacon.id, address: address, measuredPower: beacon.measuredPower, at: t))
    }
    return entries[beacon.id]!.add(
      at: t, address: address, rssi: rssi, measuredPower: beacon.measuredPower, room: room,
      interval: intervalMicros, model: model)
  }

  public var trackedCount: Int { entries.count }
}
