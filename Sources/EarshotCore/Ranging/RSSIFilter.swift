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
  /// Constants, not stored: this struct is stored once per tracked beacon.
  public static let measurementVariance = 9.0
  public static let processVariancePerSecond = 1.5

  /// The median's window, oldest first, kept inline: a heap array per
  /// beacon cost more than the filter itself with thousands tracked, and an
  /// allocation per report. Samples as `Float`: RSSI comes in whole dBm
  /// (an `Int8`), which a `Float` holds exactly, in half the bytes.
  private var times = InlineArray<5, Int64>(repeating: 0)
  private var samples = InlineArray<5, Float>(repeating: 0)
  // One byte each, after the samples (this struct is stored once per
  // tracked beacon): 16 bytes less than two `Int`s.
  private var storedCount: UInt8 = 0
  private var storedSign: Int8 = 0
  // Meaningful while the window holds a sample: the two are set and reset
  // together, so no optional's tag, and the last sample's time is the
  // window's newest (no field of its own).
  private var estimate = 0.0
  private var variance = 0.0

  private var count: Int {
    get { Int(storedCount) }
    set { storedCount = UInt8(newValue) }
  }
  private var lastInnovationSign: Int {
    get { Int(storedSign) }
    set { storedSign = Int8(newValue) }
  }

  public init() {}

  public var value: Double? { count > 0 ? estimate : nil }

  /// When the last sample was added, or `nil` before the first one (and
  /// after `reset`).
  var lastSampleTime: Int64? { count > 0 ? times[count - 1] : nil }

  public mutating func reset() {
    count = 0
    lastInnovationSign = 0
  }

  /// Adds a sample at `time` and returns the new estimate.
  @discardableResult
  public mutating func add(_ rssi: Double, at time: DecisionTime) -> Double {
    let t = time.micros
    if count == Self.windowCount { dropOldest() }
    // The newest sample stays newest when the oldest is dropped.
    let previous = lastSampleTime
    times[count] = t
    samples[count] = Float(rssi)
    count += 1
    while count > 1, t - times[0] > Self.windowMicros { dropOldest() }
    let m = median()
    guard let lastTime = previous else {
      estimate = m
      variance = Self.measurementVariance
      return m
    }
    let x = estimate
    let dt = max(0, Double(t - lastTime) / 1e6)
    var p = variance + Self.processVariancePerSecond * dt
    let innovation = m - x
    let sign = innovation > 0 ? 1 : -1
    // Normalised innovation beyond 2 sigma, twice in the same direction: a
    // real change. Open the gain in proportion to how far off we are.
    if innovation * innovation > 4 * (p + Self.measurementVariance) {
      if sign == lastInnovationSign { p += innovation * innovation }
      lastInnovationSign = sign
    } else {
      lastInnovationSign = 0
    }
    let k = p / (p + Self.measurementVariance)
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
    var s = InlineArray<5, Double>(repeating: 0)
    for i in 0..<count { s[i] = Double(samples[i]) }
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
