#if canImport(Glibc)
  import Glibc
#endif

/// Renders a `SoundPattern` as 16-bit samples, block by block, looping
/// forever. All tables are built in `init`; `fill` allocates nothing, so
/// it can run inside the audio loop for every period.
public struct PatternSynth: Sendable {
  struct Prepared: Sendable {
    let frames: Int
    let kind: SoundSegment.Kind
    /// Fade in/out only where the segment meets silence: a fade between
    /// two tones of the ring would be an audible gap, and the phase runs
    /// on across them, so there is no click to hide.
    let fadeIn: Bool
    let fadeOut: Bool
  }

  public let pattern: SoundPattern
  public let sampleRate: Int
  /// Peak level as a fraction of full scale.
  public let amplitude: Double
  let segments: [Prepared]
  let fadeFrames: Int
  public let loopFrames: Int

  private var index = 0
  private var frameInSegment = 0
  private var phase = 0.0

  public init(pattern: SoundPattern, sampleRate: Int, amplitude: Double = 0.7) {
    precondition(sampleRate > 0, "sample rate must be positive")
    self.pattern = pattern
    self.sampleRate = sampleRate
    self.amplitude = min(max(amplitude, 0), 1)
    let raw = pattern.segments
    var prepared: [Prepared] = []
    for (i, s) in raw.enumerated() {
      let before = raw[(i + raw.count - 1) % raw.count]
      let after = raw[(i + 1) % raw.count]
      prepared.append(
        Prepared(
          frames: max(1, Int((s.seconds * Double(sampleRate)).rounded())),
          kind: s.kind, fadeIn: before.isSilent, fadeOut: after.isSilent))
    }
    segments = prepared
    loopFrames = prepared.reduce(0) { $0 + $1.frames }
    fadeFrames = max(1, sampleRate / 200)  // 5 ms: no click, no audible softening
  }

  /// Back to the start of the loop.
  public mutating func rewind() {
    index = 0
    frameInSegment = 0
    phase = 0
  }

  /// Writes `frames` frames of interleaved samples (the same on every
  /// channel) at the start of `out`. The gain moves linearly from
  /// `gainStart` to `gainEnd` across the block.
  public mutating func fill(
    _ out: UnsafeMutableBufferPointer<Int16>, frames: Int, channels: Int,
    gainStart: Double = 1, gainEnd: Double = 1
  ) {
    precondition(frames * channels <= out.count, "buffer too small for \(frames) frames")
    let twoPi = 2 * Double.pi
    let rate = Double(sampleRate)
    let gainStep = frames > 1 ? (gainEnd - gainStart) / Double(frames) : 0
    var o = 0
    for n in 0..<frames {
      let seg = segments[index]
      var value = 0.0
      switch seg.kind {
      case .silence:
        phase = 0  // the next tone starts at a zero crossing
      case .tone(let f):
        value = sin(phase)
        phase += twoPi * f / rate
      case .sweep(let f0, let f1):
        value = sin(phase)
        let f = f0 + (f1 - f0) * Double(frameInSegment) / Double(seg.frames)
        phase += twoPi * f / rate
      }
      if phase >= twoPi { phase -= twoPi }
      if value != 0 {
        var envelope = 1.0
        if seg.fadeIn && frameInSegment < fadeFrames {
          envelope = Double(frameInSegment) / Double(fadeFrames)
        }
        let left = seg.frames - frameInSegment
        if seg.fadeOut && left <= fadeFrames {
          envelope = min(envelope, Double(left - 1) / Double(fadeFrames))
        }
        value *= envelope * amplitude * (gainStart + gainStep * Double(n))
      }
      let sample = PCM16.from(value)
      for _ in 0..<channels {
        out[o] = sample
        o += 1
      }
      frameInSegment += 1
      if frameInSegment == seg.frames {
        frameInSegment = 0
        index = index + 1 == segments.count ? 0 : index + 1
      }
    }
  }
}

/// Conversions between normalized samples (-1…1) and signed 16-bit.
public enum PCM16 {
  @inline(__always)
  public static func from(_ x: Double) -> Int16 {
    let scaled = (x * 32767).rounded()
    if scaled >= 32767 { return 32767 }
    if scaled <= -32768 { return -32768 }
    return Int16(scaled)
  }
}
