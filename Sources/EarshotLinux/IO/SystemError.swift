#if canImport(Glibc)
  import Glibc
#endif

/// A failed system call: what was being done and the errno, printed the
/// way people search for it ("Permission denied (EACCES)").
public struct SystemError: Error, CustomStringConvertible, Equatable {
  public let errno: Int32
  public let context: String

  public init(errno: Int32, _ context: String) {
    self.errno = errno
    self.context = context
  }

  public var description: String { "\(context): \(String(cString: strerror(errno)))" }
}
