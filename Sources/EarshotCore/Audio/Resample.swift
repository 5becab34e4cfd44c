/// Sample-rate conversion for sound files, done once when a file is
/// loaded, so the device always runs at one rate (the sound server's
/// usual 48 kHz) and no resampler sits in the low-latency path: through
/// PulseAudio a 44.1 kHz stream with a 40 ms buffer underran again and
/// again while the sink ran at 48 kHz.
public enum Resample {
  /// Linear interpolation between neighbouring frames. Plenty for alert
  /// sounds; a downward conversion of content above the new Nyquist
  /// frequency aliases, so ship files at 44.1 or 48 kHz.
  public static func linear(_ samples: [Int16], channels: Int, from: Int, to: Int) -> [Int16] {
    precondition(channels > 0 && from > 0 && to > 0, "bad resample parameters")
    let inFrames = samples.count / channels
    guard from != to, inFrames > 1 else { return samples }
    let outFrames = Int((Int64(inFrames) * Int64(to) + Int64(from) / 2) / Int64(from))
    var out = [Int16](repeating: 0, count: outFrames * channels)
    let step = Double(from) / Double(to)
    for n in 0..<outFrames {
      let position = Double(n) * step
      let i = min(Int(position), inFrames - 1)
      let j = min(i + 1, inFrames - 1)
      let t = position - Double(i)
      for c in 0..<channels {
        let a = Double(samples[i * channels + c])
        let b = Double(samples[j * channels + c])
        out[n * channels + c] = Int16((a + (b - a) * t).rounded())
      }
    }
    return out
  }
}
