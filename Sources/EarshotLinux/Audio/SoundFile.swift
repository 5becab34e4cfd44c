import CSndFile
import EarshotCore

/// Reads a sound file (WAV, FLAC, Ogg, AIFF: what libsndfile reads) into
/// 16-bit samples, once, before an alert starts.
public enum SoundFile {
  /// Longer files are refused: an alert loops, and a song would sit in
  /// memory for nothing.
  public static let maxSeconds = 120

  public struct Failure: Error, CustomStringConvertible {
    public let path: String
    public let reason: String
    public var description: String { "cannot play sound file \(path): \(reason)" }
  }

  /// Reads the file; when `sampleRate` is given and differs from the
  /// file's, converts it (see `Resample`).
  public static func load(_ path: String, sampleRate: Int? = nil) throws -> SampleLoop {
    var info = SF_INFO()
    guard let file = sf_open(path, Int32(SFM_READ), &info) else {
      throw Failure(path: path, reason: String(cString: sf_strerror(nil)))
    }
    defer { sf_close(file) }
    let channels = Int(info.channels)
    let rate = Int(info.samplerate)
    guard channels == 1 || channels == 2 else {
      throw Failure(path: path, reason: "it has \(channels) channels; use a mono or stereo file")
    }
    guard rate >= 8000, rate <= 192_000 else {
      throw Failure(path: path, reason: "its sample rate \(rate) Hz is outside 8000…192000")
    }
    guard info.frames > 0 else { throw Failure(path: path, reason: "it holds no audio") }
    guard info.frames <= Int64(maxSeconds * rate) else {
      throw Failure(path: path, reason: "it is longer than \(maxSeconds) s; trim it")
    }
    var samples = [Int16](repeating: 0, count: Int(info.frames) * channels)
    let got = samples.withUnsafeMutableBufferPointer {
      sf_readf_short(file, $0.baseAddress, info.frames)
    }
    guard got > 0 else {
      throw Failure(
        path: path, reason: "no audio could be decoded: \(String(cString: sf_strerror(file)))")
    }
    samples.removeSubrange((Int(got) * channels)...)
    var outRate = rate
    if let target = sampleRate, target != rate {
      samples = Resample.linear(samples, channels: channels, from: rate, to: target)
      outRate = target
    }
    guard let loop = SampleLoop(samples: samples, channels: channels, sampleRate: outRate) else {
      throw Failure(path: path, reason: "it holds no audio")
    }
    return loop
  }
}
