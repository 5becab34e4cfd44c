import CJPEG

#if canImport(Glibc)
  import Glibc
#endif

/// Camera frames to JPEG with libjpeg-turbo.
///
/// Why libjpeg-turbo and not libv4l2's conversion: libv4lconvert turns
/// camera formats into RGB or YUV 4:2:0 (and decodes MJPEG), but it does
/// not write JPEG files, so a JPEG encoder is needed either way. With
/// libjpeg-turbo alone, YUYV goes into the encoder as YCbCr directly (no
/// RGB round trip, no second library), and an MJPEG frame is kept as the
/// camera made it (re-encoded only when it lacks Huffman tables).
public enum JPEGEncoder {
  public struct Failure: Error, CustomStringConvertible {
    public let description: String
  }

  /// JPEG quality (libjpeg's 1...100 scale).
  public static let quality: Int32 = 90

  public static func encode(_ frame: V4L2Camera.Frame) throws -> [UInt8] {
    switch frame.format {
    case .yuyv:
      return try encodeYUYV(
        frame.bytes, width: frame.width, height: frame.height, stride: frame.stride)
    case .mjpeg:
      // Decoding the whole frame proves it is complete (webcams can hand
      // over truncated frames); frames without DHT get standard tables.
      let hasTables = JPEGEncoder.hasHuffmanTables(frame.bytes)
      let result = try decode(frame.bytes, reencode: !hasTables)
      return result.reencoded ?? frame.bytes
    }
  }

  public static func encodeYUYV(_ bytes: [UInt8], width: Int, height: Int, stride: Int) throws
    -> [UInt8]
  {
    guard width > 0, height > 0, width % 2 == 0, stride >= width * 2, bytes.count >= stride * height
    else {
      throw Failure(
        description:
          "frame of \(bytes.count) bytes does not hold \(width)×\(height) YUYV (stride \(stride))")
    }
    var out: UnsafeMutablePointer<UInt8>? = nil
    var size: UInt = 0
    var message = [CChar](repeating: 0, count: 200)
    let r = bytes.withUnsafeBufferPointer { b in
      earshot_jpeg_encode_yuyv(
        b.baseAddress, Int32(width), Int32(height), Int32(stride), quality, &out, &size, &message,
        Int32(message.count))
    }
    guard r == 0, let out else {
      throw Failure(description: "JPEG encoding failed: \(text(message))")
    }
    defer { free(out) }
    return [UInt8](UnsafeBufferPointer(start: out, count: Int(size)))
  }

  /// Decodes every scanline; returns the size, and a standard re-encoding
  /// when asked.
  public static func decode(_ jpeg: [UInt8], reencode: Bool = false) throws -> (
    width: Int, height: Int, reencoded: [UInt8]?
  ) {
    var w: Int32 = 0
    var h: Int32 = 0
    var out: UnsafeMutablePointer<UInt8>? = nil
    var size: UInt = 0
    var message = [CChar](repeating: 0, count: 200)
    let r = jpeg.withUnsafeBufferPointer { b in
      if reencode {
        return earshot_jpeg_decode(
          b.baseAddress, UInt(b.count), quality, &w, &h, &out, &size, &message,
          Int32(message.count))
      }
      return earshot_jpeg_decode(
        b.baseAddress, UInt(b.count), quality, &w, &h, nil, nil, &message, Int32(message.count))
    }
    guard r == 0 else {
      throw Failure(description: "not a valid JPEG: \(text(message))")
    }
    var again: [UInt8]? = nil
    if let out {
      again = [UInt8](UnsafeBufferPointer(start: out, count: Int(size)))
      free(out)
    }
    return (Int(w), Int(h), again)
  }

  private static func text(_ c: [CChar]) -> String {
    String(decoding: c.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// True when the JPEG carries a DHT (Define Huffman Table) segment
  /// before its image data.
  public static func hasHuffmanTables(_ jpeg: [UInt8]) -> Bool {
    var i = 2  // after SOI
    while i + 4 <= jpeg.count, jpeg[i] == 0xFF {
      let marker = jpeg[i + 1]
      if marker == 0xC4 { return true }
      if marker == 0xDA { return false }  // start of scan: tables come before it
      let length = Int(jpeg[i + 2]) << 8 | Int(jpeg[i + 3])
      i += 2 + length
    }
    return false
  }
}
