#if canImport(Glibc)
  import Glibc
#endif

/// Measurements on recorded or synthesized 16-bit mono audio: level and
/// the strongest frequency. Used by the tests that record what Earshot
/// plays, and by anything that needs to check a tone is there.
public enum SignalMeasure {
  /// Root-mean-square level as a fraction of full scale.
  public static func rms(_ samples: ArraySlice<Int16>) -> Double {
    guard !samples.isEmpty else { return 0 }
    var sum = 0.0
    for s in samples {
      let x = Double(s) / 32768
      sum += x * x
    }
    return (sum / Double(samples.count)).squareRoot()
  }

  /// Level in dB relative to full scale; silence is -inf.
  public static func dbfs(_ samples: ArraySlice<Int16>) -> Double {
    20 * log10(rms(samples))
  }

  /// The power at `frequency` by the Goertzel algorithm (one DFT bin,
  /// normalized so a full-scale sine gives about 0.25).
  public static func power(_ samples: ArraySlice<Int16>, frequency: Double, sampleRate: Int)
    -> Double
  {
    guard !samples.isEmpty else { return 0 }
    let w = 2 * Double.pi * frequency / Double(sampleRate)
    let coeff = 2 * cos(w)
    var s1 = 0.0
    var s2 = 0.0
    for s in samples {
      let s0 = Double(s) / 32768 + coeff * s1 - s2
      s2 = s1
      s1 = s0
    }
    let p = s1 * s1 + s2 * s2 - coeff * s1 * s2
    let n = Double(samples.count)
    return p / (n * n)
  }

  /// The frequency with the most power among `range` in `step` Hz steps.
  public static func dominantFrequency(
    _ samples: ArraySlice<Int16>, sampleRate: Int, range: ClosedRange<Double> = 100...6000,
    step: Double = 5
  ) -> Double {
    var best = range.lowerBound
    var bestPower = -1.0
    var f = range.lowerBound
    while f <= range.upperBound {
      let p = power(samples, frequency: f, sampleRate: sampleRate)
      if p > bestPower {
        bestPower = p
        best = f
      }
      f += step
    }
    return best
  }

  /// Index of the first sample whose magnitude reaches `threshold` (a
  /// fraction of full scale), or nil.
  public static func onset(_ samples: ArraySlice<Int16>, threshold: Double) -> Int? {
    let t = Int(threshold * 32768)
    return samples.firstIndex { abs(Int($0)) >= t }
  }
}
