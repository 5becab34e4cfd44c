/// One row of the log per beacon per interval: what was seen of it.
public struct SightingSummary: Sendable, Equatable {
  public var beacon: TrackedID
  /// The interval: `start` inclusive, `end` exclusive.
  public var start: WallTime
  public var end: WallTime
  /// Sightings in the interval.
  public var count: Int
  /// Of those, how many carried an RSSI (the mean is over these).
  public var rssiCount: Int
  public var rssiMean: Double?
  public var rssiMin: Double?
  public var rssiMax: Double?
  /// Mean over the sightings that had a distance.
  public var distanceMean: Double?
  /// The last advertiser address seen for it in the interval.
  public var address: BDAddress?

  public init(
    beacon: TrackedID, start: WallTime, end: WallTime, count: Int, rssiCount: Int = 0,
    rssiMean: Double? = nil, rssiMin: Double? = nil, rssiMax: Double? = nil,
    distanceMean: Double? = nil, address: BDAddress? = nil
  ) {
    self.beacon = beacon
    self.start = start
    self.end = end
    self.count = count
    self.rssiCount = rssiCount
    self.rssiMean = rssiMean
    self.rssiMin = rssiMin
    self.rssiMax = rssiMax
    self.distanceMean = distanceMean
    self.address = address
  }
}

/// Folds sightings into one summary per beacon per interval. Intervals are
/// aligned to multiples of the interval since the epoch, so rows from
/// different runs line up. Pure: time comes only from the sightings and
/// from `close(before:)`.
///
/// A bucket is handed out once time has passed its end: when a later
/// sighting of the same beacon arrives, or when the caller says the time is
/// past it (`close(before:)`, from a timer), or at `closeAll()`. A sighting
/// older than its beacon's open bucket (clocks stepping back) starts a new
/// bucket after handing out the open one, so nothing is lost or reordered.
public struct SightingDownsampler: Sendable {
  public let interval: Int64

  private struct Bucket: Sendable {
    var summary: SightingSummary
    var rssiSum = 0.0
    var distanceSum = 0.0
    var distanceCount = 0
  }

  private var open: [TrackedID: Bucket] = [:]

  /// `interval` in microseconds (default 10 s); at least 1 µs.
  public init(interval: Int64 = 10_000_000) {
    self.interval = max(1, interval)
  }

  /// Beacons with an interval in progress.
  public var openCount: Int { open.count }

  /// Start of the interval that contains `t`.
  public func intervalStart(_ t: WallTime) -> WallTime {
    let r = t.micros % interval
    return WallTime(micros: r >= 0 ? t.micros - r : t.micros - r - interval)
  }

  /// Adds a sighting; returns the summaries it completed (at most one).
  public mutating func add(_ s: BeaconSighting) -> [SightingSummary] {
    var done: [SightingSummary] = []
    let start = intervalStart(s.t)
    if let b = open[s.beacon], b.summary.start != start {
      done.append(finish(b))
      open[s.beacon] = nil
    }
    var b =
      open[s.beacon]
      ?? Bucket(
        summary: SightingSummary(
          beacon: s.beacon, start: start, end: start + .microseconds(interval), count: 0))
    b.summary.count += 1
    if let a = s.address { b.summary.address = a }
    if let r = s.rssi, r.isFinite {
      b.summary.rssiCount += 1
      b.rssiSum += r
      b.summary.rssiMin = min(b.summary.rssiMin ?? r, r)
      b.summary.rssiMax = max(b.summary.rssiMax ?? r, r)
    }
    if let d = s.distance, d.isFinite, d >= 0 {
      b.distanceSum += d
      b.distanceCount += 1
    }
    open[s.beacon] = b
    return done
  }

  /// Hands out every bucket whose interval ended at or before `t`.
  public mutating func close(before t: WallTime) -> [SightingSummary] {
    let due = open.values.filter { $0.summary.end <= t }
    for b in due { open[b.summary.beacon] = nil }
    return due.map(finish).sorted(by: Self.order)
  }

  /// Hands out every open bucket (at shutdown or the end of an import).
  public mutating func closeAll() -> [SightingSummary] {
    let all = open.values.map(finish).sorted(by: Self.order)
    open = [:]
    return all
  }

  private func finish(_ b: Bucket) -> SightingSummary {
    var s = b.summary
    if s.rssiCount > 0 { s.rssiMean = b.rssiSum / Double(s.rssiCount) }
    if b.distanceCount > 0 { s.distanceMean = b.distanceSum / Double(b.distanceCount) }
    return s
  }

  static func order(_ a: SightingSummary, _ b: SightingSummary) -> Bool {
    (a.start, a.beacon) < (b.start, b.beacon)
  }
}
