/// Receiver calibration for ranging and rooms (`earshot calibrate`).
///
/// A beacon held 1 m from a receiver is heard at the receiver's version of
/// the beacon's measured power. The estimate is the median RSSI over the
/// loudest `window` seconds of what the receiver heard from it: robust to
/// outliers and lost reports, and it finds the moment the beacon was held
/// close in a longer recording (a tour that stops 1 m from each receiver
/// in turn). The `rssi_offset` that corrects the receiver is then the
/// reference power minus that median.
public struct LoudestWindow: Sendable {
  public let window: Int64
  /// Windows with fewer reports are not candidates.
  public let minimumReports: Int
  /// The current window's reports, oldest first (bounded by `capacity`).
  private var samples: [(t: Int64, rssi: Int8)] = []
  private var head = 0
  private var first: Int64?
  private var lastEvaluated: Int64?
  public private(set) var best: Estimate?
  public private(set) var reports = 0
  /// Reports kept for one window at most (a 200 Hz advertiser for 20 s
  /// fits; beyond it the oldest go first).
  public static let capacity = 4096

  public struct Estimate: Sendable, Equatable {
    /// Median RSSI over the window, dBm.
    public var median: Double
    /// Mean RSSI, dBm: between windows with the same median, the louder
    /// mean is the one wholly inside the hold.
    public var mean: Double
    public var reports: Int
    /// First and last report in the window.
    public var from: WallTime
    public var to: WallTime
  }

  public init(seconds: Double, minimumReports: Int = 10) {
    window = Int64(seconds * 1e6)
    self.minimumReports = minimumReports
  }

  /// One report, in time order (the capture's or the scan's own stamp).
  public mutating func add(at time: WallTime, rssi: Int8) {
    let t = time.micros
    reports += 1
    if first == nil { first = t }
    samples.append((t, rssi))
    while head < samples.count && samples[head].t <= t - window { head += 1 }
    if samples.count - head > Self.capacity { head = samples.count - Self.capacity }
    if head > 4096 && head * 2 > samples.count {
      samples.removeFirst(head)
      head = 0
    }
    // Full windows only, judged at most four times a second of capture.
    if t - first! >= window - window / 20 && t - (lastEvaluated ?? t - 250_000) >= 250_000 {
      lastEvaluated = t
      consider()
    }
  }

  /// Ends the input: a recording shorter than the window is one window.
  public mutating func finish() {
    if best == nil { consider() }
  }

  private mutating func consider() {
    let n = samples.count - head
    guard n >= minimumReports, n > 0 else { return }
    let values = samples[head...].map { Double($0.rssi) }
    let m = Self.median(values)
    let mean = values.reduce(0, +) / Double(n)
    if best == nil || (m, mean) > (best!.median, best!.mean) {
      best = Estimate(
        median: m, mean: mean, reports: n, from: WallTime(micros: samples[head].t),
        to: WallTime(micros: samples.last!.t))
    }
  }

  public static func median(_ values: [Double]) -> Double {
    let s = values.sorted()
    guard !s.isEmpty else { return .nan }
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
  }
}

public enum Calibration {
  /// The `rssi_offset` per receiver that makes each read `reference` at
  /// 1 m, from what each heard there (dBm), to 0.1 dB.
  public static func offsets(heard: [(name: String, median: Double)], reference: Double)
    -> [(name: String, offset: Double)]
  {
    heard.map { ($0.name, ((reference - $0.median) * 10).rounded() / 10) }
  }
}
