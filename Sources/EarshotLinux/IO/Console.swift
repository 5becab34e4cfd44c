#if canImport(Glibc)
  import Glibc
#endif

/// Buffered standard output and unbuffered standard error. Output is
/// flushed when the buffer fills, on `flush()`, and before errors, so JSON
/// lines reach a pipe in order and promptly when `lineBuffered` is set.
public enum Console {
  nonisolated(unsafe) private static var buffer: [UInt8] = {
    var b = [UInt8]()
    b.reserveCapacity(1 << 16)
    return b
  }()
  /// Flush after every line (live output to a terminal or a pipe reader).
  nonisolated(unsafe) public static var lineBuffered = false

  public static func out(_ s: String) {
    buffer.append(contentsOf: s.utf8)
    if lineBuffered || buffer.count >= 1 << 16 { flush() }
  }

  public static func line(_ s: String) {
    buffer.append(contentsOf: s.utf8)
    buffer.append(0x0A)
    if lineBuffered || buffer.count >= 1 << 16 { flush() }
  }

  public static func flush() {
    guard !buffer.isEmpty else { return }
    buffer.withUnsafeBytes { writeAll(1, $0) }
    buffer.removeAll(keepingCapacity: true)
  }

  public static func error(_ s: String) {
    flush()
    var bytes = Array(s.utf8)
    bytes.withUnsafeMutableBytes { writeAll(2, UnsafeRawBufferPointer($0)) }
  }

  private static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) {
    var offset = 0
    while offset < bytes.count {
      let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
      if n < 0 {
        if errno == EINTR { continue }
        return  // a closed pipe: nothing sensible left to do with output
      }
      offset += n
    }
  }
}
