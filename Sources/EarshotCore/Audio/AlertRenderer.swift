/// What an alert plays: a synthesized pattern or a sound file's samples,
/// looped, with an optional gain ramp. The player asks it for one period
/// at a time; its clock is the count of frames it has rendered, so the
/// ramp follows the audio, not the wall clock.
public struct AlertRenderer: Sendable {
  public enum Source: Sendable {
    case pattern(PatternSynth)
    case samples(SampleLoop)
  }

  public private(set) var source: Source
  public let channels: Int
  public var ramp: GainRamp?
  public private(set) var framesRendered = 0

  public init(source: Source, channels: Int, ramp: GainRamp? = nil) {
    precondition(channels > 0, "need at least one channel")
    self.source = source
    self.channels = channels
    self.ramp = ramp
  }

  public var sampleRate: Int {
    switch source {
    case .pattern(let p): return p.sampleRate
    case .samples(let s): return s.sampleRate
    }
  }

  /// Seconds of audio rendered so far.
  public var elapsed: Double { Double(framesRendered) / Double(sampleRate) }

  /// Fills `frames` interleaved frames at the start of `out`.
  public mutating func render(into out: UnsafeMutableBufferPointer<Int16>, frames: Int) {
    var g0 = 1.0
    var g1 = 1.0
    if let ramp {
      g0 = ramp.gain(atFrame: framesRendered, sampleRate: sampleRate)
      g1 = ramp.gain(atFrame: framesRendered + frames, sampleRate: sampleRate)
    }
    switch source {
    case .pattern(var p):
      p.fill(out, frames: frames, channels: channels, gainStart: g0, gainEnd: g1)
      source = .pattern(p)
    case .samples(var s):
      s.fill(out, frames: frames, channels: channels, gainStart: g0, gainEnd: g1)
      source = .samples(s)
    }
    framesRendered += frames
  }

  /// Back to the start: the loop and the ramp begin again.
  public mutating func rewind() {
    switch source {
    case .pattern(var p):
      p.rewind()
      source = .pattern(p)
    case .samples(var s):
      s.rewind()
      source = .samples(s)
    }
    framesRendered = 0
  }
}
