/// A volume the user asked for: `0.37`, `37%`, or a step `+5%`, `-0.05`.
public enum VolumeChange: Sendable, Equatable {
  case absolute(Double)
  case relative(Double)

  /// Parses the text of `earshot volume set VALUE` (and the control
  /// socket's volume requests). Absolute values must be within 0…1
  /// (0…100%); steps may be any size and clamp when applied.
  public static func parse(_ text: String) -> VolumeChange? {
    var s = Substring(text)
    var sign: Double? = nil
    if s.hasPrefix("+") {
      sign = 1
      s = s.dropFirst()
    } else if s.hasPrefix("-") {
      sign = -1
      s = s.dropFirst()
    }
    var scale = 1.0
    if s.hasSuffix("%") {
      scale = 0.01
      s = s.dropLast()
    }
    guard !s.isEmpty, s.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
      let number = Double(s), number.isFinite
    else { return nil }
    let value = number * scale
    if let sign { return .relative(sign * value) }
    guard value <= 1 else { return nil }
    return .absolute(value)
  }

  /// The new volume, clamped to 0…1.
  public func applied(to current: Double) -> Double {
    let v: Double
    switch self {
    case .absolute(let x): v = x
    case .relative(let d): v = current + d
    }
    return min(max(v, 0), 1)
  }

  /// Which way to round to the control's steps so that a step always
  /// moves (a +1% step on a 64-step control must not round back).
  public func rounding(from current: Double) -> VolumeScale.Rounding {
    switch self {
    case .absolute: return .nearest
    case .relative(let d): return d > 0 ? .up : (d < 0 ? .down : .nearest)
    }
  }
}

/// What `earshot volume` prints and the watcher reports.
public struct VolumeState: Sendable, Equatable {
  public var volume: Double
  public var muted: Bool

  public init(volume: Double, muted: Bool) {
    self.volume = volume
    self.muted = muted
  }

  /// `{"volume":0.37,"muted":false}`: two decimals, as people read it.
  public var jsonLine: String {
    var j = JSONLine()
    j.add("volume", volume, decimals: 2)
    j.add("muted", muted)
    return j.line
  }
}
