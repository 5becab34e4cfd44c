#if canImport(Glibc)
  import Glibc
#endif

/// A whole file read into memory, for captures and config files.
public struct FileBytes {
  public let path: String
  public let bytes: [UInt8]

  public init(path: String) throws {
    self.path = path
    let fd = try FileDescriptor.open(path, O_RDONLY)
    defer { fd.close() }
    var st = stat()
    guard fstat(fd.rawValue, &st) == 0 else {
      throw SystemError(errno: errno, "cannot stat \(path)")
    }
    var out = [UInt8](repeating: 0, count: Int(st.st_size))
    var filled = 0
    while true {
      if filled == out.count {
        out.append(contentsOf: repeatElement(0, count: max(4096, out.count)))
      }
      let n: Int?
      do {
        n = try out.withUnsafeMutableBytes {
          try fd.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...]))
        }
      } catch let e as SystemError {
        throw SystemError(errno: e.errno, "cannot read \(path)")
      }
      guard let n, n > 0 else { break }
      filled += n
    }
    out.removeSubrange(filled...)
    bytes = out
  }
}

/// A file read front to back into the caller's buffer, one read(2) at a
/// time: captures of any size, pipes and devices, in the memory the caller
/// gives. `-` is standard input.
public final class FileStream {
  public let path: String
  private let fd: FileDescriptor
  private let owned: Bool

  public init(path: String) throws {
    self.path = path
    if path == "-" {
      fd = .standardInput
      owned = false
      return
    }
    fd = try FileDescriptor.open(path, O_RDONLY)
    owned = true
    var st = stat()
    if fstat(fd.rawValue, &st) == 0, st.st_mode & S_IFMT == S_IFDIR {
      fd.close()
      throw SystemError(errno: EISDIR, "cannot read \(path)")
    }
    // Read ahead generously; the pages are the kernel's cache, not ours.
    _ = posix_fadvise(fd.rawValue, 0, 0, POSIX_FADV_SEQUENTIAL)
  }

  /// Fills as much of `buffer` as one read gives; 0 at the end of the file.
  public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
    guard buffer.baseAddress != nil, buffer.count > 0 else { return 0 }
    do {
      // Standard input may be a nonblocking pipe: "nothing now" waits for data.
      while true {
        if let n = try fd.read(into: buffer) { return n }
        var p = pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)
        _ = poll(&p, 1, -1)
      }
    } catch let e as SystemError {
      throw SystemError(errno: e.errno, "cannot read \(path)")
    }
  }

  deinit { if owned { fd.close() } }
}

/// Appends to a file through a buffer; used for btsnoop recording.
public final class FileSink {
  public let path: String
  private let fd: FileDescriptor
  private var buffer: [UInt8] = []

  public init(creating path: String) throws {
    self.path = path
    fd = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644, for: "create")
    buffer.reserveCapacity(1 << 16)
  }

  public func write(_ bytes: [UInt8]) throws {
    buffer.append(contentsOf: bytes)
    if buffer.count >= 1 << 16 { try flush() }
  }

  public func flush() throws {
    var offset = 0
    while offset < buffer.count {
      let n: Int?
      do {
        n = try buffer.withUnsafeBytes {
          try fd.write(UnsafeRawBufferPointer(rebasing: $0[offset...]))
        }
      } catch let e as SystemError {
        throw SystemError(errno: e.errno, "cannot write \(path)")
      }
      offset += n ?? 0
    }
    buffer.removeAll(keepingCapacity: true)
  }

  deinit {
    try? flush()
    fd.close()
  }
}
