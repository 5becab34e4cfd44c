#if canImport(Glibc)
  import Glibc
#endif

/// The 0…1 volume scale `alsamixer` shows, as pure functions of a mixer
/// control's ranges (after alsa-utils' alsamixer/volume_mapping.c):
/// - no dB information: linear in the raw register value;
/// - a dB range of 24 dB or less: linear in dB, so each step looks even;
/// - a wider range: the cube root of the linear amplitude factor, which
///   tracks loudness as the ear hears it. When the control's minimum is
///   not "mute", the scale is stretched so that 0 is the minimum.
/// ALSA gives dB values in hundredths of a dB (centibels ×10); so does this.
public struct VolumeScale: Sendable, Equatable {
  /// ALSA's marker for "the minimum is mute" (SND_CTL_TLV_DB_GAIN_MUTE).
  public static let muteDecibels = -9_999_999
  /// Up to this range (in 0.01 dB) the scale is linear in dB.
  public static let linearDecibelLimit = 24 * 100

  public enum Kind: Sendable, Equatable {
    case raw
    case linearDecibels
    case cubic
  }

  public let rawRange: ClosedRange<Int>
  /// The control's dB range in 0.01 dB, when it has one.
  public let decibelRange: ClosedRange<Int>?

  /// `decibels` is nil when the control reports no dB range or a range
  /// with min ≥ max (then alsamixer falls back to raw).
  public init(raw: ClosedRange<Int>, decibels: ClosedRange<Int>?) {
    rawRange = raw
    if let d = decibels, d.lowerBound < d.upperBound {
      decibelRange = d
    } else {
      decibelRange = nil
    }
  }

  public var kind: Kind {
    guard let d = decibelRange else { return .raw }
    return d.upperBound - d.lowerBound <= Self.linearDecibelLimit ? .linearDecibels : .cubic
  }

  /// How a set volume rounds to the control's steps.
  public enum Rounding: Sendable {
    case nearest, up, down
  }

  /// The normalized volume of a raw register value (for raw scales).
  public func normalized(raw value: Int) -> Double {
    let span = rawRange.upperBound - rawRange.lowerBound
    guard span > 0 else { return 0 }
    return clamp(Double(value - rawRange.lowerBound) / Double(span))
  }

  /// The normalized volume of a gain in 0.01 dB (for dB scales).
  public func normalized(decibels value: Int) -> Double {
    guard let d = decibelRange else { return 0 }
    let (lo, hi) = (d.lowerBound, d.upperBound)
    if kind == .linearDecibels {
      return clamp(Double(value - lo) / Double(hi - lo))
    }
    var n = pow(10, Double(value - hi) / 6000)
    if lo != Self.muteDecibels {
      let floor = pow(10, Double(lo - hi) / 6000)
      n = (n - floor) / (1 - floor)
    }
    return clamp(n)
  }

  /// The raw register value for a normalized volume (raw scales).
  public func raw(for volume: Double, rounding: Rounding = .nearest) -> Int {
    let span = Double(rawRange.upperBound - rawRange.lowerBound)
    return rawRange.lowerBound + round(clamp(volume) * span, rounding)
  }

  /// The gain in 0.01 dB for a normalized volume (dB scales).
  public func decibels(for volume: Double, rounding: Rounding = .nearest) -> Int {
    guard let d = decibelRange else { return 0 }
    let (lo, hi) = (d.lowerBound, d.upperBound)
    let v = clamp(volume)
    if kind == .linearDecibels {
      return lo + round(v * Double(hi - lo), rounding)
    }
    var linear = v
    if lo != Self.muteDecibels {
      let floor = pow(10, Double(lo - hi) / 6000)
      linear = v * (1 - floor) + floor
    }
    guard linear > 0 else { return lo }
    return max(lo, min(hi, hi + round(6000 * log10(linear), rounding)))
  }

  private func clamp(_ x: Double) -> Double {
    x.isNaN ? 0 : min(max(x, 0), 1)
  }

  private func round(_ x: Double, _ r: Rounding) -> Int {
    switch r {
    case .nearest: return Int(x.rounded())
    case .up: return Int(x.rounded(.up))
    case .down: return Int(x.rounded(.down))
    }
  }
}
