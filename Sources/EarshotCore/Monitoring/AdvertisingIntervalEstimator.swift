#if canImport(Glibc)
  import Glibc
#endif

/// Learns a beacon's advertising interval and loss from the gaps between
/// its reports, for `exit_after = auto`.
///
/// The interval is a low percentile of the gaps (the gaps with nothing lost
/// in between); the loss rate follows from the mean gap (mean = interval /
/// (1 - loss)), taken at an upper confidence bound. The timeout is the number of consecutive missed intervals
/// that has a one-in-a-billion chance under that loss, at least 5, and never
/// less than three times the longest gap seen lately (bursts of loss, a body
/// in the way), clamped to [floor, ceiling]. So a 100 ms beacon exits after
/// the floor, and a 1 s beacon under 30 % loss waits ~19 s and does not flap.
public struct AdvertisingIntervalEstimator: Sendable {
  /// Gaps kept (a ring): enough for a stable 10th percentile, small enough
  /// that 10,000 tracked beacons cost little (256 bytes each, inline).
  public static let capacity = 128
  /// Gaps are kept in units of 4 ms in 16 bits: up to 262 s, beyond which
  /// three times the longest gap is past any sensible ceiling anyway.
  static let unitMicros: Int64 = 4_000
  /// Fewer gaps than this and the estimate is not trusted yet.
  public static let minimumGaps = 8
  /// Reports closer than this are one advertising event seen twice (three
  /// channels, or an advertisement and its scan response).
  public static let minimumGapMicros: Int64 = 20_000

  private var gaps = InlineArray<128, UInt16>(repeating: 0)
  // Small counters: this struct is stored once per tracked beacon.
  private var count: UInt8 = 0
  private var next: UInt8 = 0
  private var lastReport: Int64? = nil

  public init() {}

  public mutating func observe(at t: Int64) {
    guard let last = lastReport else {
      lastReport = t
      return
    }
    let micros = t - last
    // Keep measuring from the advertising event's first report.
    guard micros >= Self.minimumGapMicros else { return }
    lastReport = t
    let gap = UInt16(clamping: (micros + Self.unitMicros / 2) / Self.unitMicros)
    if count < Self.capacity {
      gaps[Int(count)] = gap
      count += 1
    } else {
      gaps[Int(next)] = gap
      next = UInt8((Int(next) + 1) % Self.capacity)
    }
    update()
  }

  /// A gap across scanning downtime says nothing about the beacon.
  public mutating func interrupt() { lastReport = nil }

  /// Statistics recomputed as gaps arrive (every gap at first, then every
  /// 16th), so that asking for the timeout costs nothing.
  private var stats: (interval: Double, loss: Double, upper: Double, longest: Double)? = nil
  private var sinceUpdate: UInt8 = 0

  private mutating func update() {
    sinceUpdate += 1
    guard count >= Self.minimumGaps, count < 64 || sinceUpdate >= 16 || stats == nil
    else { return }
    sinceUpdate = 0
    let unit = Double(Self.unitMicros) / 1e6
    let sorted = (0..<Int(count)).map { gaps[$0] }.sorted()
    let interval = Double(sorted[sorted.count / 10]) * unit
    let span = sorted.reduce(0.0) { $0 + Double($1) } * unit
    let mean = span / Double(count)
    let loss = min(0.95, max(0, 1 - interval / mean))
    // An upper confidence bound (about 97.5 %): with few gaps seen the
    // estimate is noisy, and underestimating loss is what causes false exits.
    let events = max(1, span / interval)
    let p = max(loss, 0.05)
    let upper = min(0.95, loss + 2 * (p * (1 - p) / events).squareRoot())
    stats = (interval, loss, upper, Double(sorted.last!) * unit)
  }

  public var intervalSeconds: Double? { stats?.interval }
  public var lossRate: Double? { stats?.loss }
  public var lossUpperBound: Double? { stats?.upper }

  /// Seconds without a report before this beacon counts as gone, or `nil`
  /// while too little has been seen.
  public func timeout(floor: Double, ceiling: Double) -> Double? {
    guard let (interval, _, loss, longest) = stats else { return nil }
    var misses = 5.0
    if loss > 0.01 { misses = max(misses, (log(1e-9) / log(loss)).rounded(.up)) }
    let t = max(interval * (misses + 1), 3 * longest)
    return min(ceiling, max(floor, t))
  }
}
