import CLinux
import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// The control socket: newline-delimited JSON requests over a Unix
/// socket, served by a `StreamServer`. This file is the protocol: who may
/// connect, lines in (each bounded), lines out. A slow or dead client costs
/// memory up to its bound and then its connection, never the loop's time.
public final class ControlServer {
  public typealias ClientID = Int

  public struct Options: Sendable {
    public var path: String
    /// Members of this group may connect, besides root and the agent's user.
    public var allowedGroup: UInt32?
    public var maxClients = 1024
    public var maxLineBytes = ControlProtocol.maxLineBytes
    /// Above this many queued output bytes the client's input is paused.
    public var outputHighWater = 256 * 1024
    /// Above this the client is too slow (not reading events): disconnected.
    public var outputLimit = 4 * 1024 * 1024

    public init(path: String, allowedGroup: UInt32? = nil) {
      self.path = path
      self.allowedGroup = allowedGroup
    }
  }

  public enum Input {
    case line([UInt8])
    case oversized
  }

  /// A line (or an oversized one) arrived from a client.
  public var onInput: ((ClientID, Input) -> Void)?
  public var onDisconnect: ((ClientID) -> Void)?
  public var onLog: ((String) -> Void)?

  public let options: Options
  private var stream: StreamServer<ControlServer>!
  private let ownUID = getuid()
  /// Clients refused at the cap while it lasts (said once per episode).
  private var atCap = false
  private var refusedAtCap = 0
  /// Refused users, said bounded: a first line per uid, then a summary a minute.
  private var badInput: LimitedLog!
  static let refusedUser = LogLimiter.Kind("refused") { n, uid, window in
    "control socket: refused \(LogLimiter.Kind.count(n, "more connection")) from \(uid) \(window)"
  }

  final class Connection {
    let peer: UnixSocket.PeerCredentials
    var framer: LineFramer

    init(peer: UnixSocket.PeerCredentials, maxLineBytes: Int) {
      self.peer = peer
      framer = LineFramer(limit: maxLineBytes)
    }
  }

  public init(loop: EventLoop, options: Options) throws {
    self.options = options
    try ControlServer.prepare(options.path)
    let raw = socket(
      AF_UNIX,
      earshot_sock_stream | earshot_sock_nonblock | earshot_sock_cloexec, 0)
    guard raw >= 0 else { throw SystemError(errno: errno, "cannot create the control socket") }
    let fd = FileDescriptor(rawValue: raw)
    do {
      // Bind with a umask so the socket is never, even briefly, wider than 0660.
      let old = umask(0o117)
      defer { umask(old) }
      try UnixSocket.bind(fd, options.path)
      guard chmod(options.path, 0o660) == 0 else {
        throw SystemError(errno: errno, "cannot set mode 0660 on \(options.path)")
      }
      if let group = options.allowedGroup, chown(options.path, UInt32.max, group) != 0 {
        throw SystemError(errno: errno, "cannot give \(options.path) to group \(group)")
      }
      guard listen(fd.rawValue, 512) == 0 else {
        throw SystemError(errno: errno, "cannot listen on \(options.path)")
      }
    } catch {
      fd.close()
      throw error
    }
    var limits = StreamServer<ControlServer>.Limits(maxClients: options.maxClients)
    limits.maxQueuedBytes = options.outputLimit
    limits.pauseInputAbove = options.outputHighWater
    // A client may send its requests and close its end: it is answered.
    limits.answerAfterEndOfInput = true
    limits.acceptPause = 100_000_000
    badInput = LimitedLog(loop: loop) { [unowned self] in self.onLog?($0) }
    stream = try StreamServer(loop: loop, listener: fd, limits: limits, service: self)
  }

