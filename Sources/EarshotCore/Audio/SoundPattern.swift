/// The alert sounds Earshot synthesizes itself, so an alert works with no
/// sound files installed. Each pattern is one loop of segments; the player
/// repeats it until stopped.
public enum SoundPattern: Sendable, Equatable {
  /// The classic electronic telephone ring: two tones a major third apart
  /// (`frequency` and 5/4 of it) alternating every 50 ms for 1.2 s, then
  /// 0.8 s of silence.
  case ring(frequency: Double)
  /// A rising sweep from `frequency` to twice it over 0.5 s, then 0.25 s
  /// of silence.
  case chirp(frequency: Double)
  /// A steady tone at `frequency`: 0.3 s on, 0.2 s off.
  case beep(frequency: Double)

  public static let names = ["ring", "chirp", "beep"]

  /// The pattern called `name` at its default frequency, or at `frequency`.
  public static func named(_ name: String, frequency: Double? = nil) -> SoundPattern? {
    switch name {
    case "ring": return .ring(frequency: frequency ?? 800)
    case "chirp": return .chirp(frequency: frequency ?? 1000)
    case "beep": return .beep(frequency: frequency ?? 1000)
    default: return nil
    }
  }

  public var name: String {
    switch self {
    case .ring: return "ring"
    case .chirp: return "chirp"
    case .beep: return "beep"
    }
  }

  public var frequency: Double {
    switch self {
    case .ring(let f), .chirp(let f), .beep(let f): return f
    }
  }

  /// One line for `earshot sounds`.
  public var summary: String {
    switch self {
    case .ring(let f):
      return "two-tone ring, \(Int(f)) and \(Int(f * 1.25)) Hz alternating; 1.2 s on, 0.8 s off"
    case .chirp(let f):
      return "rising chirp, \(Int(f)) to \(Int(f * 2)) Hz in 0.5 s; 0.25 s pause"
    case .beep(let f):
      return "steady beep at \(Int(f)) Hz; 0.3 s on, 0.2 s off"
    }
  }

  /// Frequencies must sit well inside what 16-bit audio at 8 kHz or more
  /// can carry; everything above is aliasing, below is inaudible on laptops.
  public static let frequencyRange: ClosedRange<Double> = 50...8000

  /// The loop as segments. Built once per alert, never per block.
  public var segments: [SoundSegment] {
    switch self {
    case .ring(let f):
      var s: [SoundSegment] = []
      for i in 0..<24 { s.append(SoundSegment(seconds: 0.05, .tone(i % 2 == 0 ? f : f * 1.25))) }
      s.append(SoundSegment(seconds: 0.8, .silence))
      return s
    case .chirp(let f):
      return [
        SoundSegment(seconds: 0.5, .sweep(from: f, to: f * 2)),
        SoundSegment(seconds: 0.25, .silence),
      ]
    case .beep(let f):
      return [SoundSegment(seconds: 0.3, .tone(f)), SoundSegment(seconds: 0.2, .silence)]
    }
  }
}

/// A stretch of one pattern's loop.
public struct SoundSegment: Sendable, Equatable {
  public enum Kind: Sendable, Equatable {
    case silence
    case tone(Double)
    /// Frequency rising (or falling) linearly in time.
    case sweep(from: Double, to: Double)
  }
  public let seconds: Double
  public let kind: Kind

  public init(seconds: Double, _ kind: Kind) {
    self.seconds = seconds
    self.kind = kind
  }

  var isSilent: Bool { kind == .silence }
}
