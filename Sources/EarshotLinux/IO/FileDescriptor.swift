import CLinux

#if canImport(Glibc)
  import Glibc
#endif

/// A file descriptor, typed so that a count, a length or an errno cannot go
/// where a descriptor is meant (and the other way round). It does not own
/// the descriptor: whoever opened it closes it, once. The system calls the
/// shell makes on descriptors are methods here, each retrying on EINTR and
/// throwing `SystemError` with what it was doing.
public struct FileDescriptor: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  public let rawValue: Int32

  public init(rawValue: Int32) { self.rawValue = rawValue }

  public static let standardInput = FileDescriptor(rawValue: STDIN_FILENO)
  public static let standardOutput = FileDescriptor(rawValue: STDOUT_FILENO)
  public static let standardError = FileDescriptor(rawValue: STDERR_FILENO)

  public var description: String { "fd \(rawValue)" }

  /// Opens `path` close-on-exec; `what` says why, for the error.
  public static func open(
    _ path: String, _ flags: Int32, mode: mode_t = 0o644, for what: String = "open"
  ) throws -> FileDescriptor {
    let fd = retrying { Glibc.open(path, flags | O_CLOEXEC, mode) }
    guard fd >= 0 else { throw SystemError(errno: errno, "cannot \(what) \(path)") }
    return FileDescriptor(rawValue: fd)
  }

  /// A pipe, both ends close-on-exec and, if asked, nonblocking.
  public static func pipe(nonblocking: Bool = false) throws -> (
    read: FileDescriptor, write: FileDescriptor
  ) {
    var fds: [Int32] = [-1, -1]
    // Glibc's module does not export pipe2: set the flags just after (no
    // child is spawned on the loop's thread in between).
    guard Glibc.pipe(&fds) == 0 else { throw SystemError(errno: errno, "pipe") }
    let ends = (FileDescriptor(rawValue: fds[0]), FileDescriptor(rawValue: fds[1]))
    for end in [ends.0, ends.1] {
      end.setCloseOnExec()
      if nonblocking { end.setNonblocking() }
    }
    return ends
  }

  public func close() { _ = Glibc.close(rawValue) }

  /// Reads what is there, up to the buffer's size: 0 at the end of the
  /// input, nil when a nonblocking descriptor has nothing now.
  public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int? {
    let n = Self.retrying { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    if n >= 0 { return n }
    if errno == EAGAIN || errno == EWOULDBLOCK { return nil }
    throw SystemError(errno: errno, "read")
  }

  /// Writes what the descriptor takes now: the count written, nil when a
  /// nonblocking descriptor takes nothing now.
  public func write(_ bytes: UnsafeRawBufferPointer) throws -> Int? {
    let n = Self.retrying { Glibc.write(rawValue, bytes.baseAddress, bytes.count) }
    if n >= 0 { return n }
    if errno == EAGAIN || errno == EWOULDBLOCK { return nil }
    throw SystemError(errno: errno, "write")
  }

  /// Sends on a socket what it takes now, without SIGPIPE when the peer
  /// has gone: the count sent, nil when the socket takes nothing now.
  public func send(_ bytes: UnsafeRawBufferPointer) throws -> Int? {
    let n = Self.retrying {
      Glibc.send(rawValue, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
    }
    if n >= 0 { return n }
    if errno == EAGAIN || errno == EWOULDBLOCK { return nil }
    throw SystemError(errno: errno, "send")
  }

  public func setNonblocking() {
    let flags = fcntl(rawValue, F_GETFL)
    if flags >= 0 { _ = fcntl(rawValue, F_SETFL, flags | O_NONBLOCK) }
  }

  public func setCloseOnExec() { _ = fcntl(rawValue, F_SETFD, FD_CLOEXEC) }

  /// Runs a system call again while a signal interrupts it.
  static func retrying<T: BinaryInteger>(_ call: () -> T) -> T {
    var r: T
    repeat { r = call() } while r < 0 && errno == EINTR
    return r
  }
}
