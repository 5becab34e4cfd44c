/// What `earshot log` asks of the log.
public struct LogQuery: Sendable, Equatable {
  /// `nil` = unbounded.
  public var since: WallTime?
  public var until: WallTime?
  public var region: String?
  public var beacon: TrackedMatch?

  public init(
    since: WallTime? = nil, until: WallTime? = nil, region: String? = nil,
    beacon: TrackedMatch? = nil
  ) {
    self.since = since
    self.until = until
    self.region = region
    self.beacon = beacon
  }
}

/// One row of the log as read back: downsampled sightings, not raw ones.
public enum LogRecord: Sendable, Equatable {
  case region(RegionLogEvent)
  case sightings(SightingSummary)
  case adapter(AdapterLogEvent)
  case findPhone(FindPhoneLogEvent)
  case volume(VolumeLogEvent)
  case telemetry(TelemetryLogEvent)
  case tracker(TrackerLogEvent)

  public var t: WallTime {
    switch self {
    case .region(let e): e.t
    case .sightings(let s): s.start
    case .adapter(let e): e.t
    case .findPhone(let e): e.t
    case .volume(let e): e.t
    case .telemetry(let e): e.t
    case .tracker(let e): e.t
    }
  }

  /// Table order: time, then region events before sightings at equal times.
  public var rank: Int {
    switch self {
    case .adapter: 0
    case .region: 1
    case .sightings: 2
    case .findPhone: 3
    case .volume: 4
    case .telemetry: 5
    case .tracker: 6
    }
  }
}
