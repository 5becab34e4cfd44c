#if canImport(Glibc)
  import Glibc
#endif

/// The alert's own gain rising from quiet to full over a few seconds, then
/// holding (as Fast Pair rings). It rises linearly in decibels, which the
/// ear hears as a steady swell; a linear ramp in amplitude would seem to
/// jump at the start and stall at the end.
public struct GainRamp: Sendable, Equatable {
  /// How long the rise takes.
  public let seconds: Double
  /// Where it starts, in dB below full (negative).
  public let startDecibels: Double

  public init(seconds: Double, startDecibels: Double = -30) {
    self.seconds = max(0, seconds)
    self.startDecibels = min(0, startDecibels)
  }

  /// Linear gain 0…1 at `elapsed` seconds after the alert started.
  public func gain(at elapsed: Double) -> Double {
    guard seconds > 0, elapsed < seconds else { return 1 }
    let t = max(0, elapsed) / seconds
    return pow(10, startDecibels * (1 - t) / 20)
  }

  /// Gain at a frame count: the renderer's clock is the frames it has made.
  public func gain(atFrame frame: Int, sampleRate: Int) -> Double {
    gain(at: Double(frame) / Double(sampleRate))
  }
}
