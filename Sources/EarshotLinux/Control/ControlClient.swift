import CLinux
import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// A blocking client of the control socket, for the CLI and the tests.
/// Messages that are not the awaited response (events, notices) are kept
/// in order for `nextEvent`.
public final class ControlClient {
  public struct Failure: Error, CustomStringConvertible {
    public let description: String
  }

  public let path: String
  private let fd: FileDescriptor
  private var framer = LineFramer(limit: 16 * 1024 * 1024)
  private var lines: [[UInt8]] = []
  private var events: [JSONValue] = []
  private var nextID: Int64 = 1
  public private(set) var closed = false

  public init(path: String) throws {
    self.path = path
    let raw = socket(AF_UNIX, earshot_sock_stream | earshot_sock_cloexec, 0)
    guard raw >= 0 else { throw SystemError(errno: errno, "socket") }
    fd = FileDescriptor(rawValue: raw)
    let err = UnixSocket.connect(fd, path)
    guard err == 0 else {
      fd.close()
      switch err {
      case ENOENT, ECONNREFUSED:
        throw Failure(
          description:
            "no earshot agent is listening on \(path): start one with 'earshot run', or pass --socket PATH"
        )
      case EACCES:
        throw Failure(
          description:
            "permission denied on \(path): use the agent's user, root, or its configured group")
      default:
        throw Failure(description: SystemError(errno: err, "cannot connect to \(path)").description)
      }
    }
  }

  deinit { fd.close() }

  /// Sends raw bytes (tests use it for malformed input).
  public func write(_ bytes: [UInt8]) throws {
    var offset = 0
    while offset < bytes.count {
      let n = bytes.withUnsafeBytes {
        Glibc.send(fd.rawValue, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
      }
      if n < 0 {
        if errno == EINTR { continue }
        throw SystemError(errno: errno, "cannot write to \(path)")
      }
      offset += n
    }
  }

  public func writeLine(_ line: String) throws { try write(Array((line + "\n").utf8)) }

  /// Sends a request and returns its id.
  @discardableResult
  public func send(_ command: ControlCommand) throws -> JSONValue {
    let id = JSONValue.int(nextID)
    nextID += 1
    try writeLine(ControlRequest(id: id, command: command).encoded)
    return id
  }

  /// Sends a request and waits for its response; events that arrive first
  /// are kept for `nextEvent`.
  public func call(_ command: ControlCommand, timeoutMillis: Int32 = -1) throws -> JSONValue {
    let id: JSONValue
    do {
      id = try send(command)
    } catch {
      // A refused connection is closed right after its one error line,
      // perhaps before the request was written: that line is the answer.
      if let m = try? readMessage(timeoutMillis: 0), m["ok"] == .bool(false) { return m }
      throw error
    }
    while true {
      guard let message = try readMessage(timeoutMillis: timeoutMillis) else {
        throw Failure(
          description: closed ? "the agent closed the connection" : "no response in time")
      }
      // An error the agent could not tie to a request (id null: e.g. a
      // refused connection) answers the one this client is waiting for.
      if message["id"] == id || (message["id"] == .null && message["ok"] == .bool(false)) {
        return message
      }
      events.append(message)
    }
  }

  /// The next message without an id (an event or a notice).
  public func nextEvent(timeoutMillis: Int32 = -1) throws -> JSONValue? {
    if !events.isEmpty { return events.removeFirst() }
    while let message = try readMessage(timeoutMillis: timeoutMillis) {
      if message["id"] == nil { return message }
    }
    return nil
  }

  /// Events already received and not yet taken.
  public func takeQueuedEvents() -> [JSONValue] {
    defer { events.removeAll() }
    return events
  }

  /// The next message, parsed; nil at end of stream or timeout.
  public func readMessage(timeoutMillis: Int32 = -1) throws -> JSONValue? {
    guard let line = try readLine(timeoutMillis: timeoutMillis) else { return nil }
    do {
      return try JSONParser.parse(line)
    } catch {
      throw Failure(description: "the agent sent a malformed line: \(error)")
    }
  }

  /// The next line as bytes; nil at end of stream or after `timeoutMillis`.
  public func readLine(timeoutMillis: Int32 = -1) throws -> [UInt8]? {
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    while lines.isEmpty {
      if closed { return nil }
      var p = pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)
      let r = poll(&p, 1, timeoutMillis)
      if r < 0 {
        if errno == EINTR { continue }
        throw SystemError(errno: errno, "poll")
      }
      if r == 0 { return nil }
      let n = buffer.withUnsafeMutableBytes { recv(fd.rawValue, $0.baseAddress, $0.count, 0) }
      if n < 0 {
        if errno == EINTR { continue }
        if errno == ECONNRESET {
          closed = true
          return nil
        }
        throw SystemError(errno: errno, "cannot read from \(path)")
      }
      if n == 0 {
        closed = true
        return nil
      }
      for item in buffer.withUnsafeBytes({
        framer.push(UnsafeRawBufferPointer(rebasing: $0[0..<n]))
      }) {
        if case .line(let l) = item { lines.append(l) }
      }
    }
    return lines.removeFirst()
  }

  /// Closes the sending side: the agent answers what was sent, then closes.
  public func finishSending() { shutdown(fd.rawValue, Int32(SHUT_WR)) }
}
