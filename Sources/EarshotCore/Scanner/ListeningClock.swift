#if canImport(Glibc)
  import Glibc
#endif

/// The spans in which the scanner listened, and at what duty: what exit
/// decisions count instead of plain elapsed time.
///
/// Silence proves absence only while someone listens. A pause (another
/// program's scan ended, Earshot's not yet back) adds nothing, and a span
/// at a low duty adds less evidence per second than one at full duty. Times
/// are the monitor's `DecisionTime` (kept as its microseconds); duties in
/// 0…1.
///
/// Guarantees (each tested):
/// - Accumulates across pauses: a silence counted before a pause goes on
///   counting after it, so off spans shorter than a timeout never keep a
///   region from exiting, and never count toward its exit.
/// - Never overcounts: memory is bounded (`capacity` spans); a question
///   about a time before the oldest kept span counts from that span's
///   start, which can only make a deadline later.
/// - `time(reaching:)` says nil while nothing listens and the amount is not
///   yet reached: no deadline can come due during a pause.
public struct ListeningClock: Sendable {
  struct Span: Sendable, Equatable {
    var start: Int64
    /// nil: listening still.
    var end: Int64?
    var duty: Double
  }

  static let capacity = 64
  private(set) var spans: [Span] = []

  public init() {}

  /// Whether a span is open.
  public var isListening: Bool { spans.last.map { $0.end == nil } ?? false }

  /// The duty now, nil while nothing listens.
  public var duty: Double? {
    guard let last = spans.last, last.end == nil else { return nil }
    return last.duty
  }

  /// When the open span at the present duty began (nil when not listening).
  public var dutySince: DecisionTime? {
    guard let last = spans.last, last.end == nil else { return nil }
    return DecisionTime(micros: last.start)
  }

  /// Listening from `time` at `duty` (starting, or changing the duty of the
  /// open span). The same duty again changes nothing.
  public mutating func listen(duty: Double, at time: DecisionTime) {
    let t = time.micros
    let duty = min(1, max(0, duty))
    if let last = spans.last, last.end == nil {
      guard last.duty != duty else { return }
      spans[spans.count - 1].end = max(t, last.start)
    }

    spans.append(Span(start: t, end: nil, duty: duty))
    if spans.count > Self.capacity { spans.removeFirst(spans.count - Self.capacity) }
  }

  /// Nothing listens from `time` (a pause, the adapter down).
  public mutating func stop(at time: DecisionTime) {
    let t = time.micros
    guard let last = spans.last, last.end == nil else { return }
    spans[spans.count - 1].end = max(t, last.start)
  }

  /// Forgets every span (the adapter went down: nothing heard before says
  /// anything about after).
  public mutating func reset() { spans.removeAll(keepingCapacity: true) }

  /// What the spans between `from` and `to` add up to at `rate(duty)` per
  /// second (`{ _ in 1 }`: seconds of listening at any duty).
  public func accumulated(from: DecisionTime, to: DecisionTime, rate: (Double) -> Double)
    -> Double
  {
    accumulated(from: from.micros, to: to.micros, rate: rate)
  }

  /// `accumulated` in microseconds, for the monitor's internal timers.
  func accumulated(from t0: Int64, to t1: Int64, rate: (Double) -> Double) -> Double {
    var total = 0.0
    for span in spans.reversed() {
      let end = min(span.end ?? t1, t1)
      if end <= t0 { break }
      let start = max(span.start, t0)
      guard end > start else { continue }
      total += Double(end - start) / 1e6 * rate(span.duty)
    }
    return total
  }

  /// When the amount counted from `t0` reaches `amount` (at `rate(duty)`
  /// per second), if listening goes on at the present duty; nil if it is
  /// not reached by the past spans and nothing listens now (or the present
  /// duty adds nothing).
  public func time(reaching amount: Double, from: DecisionTime, rate: (Double) -> Double)
    -> DecisionTime?
  {
    time(reaching: amount, from: from.micros, rate: rate).map(DecisionTime.init(micros:))
  }

  /// `time(reaching:)` in microseconds, for the monitor's internal timers.
  func time(reaching amount: Double, from t0: Int64, rate: (Double) -> Double) -> Int64? {
    var left = amount
    // The common case first: one span, open since before t0.
    if let last = spans.last, last.end == nil, last.start <= t0 {
      let r = rate(last.duty)
      guard r > 0 else { return nil }
      return t0 &+ Self.micros(max(0, left) / r)
    }
    guard let first = spans.firstIndex(where: { ($0.end ?? .max) > t0 }) else { return nil }
    for span in spans[first...] {
      let start = max(span.start, t0)
      let r = rate(span.duty)
      if let end = span.end {
        let got = Double(end - start) / 1e6 * r
        if got >= left, r > 0 { return start &+ Self.micros(left / r) }
        left -= got
      } else {
        guard r > 0 else { return nil }
        return start &+ Self.micros(max(0, left) / r)
      }
    }
    return nil
  }

  static func micros(_ seconds: Double) -> Int64 {
    guard seconds < 9e12 else { return .max / 2 }
    return Int64((seconds * 1e6).rounded(.up))
  }
}

/// How much a second of silence at a duty says about a beacon that
/// advertises every `interval` seconds and loses `loss` of its events at
/// full duty: the natural log of how much less likely that second's
/// silence is for a beacon still present. Each event goes out on all three
/// advertising channels; a scan at duty D hears a given event with
/// probability about D × (1 − loss).
public struct SilenceEvidence: Sendable, Equatable {
  public let interval: Double
  public let loss: Double

  /// Loss is taken as at least 5 %: a beacon that seemed never to miss
  /// says little about the next minute.
  public init(interval: Double, loss: Double) {
    self.interval = max(0.005, interval)
    self.loss = min(0.95, max(0.05, loss))
  }

  /// Nats per second of silence at `duty`.
  public func rate(_ duty: Double) -> Double {
    let heard = min(1, max(0, duty)) * (1 - loss)
    return -log1p(-heard) / interval
  }

  /// The evidence an exit needs: a present beacon is this silent with a
  /// chance under `AdvertisingIntervalEstimator.missChance`.
  public static let needed = -log(AdvertisingIntervalEstimator.missChance)
}
