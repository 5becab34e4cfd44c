/// Decoded samples from a sound file, played in a loop. The samples are
/// read once; `fill` copies out of them and allocates nothing.
public struct SampleLoop: Sendable {
  /// Interleaved 16-bit samples.
  public let samples: [Int16]
  public let channels: Int
  public let sampleRate: Int
  public var frameCount: Int { samples.count / channels }
  private var frame = 0

  /// `nil` when there is nothing to loop (no frames, or no channels).
  public init?(samples: [Int16], channels: Int, sampleRate: Int) {
    guard channels > 0, sampleRate > 0, samples.count >= channels else { return nil }
    self.samples = Array(samples.prefix(samples.count - samples.count % channels))
    self.channels = channels
    self.sampleRate = sampleRate
  }

  public mutating func rewind() { frame = 0 }

  /// Writes `frames` frames for `outChannels` channels: a mono source goes
  /// to every output channel; otherwise output channel c takes source
  /// channel c modulo the source's count.
  public mutating func fill(
    _ out: UnsafeMutableBufferPointer<Int16>, frames: Int, channels outChannels: Int,
    gainStart: Double = 1, gainEnd: Double = 1
  ) {
    precondition(frames * outChannels <= out.count, "buffer too small for \(frames) frames")
    let unity = gainStart == 1 && gainEnd == 1
    let gainStep = frames > 1 ? (gainEnd - gainStart) / Double(frames) : 0
    samples.withUnsafeBufferPointer { src in
      var o = 0
      for n in 0..<frames {
        let base = frame * channels
        let g = gainStart + gainStep * Double(n)
        for c in 0..<outChannels {
          let s = src[base + (c % channels)]
          out[o] = unity ? s : PCM16.from(Double(s) / 32767 * g)
          o += 1
        }
        frame += 1
        if frame == frameCount { frame = 0 }
      }
    }
  }
}
