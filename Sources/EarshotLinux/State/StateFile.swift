import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// A small file replaced atomically: written to a temporary file beside it,
/// fsynced, renamed over the old one, and the directory fsynced, so after a
/// crash or power loss the file is either the old or the new content.
public struct StateFile: Sendable {
  public let path: String

  public init(path: String) { self.path = path }

  /// The content, or `nil` if there is no file yet.
  public func read() throws -> String? {
    guard access(path, F_OK) == 0 else { return nil }
    return String(decoding: try FileBytes(path: path).bytes, as: UTF8.self)
  }

  public func write(_ text: String) throws {
    let dir = directory
    let tmp = path + ".tmp.\(getpid())"
    let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else {
      throw SystemError(
        errno: errno, "cannot create \(tmp) (does \(dir) exist and is it writable?)")
    }
    var ok = false
    defer {
      if !ok { unlink(tmp) }
    }
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
      let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
      if n < 0 {
        if errno == EINTR { continue }
        let e = errno
        close(fd)
        throw SystemError(errno: e, "cannot write \(tmp)")
      }
      offset += n
    }
    guard fsync(fd) == 0 else {
      let e = errno
      close(fd)
      throw SystemError(errno: e, "cannot fsync \(tmp)")
    }
    close(fd)
    guard rename(tmp, path) == 0 else {
      throw SystemError(errno: errno, "cannot rename to \(path)")
    }
    ok = true
    let dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if dfd >= 0 {
      _ = fsync(dfd)  // makes the rename durable; failure leaves a valid file
      close(dfd)
    }
  }

  var directory: String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return slash == path.startIndex ? "/" : String(path[..<slash])
  }
}

extension MonitorSnapshot {
  /// Loads a snapshot; a missing file is no snapshot.
  public static func load(from file: StateFile) throws -> MonitorSnapshot? {
    guard let text = try file.read() else { return nil }
    do { return try decode(text) } catch { throw CorruptState(path: file.path, reason: "\(error)") }
  }
}

public struct CorruptState: Error, CustomStringConvertible {
  public let path: String
  public let reason: String
  public var description: String {
    "\(path): \(reason); move it aside or delete it to start with every region unknown"
  }
}
