/// `--beacon UUID[:major[:minor]]`.
public struct BeaconFilter: Sendable, Equatable, CustomStringConvertible {
  public var uuid: BeaconUUID
  public var major: UInt16?
  public var minor: UInt16?

  public init(uuid: BeaconUUID, major: UInt16? = nil, minor: UInt16? = nil) {
    self.uuid = uuid
    self.major = major
    self.minor = minor
  }

  public struct ParseError: Error, CustomStringConvertible {
    public let text: String
    public var description: String {
      "'\(text)' is not a beacon: give UUID, UUID:MAJOR or UUID:MAJOR:MINOR "
        + "(e.g. 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182:1:10)"
    }
  }

  public init(parsing text: String) throws {
    let parts = text.split(separator: ":", omittingEmptySubsequences: false)
    guard (1...3).contains(parts.count), let uuid = BeaconUUID(parts[0]) else {
      throw ParseError(text: text)
    }
    self.uuid = uuid
    if parts.count > 1 {
      guard let v = UInt16(parts[1]) else { throw ParseError(text: text) }
      major = v
    }
    if parts.count > 2 {
      guard let v = UInt16(parts[2]) else { throw ParseError(text: text) }
      minor = v
    }
  }

  /// iBeacons only: these matches have no format of their own (yet).
  public func matches(_ id: BeaconID) -> Bool {
    id.format == .iBeacon && id.uuid == uuid && (major.map { $0 == id.major } ?? true)
      && (minor.map { $0 == id.minor } ?? true)
  }

  public var description: String {
    var s = uuid.description
    if let major { s += ":\(major)" }
    if let minor { s += ":\(minor)" }
    return s
  }
}

/// What `earshot log` asks of the log.
public struct LogQuery: Sendable, Equatable {
  /// Microseconds; `nil` = unbounded.
  public var since: Int64?
  public var until: Int64?
  public var region: String?
  public var beacon: BeaconFilter?

  public init(
    since: Int64? = nil, until: Int64? = nil, region: String? = nil, beacon: BeaconFilter? = nil
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

  public var t: Int64 {
    switch self {
    case .region(let e): e.t
    case .sightings(let s): s.start
    case .adapter(let e): e.t
    case .findPhone(let e): e.t
    case .volume(let e): e.t
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
    }
  }
}
