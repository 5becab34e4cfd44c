/// Smooths one beacon's RSSI so that it is stable yet follows a walk.
///
/// Two stages, because RSSI noise has two shapes:
/// 1. A median of the last few samples (at most 5, none older than 3 s)
///    removes single outliers (a reflection, a body in the way) outright;
///    a mean or a plain Kalman filter would be dragged by them. With a
///    1 s beacon the window holds about 3 samples, so it adds ~1 s of lag,
///    not 5 s.
/// 2. A scalar Kalman filter (random-walk model) smooths the medians and
///    weighs them by elapsed time, so beacons of any rate behave alike. It
///    adapts: when the innovation stays large with the same sign twice in a
///    row (a trend, which the median has already confirmed is no outlier)
///    the estimate's variance is raised, so the gain jumps and the filter
///    catches up in a second or two. room-assistant's fixed-gain Kalman
///    lags a walking person by ten seconds or more; this one does not, and
///    a steady beacon still reads within about a dB.
public struct RSSIFilter: Sendable {
  public static let windowCount = 5
  public static let windowMicros: Int64 = 3_000_000
  /// Measurement noise of a median (dB^2), and drift allowed per second.
  public var measurementVariance = 9.0
  public var processVariancePerSecond = 1.5

  /// The median's window, oldest first, kept inline: a heap array per
  /// beacon cost more than the filter itself with thousands tracked, and an
  /// allocation per report.
  private var times = InlineArray<5, Int64>(repeating: 0)
  private var samples = InlineArray<5, Double>(repeating: 0)
  private var estimate: Double? = nil
  // One byte each, in the padding after `estimate` (this struct is stored
  // once per tracked beacon): 16 bytes less than two `Int`s.
  private var storedCount: UInt8 = 0
  private var storedSign: Int8 = 0
  private var variance = 0.0
  private var lastTime: Int64 = 0

  private var count: Int {
    get { Int(storedCount) }
    set { storedCount = UInt8(newValue) }
  }
  private var lastInnovationSign: Int {
    get { Int(storedSign) }
    set { storedSign = Int8(newValue) }
  }

  public init() {}

  public var value: Double? { estimate }

  public mutating func reset() {
    count = 0
    estimate = nil
    lastInnovationSign = 0
  }

  /// Adds a sample at `time` and returns the new estimate.
  @discardableResult
  public mutating func add(_ rssi: Double, at time: DecisionTime) -> Double {
    let t = time.micros
    if count == Self.windowCount { dropOldest() }
    times[count] = t
    samples[count] = rssi
    count += 1
    while count > 1, t - times[0] > Self.windowMicros { dropOldest() }
    let m = median()
    guard let x = estimate else {
      estimate = m
      variance = measurementVariance
      lastTime = t
      return m
    }
    let dt = max(0, Double(t - lastTime) / 1e6)
    lastTime = t
    var p = variance + processVariancePerSecond * dt
    let innovation = m - x
    let sign = innovation > 0 ? 1 : -1
    // Normalised innovation beyond 2 sigma, twice in the same direction: a
    // real change. Open the gain in proportion to how far off we are.
    if innovation * innovation > 4 * (p + measurementVariance) {
      if sign == lastInnovationSign { p += innovation * innovation }
      lastInnovationSign = sign
    } else {
      lastInnovationSign = 0
    }
    let k = p / (p + measurementVariance)
    let next = x + k * innovation
    estimate = next
    variance = (1 - k) * p
    return next
  }

  private mutating func dropOldest() {
    for i in 1..<count {
      times[i - 1] = times[i]
      samples[i - 1] = samples[i]
    }
    count -= 1
  }

  /// Insertion sort of at most five values on the stack.
  private func median() -> Double {
    var s = samples
    for i in 1..<max(1, count) {
      let v = s[i]
      var j = i - 1
      while j >= 0, s[j] > v {
        s[j + 1] = s[j]
        j -= 1
      }
      s[j + 1] = v
    }
    let n = count
    return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2
  }
}
