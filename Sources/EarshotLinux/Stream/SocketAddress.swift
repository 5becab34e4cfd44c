#if canImport(Glibc)
  import Glibc
#endif

/// A socket address as the kernel reads and writes it (bind, accept,
/// getsockname), typed so its family decides how it is shown.
struct SocketAddress: CustomStringConvertible {
  private var storage = sockaddr_storage()
  private var length = socklen_t(MemoryLayout<sockaddr_storage>.size)

  /// Room for any address, for the kernel to fill.
  init() {}

  /// An IPv4 or IPv6 address and port; nil when `ip` is neither.
  init?(ip: String, port: Int) {
    let ok = withUnsafeMutableBytes(of: &storage) { raw -> Bool in
      if ip.contains(":") {
        let a = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
        a.pointee.sin6_family = sa_family_t(AF_INET6)
        a.pointee.sin6_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        return inet_pton(AF_INET6, ip, &a.pointee.sin6_addr) == 1
      }
      let a = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
      a.pointee.sin_family = sa_family_t(AF_INET)
      a.pointee.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
      return inet_pton(AF_INET, ip, &a.pointee.sin_addr) == 1
    }
    guard ok else { return nil }
    length = socklen_t(
      family == AF_INET6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
  }

  var family: Int32 { Int32(storage.ss_family) }

  /// The port of an IP address (0 for other families).
  var port: Int {
    withUnsafeBytes(of: storage) { raw in
      switch family {
      case AF_INET: Int(UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port))
      case AF_INET6: Int(UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port))
      default: 0
      }
    }
  }

  /// "192.0.2.1:6053", "[2001:db8::1]:6053"; "local" for a Unix socket's peer.
  var description: String {
    switch family {
    case AF_INET: "\(host):\(port)"
    case AF_INET6: "[\(host)]:\(port)"
    default: "local"
    }
  }

  /// The address without its port: "192.0.2.1", "2001:db8::1"; "local".
  var host: String {
    var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
    return withUnsafeBytes(of: storage) { raw in
      switch family {
      case AF_INET:
        var a = raw.load(as: sockaddr_in.self).sin_addr
        inet_ntop(AF_INET, &a, &text, socklen_t(text.count))
        return Self.string(text)
      case AF_INET6:
        var a = raw.load(as: sockaddr_in6.self).sin6_addr
        inet_ntop(AF_INET6, &a, &text, socklen_t(text.count))
        return Self.string(text)
      default: return "local"
      }
    }
  }

  private static func string(_ c: [CChar]) -> String {
    String(decoding: c.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// The address for a call that reads it (bind, connect).
  func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
    withUnsafeBytes(of: storage) {
      body($0.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
    }
  }

  /// Room for a call that fills it in (accept, getsockname).
  mutating func withMutableSockaddr<R>(
    _ body: (UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> R
  ) -> R {
    length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    var size = length
    defer { length = size }
    return withUnsafeMutableBytes(of: &storage) {
      body($0.baseAddress!.assumingMemoryBound(to: sockaddr.self), &size)
    }
  }
}
