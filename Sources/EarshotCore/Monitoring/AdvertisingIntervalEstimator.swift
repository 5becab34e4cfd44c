#if canImport(Glibc)
  import Glibc
#endif

/// Learns a beacon's advertising interval and loss from the gaps between
/// its reports, for `exit_after = auto`.
///
/// The interval is a low percentile of the gaps (the gaps with nothing lost
/// in between); the loss rate follows from the mean gap (mean = interval /
/// (1 - loss)). The timeout is the number of consecutive missed intervals
/// that has a one-in-a-billion chance under that loss, at least 5, and never
/// less than three times the longest gap seen lately (bursts of loss, a body
/// in the way), clamped to [floor, ceiling]. So a 100 ms beacon exits after
/// the floor, and a 1 s beacon under 30 % loss waits ~19 s and does not flap.
public struct AdvertisingIntervalEstimator: Sendable {
  public static let capacity = 64
  /// Fewer gaps than this and the estimate is not trusted yet.
  public static let minimumGaps = 8
  /// Reports closer than this are one advertising event seen twice (three
  /// channels, or an advertisement and its scan response).
  public static let minimumGapMicros: Int64 = 20_000

  private var gaps: [Int64] = []
  private var next = 0
  private var lastReport: Int64? = nil

  public init() {}

  public mutating func observe(at t: Int64) {
    guard let last = lastReport else {
      lastReport = t
      return
    }
    let gap = t - last
    // Keep measuring from the advertising event's first report.
    guard gap >= Self.minimumGapMicros else { return }
    lastReport = t
    if gaps.count < Self.capacity {
      gaps.append(gap)
    } else {
      gaps[next] = gap
      next = (next + 1) % Self.capacity
    }
  }

  /// A gap across scanning downtime says nothing about the beacon.
  public mutating func interrupt() { lastReport = nil }

  public var intervalSeconds: Double? {
    guard gaps.count >= Self.minimumGaps else { return nil }
    let sorted = gaps.sorted()
    return Double(sorted[sorted.count / 10]) / 1e6
  }

  public var lossRate: Double? {
    guard let interval = intervalSeconds else { return nil }
    let mean = Double(gaps.reduce(0, +)) / Double(gaps.count) / 1e6
    return min(0.95, max(0, 1 - interval / mean))
  }

  /// Seconds without a report before this beacon counts as gone, or `nil`
  /// while too little has been seen.
  public func timeout(floor: Double, ceiling: Double) -> Double? {
    guard let interval = intervalSeconds, let loss = lossRate else { return nil }
    var misses = 5.0
    if loss > 0.01 { misses = max(misses, (log(1e-9) / log(loss)).rounded(.up)) }
    let longest = Double(gaps.max() ?? 0) / 1e6
    let t = max(interval * (misses + 1), 3 * longest)
    return min(ceiling, max(floor, t))
  }
}
