import CLinux

#if canImport(Glibc)
  import Glibc
#endif

/// Small helpers for AF_UNIX stream sockets.
enum UnixSocket {
  /// Fills a sockaddr_un; throws when the path does not fit (108 bytes).
  static func address(_ path: String) throws -> (sockaddr_un, socklen_t) {
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    let capacity = MemoryLayout.size(ofValue: addr.sun_path)
    guard !bytes.isEmpty, bytes.count < capacity else {
      throw SystemError(
        errno: ENAMETOOLONG,
        "socket path '\(path)' is longer than \(capacity - 1) bytes; choose a shorter --socket path"
      )
    }
    withUnsafeMutableBytes(of: &addr.sun_path) { raw in
      for (i, b) in bytes.enumerated() { raw[i] = b }
    }
    let len = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
    return (addr, len)
  }

  static func bind(_ fd: FileDescriptor, _ path: String) throws {
    var (addr, len) = try address(path)
    let r = withUnsafePointer(to: &addr) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd.rawValue, $0, len) }
    }
    guard r == 0 else { throw SystemError(errno: errno, "cannot bind the control socket \(path)") }
  }

  static func connect(_ fd: FileDescriptor, _ path: String) -> Int32 {
    guard case (var addr, let len)? = try? address(path) else { return ENAMETOOLONG }
    let r = withUnsafePointer(to: &addr) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd.rawValue, $0, len) }
    }
    return r == 0 ? 0 : errno
  }

  /// The peer's process, user and group (SO_PEERCRED), as the kernel saw
  /// them at connect time.
  struct PeerCredentials: Equatable {
    var pid: Int32
    var uid: UInt32
    var gid: UInt32
  }

  static func peerCredentials(_ fd: FileDescriptor) -> PeerCredentials? {
    // struct ucred { pid_t pid; uid_t uid; gid_t gid; }
    var raw: (Int32, UInt32, UInt32) = (0, 0, 0)
    var len = socklen_t(MemoryLayout.size(ofValue: raw))
    guard getsockopt(fd.rawValue, SOL_SOCKET, SO_PEERCRED, &raw, &len) == 0 else { return nil }
    return PeerCredentials(pid: raw.0, uid: raw.1, gid: raw.2)
  }

  /// Whether `uid` is a member of `gid` (primary or supplementary group).
  static func user(_ uid: UInt32, isIn gid: UInt32) -> Bool {
    var pw = passwd()
    var result: UnsafeMutablePointer<passwd>? = nil
    var buffer = [CChar](repeating: 0, count: 16384)
    guard getpwuid_r(uid, &pw, &buffer, buffer.count, &result) == 0, result != nil else {
      return false
    }
    if pw.pw_gid == gid { return true }
    var groups = [gid_t](repeating: 0, count: 256)
    var count = Int32(groups.count)
    guard getgrouplist(pw.pw_name, pw.pw_gid, &groups, &count) >= 0 else { return false }
    return groups.prefix(Int(count)).contains(gid)
  }
}