  /// Makes room for the socket: creates its directory, removes a stale
  /// socket left by a crash, refuses to replace a live one or a non-socket.
  private static func prepare(_ path: String) throws {
    if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
      let dir = String(path[..<slash])
      var st = stat()
      if stat(dir, &st) != 0 {
        guard mkdir(dir, 0o755) == 0 || errno == EEXIST else {
          throw SystemError(errno: errno, "cannot create \(dir) for the control socket")
        }
      }
    }
    var st = stat()
    guard lstat(path, &st) == 0 else { return }
    guard (st.st_mode & S_IFMT) == S_IFSOCK else {
      throw SystemError(
        errno: EEXIST, "\(path) exists and is not a socket; remove it or choose another --socket")
    }
    let probe = FileDescriptor(
      rawValue: socket(AF_UNIX, earshot_sock_stream | earshot_sock_cloexec, 0))
    defer { probe.close() }
    if UnixSocket.connect(probe, path) == 0 {
      throw SystemError(
        errno: EADDRINUSE,
        "another earshot is already serving \(path); stop it or choose another --socket")
    }
    unlink(path)
  }

  public var clientCount: Int { stream.clientCount }

  /// Stops listening, disconnects every client and removes the socket file.
  public func shutdown() {
    stream.shutdown()
    unlink(options.path)
    badInput.finish()
  }

  /// Queues one line (a newline is added) for a client. Returns false when
  /// the client is gone or was dropped for not reading.
  @discardableResult
  public func send(_ id: ClientID, _ line: String) -> Bool {
    var bytes = Array(line.utf8)
    bytes.append(0x0A)
    return stream.send(bytes, to: id)
  }

  public func isConnected(_ id: ClientID) -> Bool { stream.isConnected(id) }

  /// Closes a client's connection now.
  public func disconnect(_ id: ClientID) { stream.close(id, reason: nil) }

  private func allowed(_ peer: UnixSocket.PeerCredentials) -> Bool {
    if peer.uid == 0 || peer.uid == ownUID { return true }
    guard let group = options.allowedGroup else { return false }
    return peer.gid == group || UnixSocket.user(peer.uid, isIn: group)
  }

  private static func refusal(_ error: ControlError) -> [UInt8] {
    Array((ControlProtocol.failure(id: .null, error) + "\n").utf8)
  }
}

extension ControlServer: StreamService {
  func admit(_ socket: FileDescriptor, from _: SocketAddress, as _: ClientID, full: Bool)
    -> StreamAdmission<Connection>
  {
    guard let peer = UnixSocket.peerCredentials(socket) else { return .refuse(farewell: []) }
    if !allowed(peer) {
      badInput.note(Self.refusedUser, from: "uid \(peer.uid)") {
        "control socket: refused pid \(peer.pid) uid \(peer.uid): not root, not uid \(ownUID), not in the allowed group"
      }
      return .refuse(
        farewell: Self.refusal(
          ControlError(
            .permissionDenied,
            "uid \(peer.uid) may not use this agent's socket; run as uid \(ownUID) or root, or join the configured group"
          )))
    }
    if full {
      refusedAtCap += 1
      if !atCap {
        atCap = true
        onLog?(
          "control socket: \(stream.clientCount) clients connected, the cap ([control] max_clients = \(options.maxClients)); refusing new clients with 'too_many_clients' until some leave"
        )
      }
      return .refuse(
        farewell: Self.refusal(
          ControlError(
            .tooManyClients,
            "the agent serves at most \(options.maxClients) clients; try again later")))
    }
    return .accept(Connection(peer: peer, maxLineBytes: options.maxLineBytes))
  }

  func received(_ bytes: UnsafeRawBufferPointer, from client: ClientID, _ connection: Connection) {
    for item in connection.framer.push(bytes) {
      switch item {
      case .line(let line):
        if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }  // blank lines are ignored
        onInput?(client, .line(line))
      case .oversized: onInput?(client, .oversized)
      }
      guard stream.isConnected(client) else { return }
    }
  }

  func nextOutput(for _: Connection) -> [UInt8]? { nil }

  func dropped(_ client: ClientID, _ connection: Connection, _ reason: StreamDropReason) {
    if reason == .outputOverflow {
      onLog?(
        "control socket: client \(client) (pid \(connection.peer.pid)) does not read its messages; disconnected"
      )
    }
    if reason != .shutdown { onDisconnect?(client) }
    guard atCap, stream.clientCount < options.maxClients else { return }
    atCap = false
    onLog?(
      "control socket: below the cap again; \(refusedAtCap) client(s) were refused meanwhile")
    refusedAtCap = 0
  }

  func acceptPaused(errno error: Int32) {
    guard error == EMFILE || error == ENFILE else {
      onLog?(
        "control socket: cannot accept a client (\(String(cString: strerror(error)))); pausing accept for 100 ms"
      )
      return
    }
    onLog?(
      "control socket: out of file descriptors (\(stream.clientCount) clients); pausing accept for 100 ms: lower [control] max_clients or raise the agent's open-file limit (LimitNOFILE=)"
    )
  }
}
