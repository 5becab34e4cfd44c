/// How a connection's frames are wrapped: ESPHome serves one or the other
/// on a port, never both.
public enum ESPHomeFraming: Sendable, Equatable {
  /// `0x00, varint length, varint type, body`.
  case plaintext
  /// `0x01, length (2 bytes, big-endian), Noise message`.
  case noise
}

/// One whole frame from a client.
public enum ESPHomeFrame: Equatable, Sendable {
  case plaintext(type: UInt32, body: [UInt8])
  case noise([UInt8])
}

public enum ESPHomeFrameError: Error, Equatable, CustomStringConvertible {
  /// The first byte of a frame is not this framing's indicator.
  case badIndicator(UInt8)
  case oversized(Int)
  case badVarint

  public var description: String {
    switch self {
    case .badIndicator(let b):
      b == 0x01
        ? "the client speaks Noise (an encryption key is set in Home Assistant) and this proxy is plaintext"
        : b == 0x00
          ? "the client speaks plaintext and this proxy requires encryption: give Home Assistant the key"
          : "bad frame indicator 0x\(String(b, radix: 16))"
    case .oversized(let n): "frame of \(n) bytes exceeds the limit"
    case .badVarint: "bad varint in a plaintext frame header"
    }
  }
}

/// Cuts a client's byte stream into frames. A frame is delivered only once
/// all its bytes are in; a bad header is an error at once (the connection
/// is then closed: nothing after it can be trusted). Memory is bounded by
/// `maxFrame` plus one read.
public struct ESPHomeFrameDecoder: Sendable {
  public let framing: ESPHomeFraming
  public let maxFrame: Int
  private var buffer: [UInt8] = []

  public static let defaultMaxFrame = 32 * 1024

  public init(framing: ESPHomeFraming, maxFrame: Int = defaultMaxFrame) {
    self.framing = framing
    self.maxFrame = maxFrame
  }

  public mutating func push(_ bytes: some Collection<UInt8>) throws(ESPHomeFrameError)
    -> [ESPHomeFrame]
  {
    buffer.append(contentsOf: bytes)
    var frames: [ESPHomeFrame] = []
    var consumed = 0
    defer { buffer.removeFirst(consumed) }
    while consumed < buffer.count {
      guard let (frame, length) = try next(from: consumed) else { break }
      frames.append(frame)
      consumed += length
    }
    return frames
  }

  /// The frame starting at `start` and its length, or `nil` if it is not all in yet.
  private func next(from start: Int) throws(ESPHomeFrameError) -> (ESPHomeFrame, Int)? {
    let indicator = buffer[start]
    switch framing {
    case .noise:
      guard indicator == 0x01 else { throw .badIndicator(indicator) }
      guard buffer.count - start >= 3 else { return nil }
      let n = Int(buffer[start + 1]) << 8 | Int(buffer[start + 2])
      guard n <= maxFrame else { throw .oversized(n) }
      guard buffer.count - start >= 3 + n else { return nil }
      return (.noise(Array(buffer[start + 3..<start + 3 + n])), 3 + n)
    case .plaintext:
      guard indicator == 0x00 else { throw .badIndicator(indicator) }
      let parsed: (UInt64, UInt64, Int)?? = buffer.withUnsafeBytes { raw in
        var i = start + 1
        guard let n = ProtobufWire.readVarint(raw, at: &i) else {
          return raw.count - (start + 1) >= 10 ? .some(nil) : nil
        }
        guard let t = ProtobufWire.readVarint(raw, at: &i) else {
          return raw.count - i >= 10 ? .some(nil) : nil
        }
        return .some((n, t, i))
      }
      guard let header = parsed else { return nil }
      guard let (n, type, bodyStart) = header, type <= UInt64(UInt32.max) else {
        throw .badVarint
      }
      guard n <= UInt64(maxFrame) else { throw .oversized(Int(clamping: n)) }
      guard buffer.count >= bodyStart + Int(n) else { return nil }
      return (
        .plaintext(type: UInt32(type), body: Array(buffer[bodyStart..<bodyStart + Int(n)])),
        bodyStart + Int(n) - start
      )
    }
  }
}
