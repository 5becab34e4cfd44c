/// The agent's side of rooms: turns reports of tracked beacons and devices
/// into at most one sighting per subject per `interval` (filtered RSSI,
/// calibrated distance, reports heard since the last one). Pure; time is
/// the monitor's decision time (capture time in a replay, the monotonic
/// clock live): what comes out is a `Due`, dated in it, which becomes a
/// `RoomSighting` only given the wall time to send (`RoomsAgent`), so a
/// decision time never goes out as a wall time.
///
/// Devices come in already resolved: the shell asks the region monitor's
/// directory once per report (`RegionMonitor.resolveDevice`) and hands the
/// identity to both, so there is one resolver and one cache of addresses.
/// A device is tracked by the `track` entry it matches, whatever private
/// address it sends from.
public struct SightingPublisher: Sendable {
  public let room: String
  public let track: [TrackedMatch]
  public let trackDevices: [TrackedDevice]
  public let intervalMicros: Int64
  public let model: PathLossModel
  /// `[region]`s, for a device's `power =` when it advertises no TX power.
  let regions: [RegionConfig]
  /// Subjects kept at most; past this the one heard longest ago goes (a
  /// UUID-only `track` can match any number of identities).
  public static let capacity = 10_000

  /// A sighting due to be sent, at decision time `t`: the fields of a
  /// `RoomSighting` without its wall time.
  public struct Due: Sendable, Equatable {
    public var t: DecisionTime
    public var subject: RoomSubject
    public var room: String
    public var rssi: Double?
    public var distance: Double?
    public var count: Int
    public var name: String?

    /// The sighting as sent at wall time `shown`.
    public func sent(at shown: WallTime) -> RoomSighting {
      RoomSighting(
        t: shown, subject: subject, room: room, rssi: rssi, distance: distance, count: count,
        name: name)
    }
  }

  struct Entry: Sendable {
    let subject: RoomSubject
    var track: BeaconTrack
    var lastSent: Int64? = nil
    var count = 0

    mutating func add(
      at t: Int64, address: BDAddress, rssi: Int8?, measuredPower: Int8, source: PowerSource,
      room: String, name: String?, interval: Int64, model: PathLossModel
    ) -> Due? {
      track.observe(
        address: address, rssi: rssi, measuredPower: measuredPower, powerSource: source,
        at: DecisionTime(micros: t))
      count += 1
      if let last = lastSent, t - last < interval { return nil }
      // Readings older than a few intervals say nothing about now.
      let r = track.ranged(
        at: DecisionTime(micros: t), model: model, staleAfter: max(1, 3 * Double(interval) / 1e6))
      let s = Due(
        t: DecisionTime(micros: t), subject: subject, room: room,
        rssi: r.rssi.map { $0 + model.rssiOffset },
        distance: r.accuracy, count: count, name: name)
      lastSent = t
      count = 0
      return s
    }
  }

  private var entries: [RoomSubject: Entry] = [:]

  public init(room: String, config: Config) {
    self.room = room
    track = config.rooms.track
    trackDevices = config.rooms.trackDevices
    intervalMicros = Int64((config.rooms.interval * 1e6).rounded())
    model = config.ranging.model
    regions = config.regions
  }

  /// One iBeacon report; a sighting when this beacon's interval has passed.
  public mutating func report(
    at t: DecisionTime, beacon: TrackedBeacon, address: BDAddress, rssi: Int8?
  ) -> Due? {
    guard track.contains(where: { $0.matches(beacon.id) }) else { return nil }
    return add(
      .beacon(beacon.id), key: .beacon(beacon.id), at: t, address: address, rssi: rssi,
      power: (beacon.measuredPower, .measured), name: nil)
  }

  /// One report from a resolved device (`device`: who the monitor's
  /// directory says sent it; nil, an unknown or unresolvable address,
  /// publishes nothing). `txPower`: the report's TX Power Level field.
  public mutating func report(
    at t: DecisionTime, device: DeviceIdentity?, address: BDAddress, rssi: Int8?, txPower: Int8?
  ) -> Due? {
    guard let device, let tracked = trackDevices.first(where: { $0.matches(device) }) else {
      return nil
    }
    let fallback =
      regions.first { $0.matches(device) }?.power ?? RegionConfig.defaultDevicePower
    return add(
      .device(tracked.id), key: .device(device), at: t, address: address, rssi: rssi,
      power: PowerSource.device(txPower: txPower, fallback: fallback), name: tracked.name)
  }

  private mutating func add(
    _ subject: RoomSubject, key: TrackKey, at time: DecisionTime, address: BDAddress, rssi: Int8?,
    power: (power: Int8, source: PowerSource), name: String?
  ) -> Due? {
    let t = time.micros
    if entries[subject] == nil {
      if entries.count >= Self.capacity,
        let stalest = entries.min(by: { $0.value.track.lastSeen < $1.value.track.lastSeen })
      {
        entries[stalest.key] = nil
      }
      entries[subject] = Entry(
        subject: subject,
        track: BeaconTrack(
          id: key, address: address, measuredPower: power.power, powerSource: power.source,
          at: DecisionTime(micros: t)))
    }
    return entries[subject]!.add(
      at: t, address: address, rssi: rssi, measuredPower: power.power, source: power.source,
      room: room, name: name, interval: intervalMicros, model: model)
  }

  public var trackedCount: Int { entries.count }
}
