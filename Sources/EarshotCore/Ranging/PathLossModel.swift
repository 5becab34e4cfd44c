#if canImport(Glibc)
  import Glibc
#endif

/// The log-distance path-loss model: rssi(d) = P - 10 n log10(d / 1 m),
/// where P is the beacon's measured power (its calibrated RSSI at 1 m) and
/// n the path-loss exponent (2 in free space; 2.5-4 indoors).
///
/// Chosen over curve fits like AltBeacon's per-phone `c1 (r/P)^c2 + c3`:
/// one physical parameter that a user can reason about and calibrate, and
/// `fitExponent` recovers it from a few measured points.
public struct PathLossModel: Sendable, Equatable {
  public var exponent: Double
  /// dB added to the receiver's RSSI (receiver calibration).
  public var rssiOffset: Double

  public init(exponent: Double = 2.0, rssiOffset: Double = 0) {
    self.exponent = exponent
    self.rssiOffset = rssiOffset
  }

  /// Estimated distance in metres.
  public func distance(rssi: Double, measuredPower: Double) -> Double {
    pow(10, (measuredPower - (rssi + rssiOffset)) / (10 * exponent))
  }

  /// The RSSI the model predicts at `distance` metres.
  public func rssi(distance: Double, measuredPower: Double) -> Double {
    measuredPower - 10 * exponent * log10(distance) - rssiOffset
  }

  /// Least-squares exponent for points (distance m, rssi dBm) given the
  /// power at 1 m: minimises the dB error of the model (a line through the
  /// origin in x = 10 log10 d, y = P - rssi).
  public static func fitExponent(
    _ points: [(distance: Double, rssi: Double)], measuredPower: Double
  ) -> Double? {
    var sxy = 0.0
    var sxx = 0.0
    for p in points where p.distance > 0 {
      let x = 10 * log10(p.distance)
      sxy += x * (measuredPower - p.rssi)
      sxx += x * x
    }
    return sxx > 0 ? sxy / sxx : nil
  }

  /// Least-squares power at 1 m and exponent together (a straight line in
  /// x = 10 log10 d), for calibrating from measurements at several
  /// distances when none was taken at exactly 1 m.
  public static func fit(_ points: [(distance: Double, rssi: Double)]) -> (
    measuredPower: Double, exponent: Double
  )? {
    let p = points.filter { $0.distance > 0 }
    guard p.count >= 2 else { return nil }
    let xs = p.map { 10 * log10($0.distance) }
    let mx = xs.reduce(0, +) / Double(p.count)
    let my = p.map(\.rssi).reduce(0, +) / Double(p.count)
    var sxy = 0.0
    var sxx = 0.0
    for (x, q) in zip(xs, p) {
      sxy += (x - mx) * (q.rssi - my)
      sxx += (x - mx) * (x - mx)
    }
    guard sxx > 0 else { return nil }
    let slope = sxy / sxx
    return (my - slope * mx, -slope)
  }
}

/// CoreLocation's proximity classes.
public enum Proximity: String, Sendable, Comparable {
  case immediate, near, far, unknown

  /// immediate < 0.5 m, near < 3 m, far beyond.
  public init(distance: Double) {
    if distance < 0.5 {
      self = .immediate
    } else if distance < 3 {
      self = .near
    } else {
      self = .far
    }
  }

  var rank: Int {
    switch self {
    case .immediate: 0
    case .near: 1
    case .far: 2
    case .unknown: 3
    }
  }

  public static func < (a: Proximity, b: Proximity) -> Bool { a.rank < b.rank }
}
