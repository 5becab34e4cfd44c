#if canImport(Glibc)
  import Glibc
#endif

/// Learns a beacon's advertising interval and loss from the gaps between
/// its reports, for `exit_after = auto`.
///
/// The interval is a low percentile of the gaps (the gaps with nothing lost
/// in between); the loss rate follows from the mean gap (mean = interval /
/// (1 - loss)), taken at an upper confidence bound. With loss p, a gap of
/// m + 1 intervals while the beacon is present has a chance of p^m, so the
/// timeout is m + 1 intervals with m the smallest count (at least 5) for
/// which p^m < `missChance`; never less than three times the longest gap
/// seen lately (bursts of loss, a body in the way), clamped to
/// [floor, ceiling]. So a 100 ms beacon under 50 % loss waits ~2.5 s (then
/// the floor) and a 1 s beacon under 30 % loss ~15 s.
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
  /// The chance, for one gap, that a beacon still present stays unheard
  /// for its whole timeout.
  public static let missChance = 1e-6

  private var gaps = InlineArray<128, UInt16>(repeating: 0)
  private var lastReport: Int64? = nil
  // Small counters: this struct is stored once per tracked beacon (here,
  // in the padding after the optional: 8 bytes less than before it).
  private var count: UInt8 = 0
  private var next: UInt8 = 0
  private var slowRun: UInt8 = 0
  private var sinceUpdate: UInt8 = 0
  // The statistics' whole numbers, here in the padding too: the longest
  // gap (in units), the misses the timeout allows and the slowdown factor
  // (0: no statistics yet). The timeout and the slowdown threshold are
  // worked out from them by the arithmetic that once stored them (so the
  // same doubles): 48 bytes and a tag became 24.
  private var longestGap: UInt16 = 0
  private var misses: UInt16 = 0
  private var factor: UInt8 = 0
  // The 10th percentile at the last update (in units): where the next
  // update looks first, since one more gap moves it at most one rank.
  private var tenth: UInt16 = 0
  private var interval = 0.0
  private var loss = 0.0
  private var upper = 0.0

  public init() {}

  /// One report at `t`. A gap longer than `absentAfter` seconds (the
  /// beacon's timeout before this report) was an absence, not a gap in its
  /// advertising: it is not kept, so a beacon that comes back is not
  /// taken for one that falls silent for minutes.
  public mutating func observe(at time: DecisionTime, absentAfter: Double = .infinity) {
    let t = time.micros
    guard let last = lastReport else {
      lastReport = t
      return
    }
    let micros = t - last
    // Keep measuring from the advertising event's first report.
    guard micros >= Self.minimumGapMicros else { return }
    lastReport = t
    guard Double(micros) <= absentAfter * 1e6 else { return }
    let gap = UInt16(clamping: (micros + Self.unitMicros / 2) / Self.unitMicros)
    // A gap longer than any seen is news (a beacon that slowed down): the
    // statistics take it in at once, not at the next scheduled update.
    let longer = stats.map { Double(gap) * Double(Self.unitMicros) / 1e6 > $0.longest } ?? false
    if count < Self.capacity {
      gaps[Int(count)] = gap
      count += 1
    } else {
      gaps[Int(next)] = gap
      next = UInt8((Int(next) + 1) % Self.capacity)
    }
    if let stats, Double(gap) * Double(Self.unitMicros) / 1e6 >= stats.slowdown {
      slowRun += 1
      if slowRun >= Self.slowdownGaps { return restartFromRecentGaps() }
    } else {
      slowRun = 0
    }
    update(now: longer)
  }

  /// Gaps in a row, each at least `slowdownFactor` intervals, that mean
  /// the beacon advertises more slowly now (a phone locked), not that it
  /// lost more: the factor makes that run as unlikely as `missChance` for
  /// a steady beacon at its loss (3 at 10 % loss, 7 at 55 %).
  static let slowdownGaps: UInt8 = 4
  static func slowdownFactor(loss: Double) -> Double {
    guard loss > 0.01 else { return 2 }
    return 1 + max(1, (log(missChance) / (Double(slowdownGaps) * log(loss))).rounded(.up))
  }

  /// A beacon that slowed down: the gaps from before say nothing about it
  /// now. Keeps only the recent gaps, so it is learnt afresh (too few gaps:
  /// the cautious timeout meanwhile).
  private mutating func restartFromRecentGaps() {
    let recent = Int(Self.slowdownGaps)
    let end = count < Self.capacity ? Int(count) : Int(next) + Self.capacity
    let kept = (end - recent..<end).map { gaps[$0 % Self.capacity] }
    for (k, g) in kept.enumerated() { gaps[k] = g }
    count = UInt8(recent)
    next = 0
    slowRun = 0
    factor = 0
  }

  /// A gap across scanning downtime says nothing about the beacon.
  public mutating func interrupt() { lastReport = nil }

  /// Statistics recomputed as gaps arrive (every gap at first, then every
  /// 16th, and at once for a gap longer than any seen), so that asking for
  /// the timeout costs a multiplication.
  private var stats:
    (
      interval: Double, loss: Double, upper: Double, longest: Double, timeout: Double,
      slowdown: Double
    )?
  {
    guard factor > 0 else { return nil }
    let longest = Double(longestGap) * (Double(Self.unitMicros) / 1e6)
    return (
      interval, loss, upper, longest, max(interval * (Double(misses) + 1), 3 * longest),
      Double(factor) * interval
    )
  }

  private mutating func update(now: Bool) {
    sinceUpdate &+= 1
    guard count >= Self.minimumGaps, now || count < 64 || sinceUpdate >= 16 || factor == 0
    else { return }
    sinceUpdate = 0
    let unit = Double(Self.unitMicros) / 1e6
    // The 10th percentile, the sum and the longest in one pass: the last
    // percentile's rank among the gaps, and its neighbours below and
    // above, give the new one when it moved at most one rank (every
    // update while learning); otherwise a selection on a copy.
    let n = Int(count)
    let rank = n / 10
    let last = tenth
    var total = 0
    var longest: UInt16 = 0
    var below = 0
    var equal = 0
    var under: UInt16 = 0
    var over = UInt16.max
    for k in 0..<n {
      let g = gaps[k]
      total += Int(g)
      longest = max(longest, g)
      if g < last {
        below += 1
        under = max(under, g)
      } else if g == last {
        equal += 1
      } else {
        over = min(over, g)
      }
    }
    let percentile: UInt16
    if rank >= below && rank < below + equal {
      percentile = last
    } else if rank == below - 1 {
      percentile = under
    } else if rank == below + equal {
      percentile = over
    } else {
      percentile = Self.select(gaps, count: n, rank: rank)
    }
    tenth = percentile
    let interval = Double(percentile) * unit
    // Whole numbers below 2^24: exact as doubles, whatever the order.
    let span = Double(total) * unit
    let mean = span / Double(count)
    let loss = min(0.95, max(0, 1 - interval / mean))
    // An upper confidence bound (Wilson's score interval, z = 2, about
    // 97.7 %): with few gaps seen the estimate is noisy, and
    // underestimating loss is what causes false exits. Wilson's stays wide
    // when no loss was seen: 8 gaps without a loss bound it at 0.33, not
    // near 0 (a 1 s beacon losing 30 % shows 8 such gaps one time in 17).
    let events = max(1, span / interval)
    let z2 = 4.0
    let centre = loss + z2 / (2 * events)
    let spread = 2 * (loss * (1 - loss) / events + z2 / (4 * events * events)).squareRoot()
    let upper = min(0.95, (centre + spread) / (1 + z2 / events))
    var misses = 5.0
    // At the upper bound of the loss, as the timeout has always been taken.
    if upper > 0.01 { misses = max(misses, (log(Self.missChance) / log(upper)).rounded(.up)) }
    // The timeout and the slowdown threshold (in seconds) are worked out
    // from these, with no logarithm at a report. Whole numbers: misses at
    // most 270 and the factor 69 (the bound is at most 0.95).
    (self.interval, self.loss, self.upper) = (interval, loss, upper)
    self.longestGap = longest
    self.misses = UInt16(misses)
    self.factor = UInt8(Self.slowdownFactor(loss: upper))
  }

  /// The value of rank `rank` (0-based) among the first `count` gaps:
  /// quickselect on a copy, which lives on the stack.
  static func select(_ values: InlineArray<128, UInt16>, count: Int, rank: Int) -> UInt16 {
    var v = values
    var lo = 0
    var hi = count - 1
    while lo < hi {
      let pivot = v[lo + (hi - lo) / 2]
      var i = lo
      var j = hi
      while i <= j {
        while v[i] < pivot { i += 1 }
        while v[j] > pivot { j -= 1 }
        if i <= j {
          let x = v[i]
          v[i] = v[j]
          v[j] = x
          i += 1
          j -= 1
        }
      }
      if rank <= j {
        hi = j
      } else if rank >= i {
        lo = i
      } else {
        return v[rank]
      }
    }
    return v[rank]
  }

  /// Gaps enough for the loss bound to be near the loss (64 gaps of a
  /// 1 s beacon losing 30 % bound it at about 0.40; the first 8 at about
  /// 0.6): the scan scheduler keeps full duty until a beacon's are learnt.
  public static let settledGaps = 64
  public var isSettled: Bool { Int(count) >= Self.settledGaps }

  public var intervalSeconds: Double? { stats?.interval }
  public var lossRate: Double? { stats?.loss }
  public var lossUpperBound: Double? { stats?.upper }

  /// Seconds without a report before this beacon counts as gone, or `nil`
  /// while too little has been seen.
  public func timeout(floor: Double, ceiling: Double) -> Double? {
    // Worked out when the statistics change (every 16th gap or so), since
    // this is asked at every report.
    guard let t = stats?.timeout else { return nil }
    return min(ceiling, max(floor, t))
  }
}
