/// What the proximity log records. Its own model, so the log does not
/// depend on the monitor's types: a thin adapter maps monitor events (or
/// the JSON lines `earshot monitor` prints) onto these.
///
/// Times are the `WallTime` shown (capture time in a replay, the system
/// clock live), as every row of the log keeps them.
public enum ProximityEvent: Sendable, Equatable {
  case region(RegionLogEvent)
  case sighting(BeaconSighting)
  case adapter(AdapterLogEvent)
  case findPhone(FindPhoneLogEvent)
  case volume(VolumeLogEvent)
  case telemetry(TelemetryLogEvent)
  case tracker(TrackerLogEvent)

  public var t: WallTime {
    switch self {
    case .region(let e): e.t
    case .sighting(let e): e.t
    case .adapter(let e): e.t
    case .findPhone(let e): e.t
    case .volume(let e): e.t
    case .telemetry(let e): e.t
    case .tracker(let e): e.t
    }
  }
}

/// A region's state as the monitor reports it.
public enum PresenceState: String, Sendable, Equatable, CaseIterable {
  case inside, outside, unknown
}

/// A region transition (`enter`, `exit`) or a state learned without one
/// (`state`: at start-up, after the adapter comes back, or going unknown).
public struct RegionLogEvent: Sendable, Equatable {
  public enum Kind: String, Sendable, CaseIterable {
    case enter, exit, state
  }

  public var t: WallTime
  public var region: String
  public var kind: Kind
  public var state: PresenceState
  /// The beacon that caused an enter or exit, when the monitor names one.
  public var beacon: TrackedID?

  public init(
    t: WallTime, region: String, kind: Kind, state: PresenceState, beacon: TrackedID? = nil
  ) {
    self.t = t
    self.region = region
    self.kind = kind
    self.state = state
    self.beacon = beacon
  }
}

/// One sighting of a beacon (a report, or a ranging update). The log keeps
/// these downsampled, not one row each.
public struct BeaconSighting: Sendable, Equatable {
  public var t: WallTime
  public var beacon: TrackedID
  public var address: BDAddress?
  /// dBm; `nil` when the controller did not report one.
  public var rssi: Double?
  /// Metres, when ranging could estimate it.
  public var distance: Double?
  /// The region it was ranged in, if any: the log remembers which beacons
  /// belong to which region so `--region` and the plot can use it.
  public var region: String?

  public init(
    t: WallTime, beacon: TrackedID, address: BDAddress? = nil, rssi: Double? = nil,
    distance: Double? = nil, region: String? = nil
  ) {
    self.t = t
    self.beacon = beacon
    self.address = address
    self.rssi = rssi
    self.distance = distance
    self.region = region
  }
}

public struct AdapterLogEvent: Sendable, Equatable {
  public enum Kind: String, Sendable, CaseIterable {
    case up, down
  }
  public var t: WallTime
  public var adapter: String
  public var kind: Kind

  public init(t: WallTime, adapter: String, kind: Kind) {
    self.t = t
    self.adapter = adapter
    self.kind = kind
  }
}

public struct FindPhoneLogEvent: Sendable, Equatable {
  public enum Kind: String, Sendable, CaseIterable {
    case started, stopped, found
    /// The result of telling the device it was found (`detail`: ok, or why not).
    case notice
  }
  public var t: WallTime
  public var kind: Kind
  public var device: String
  public var detail: String?

  public init(t: WallTime, kind: Kind, device: String, detail: String? = nil) {
    self.t = t
    self.kind = kind
    self.device = device
    self.detail = detail
  }
}

public struct VolumeLogEvent: Sendable, Equatable {
  public var t: WallTime
  /// 0...1 after the change.
  public var volume: Double
  public var muted: Bool
  /// Who changed it (a device name, "find-phone", "restore", ...).
  public var source: String?

  public init(t: WallTime, volume: Double, muted: Bool = false, source: String? = nil) {
    self.t = t
    self.volume = volume
    self.muted = muted
    self.source = source
  }
}

/// A beacon's own telemetry (Eddystone-TLM), at the wall time it was heard;
/// the agent logs one per beacon per ten minutes, or when the battery moved.
public struct TelemetryLogEvent: Sendable, Equatable {
  public var beacon: TrackedID
  /// Its `t` is the wall time here.
  public var reading: BeaconTelemetry
  public var t: WallTime { reading.shown }

  public init(beacon: TrackedID, reading: BeaconTelemetry) {
    self.beacon = beacon
    self.reading = reading
  }
}

/// A tracker that started to follow, or one that followed and the user
/// cleared (`tracker.clear`): the alert and its end, not the sightings.
public struct TrackerLogEvent: Sendable, Equatable {
  public enum Kind: String, Sendable, CaseIterable {
    case following, cleared
  }

  public var t: WallTime
  public var kind: Kind
  /// The watch's number for it (`earshot trackers`).
  public var number: Int
  /// Its protocol row's name ("Find My (separated)").
  public var protocolName: String
  /// What the frame says it is ("airtag").
  public var trackerKind: String
  public var address: BDAddress
  public var places: Int
  public var sightings: Int

  public init(
    t: WallTime, kind: Kind, number: Int, protocolName: String, trackerKind: String,
    address: BDAddress, places: Int, sightings: Int
  ) {
    self.t = t
    self.kind = kind
    self.number = number
    self.protocolName = protocolName
    self.trackerKind = trackerKind
    self.address = address
    self.places = places
    self.sightings = sightings
  }

  public init(t: WallTime, kind: Kind, row: TrackerRow) {
    self.init(
      t: t, kind: kind, number: row.number.value, protocolName: row.frame.row.name,
      trackerKind: row.frame.kind.rawValue, address: row.address, places: row.places,
      sightings: row.sightings)
  }
}
