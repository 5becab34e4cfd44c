import CLinux
import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// The control socket: a Unix stream socket served from the event loop.
/// Nonblocking throughout; each client has a bounded input line and a
/// bounded output queue, so a slow or dead client costs memory up to its
/// bound and then its connection, never the loop's time.
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
  private let loop: EventLoop
  private let listenFD: FileDescriptor
  private var clients: [ClientID: Client] = [:]
  private var nextID: ClientID = 1
  private let ownUID = getuid()

  private final class Client {
    let id: ClientID
    let fd: FileDescriptor
    let peer: UnixSocket.PeerCredentials
    var framer: LineFramer
    var out: [UInt8] = []
    var outOffset = 0
    var paused = false
    var inputClosed = false
    var watchedEvents: UInt32 = 0

    init(id: ClientID, fd: FileDescriptor, peer: UnixSocket.PeerCredentials, limit: Int) {
      self.id = id
      self.fd = fd
      self.peer = peer
      framer = LineFramer(limit: limit)
    }

    var queued: Int { out.count - outOffset }
  }

  public init(loop: EventLoop, options: Options) throws {
    self.loop = loop
    self.options = options
    try ControlServer.prepare(options.path)
    let raw = socket(
      AF_UNIX,
      earshot_sock_stream | earshot_sock_nonblock | earshot_sock_cloexec, 0)
    guard raw >= 0 else { throw SystemError(errno: errno, "cannot create the control socket") }
    let fd = FileDescriptor(rawValue: raw)
    listenFD = fd
    // Bind with a umask so the socket is never, even briefly, wider than 0660.
    let old = umask(0o117)
    defer { umask(old) }
    do {
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
      try loop.watch(fd) { [unowned self] _ in self.acceptClients() }
    } catch {
      fd.close()
      throw error
    }
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

  public var clientCount: Int { clients.count }

  /// Stops listening, disconnects every client and removes the socket file.
  public func shutdown() {
    loop.unwatch(listenFD)
    listenFD.close()
    for id in Array(clients.keys) { drop(id, notify: false) }
    unlink(options.path)
  }

  // MARK: Accepting

  private func acceptClients() {
    while true {
      let raw = accept(listenFD.rawValue, nil, nil)
      if raw < 0 {
        switch errno {
        case EINTR, ECONNABORTED: continue
        case EMFILE, ENFILE:
          // Out of descriptors: stop accepting for a moment instead of
          // spinning on a listen socket that stays readable.
          onLog?(
            "control socket: out of file descriptors (\(clients.count) clients); pausing accept for 100 ms: lower [control] max_clients or raise the agent's open-file limit (LimitNOFILE=)"
          )
          loop.unwatch(listenFD)
          loop.after(nanos: 100_000_000) { [weak self] in
            guard let self else { return }
            try? self.loop.watch(self.listenFD) { [unowned self] _ in self.acceptClients() }
          }
          return
        default: return  // EAGAIN: all accepted
        }
      }
      // accept4 needs _GNU_SOURCE, which Swift's Glibc module lacks.
      let fd = FileDescriptor(rawValue: raw)
      fd.setCloseOnExec()
      fd.setNonblocking()
      admit(fd)
    }
  }

  private func admit(_ fd: FileDescriptor) {
    guard let peer = UnixSocket.peerCredentials(fd) else {
      fd.close()
      return
    }
    if !allowed(peer) {
      onLog?(
        "control socket: refused pid \(peer.pid) uid \(peer.uid): not root, not uid \(ownUID), not in the allowed group"
      )
      refuse(
        fd,
        ControlError(
          .permissionDenied,
          "uid \(peer.uid) may not use this agent's socket; run as uid \(ownUID) or root, or join the configured group"
        ))
      return
    }
    if clients.count >= options.maxClients {
      refusedAtCap += 1
      if !atCap {
        atCap = true
        onLog?(
          "control socket: \(clients.count) clients connected, the cap ([control] max_clients = \(options.maxClients)); refusing new clients with 'too_many_clients' until some leave"
        )
      }
      refuse(
        fd,
        ControlError(
          .tooManyClients, "the agent serves at most \(options.maxClients) clients; try again later"
        ))
      return
    }
    let id = nextID
    nextID += 1
    let client = Client(id: id, fd: fd, peer: peer, limit: options.maxLineBytes)
    clients[id] = client
    do {
      client.watchedEvents = EPOLLIN.rawValue | EPOLLRDHUP.rawValue
      try loop.watch(fd, events: client.watchedEvents) { [unowned self] events in
        self.ready(id, events)
      }
    } catch {
      clients[id] = nil
      fd.close()
    }
  }

  /// Clients refused at the cap while it lasts (said once per episode).
  private var atCap = false
  private var refusedAtCap = 0

  private func noteClientLeft() {
    guard atCap, clients.count < options.maxClients else { return }
    atCap = false
    onLog?(
      "control socket: below the cap again; \(refusedAtCap) client(s) were refused meanwhile")
    refusedAtCap = 0
  }

  private func allowed(_ peer: UnixSocket.PeerCredentials) -> Bool {
    if peer.uid == 0 || peer.uid == ownUID { return true }
    guard let group = options.allowedGroup else { return false }
    return peer.gid == group || UnixSocket.user(peer.uid, isIn: group)
  }

  /// One best-effort error line, then close: the client learns why.
  private func refuse(_ fd: FileDescriptor, _ error: ControlError) {
    let line = Array((ControlProtocol.failure(id: .null, error) + "\n").utf8)
    _ = line.withUnsafeBytes {
      Glibc.send(fd.rawValue, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
    }
    fd.close()
  }

  // MARK: Reading

  private func ready(_ id: ClientID, _ events: UInt32) {
    guard let client = clients[id] else { return }
    if events & EPOLLOUT.rawValue != 0 {
      flush(client)
      guard clients[id] != nil else { return }
    }
    if events & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue) != 0 && !client.paused
    {
      readInput(client)
      guard clients[id] != nil else { return }
    }
    if events & EPOLLERR.rawValue != 0 {
      drop(id)
    }
  }

  private func readInput(_ client: Client) {
    var buffer = [UInt8](repeating: 0, count: 16 * 1024)
    // A few reads per wake-up, then back to the loop: one busy client must
    // not starve the others.
    for _ in 0..<8 {
      let n = buffer.withUnsafeMutableBytes {
        recv(client.fd.rawValue, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
      }
      if n < 0 {
        if errno == EINTR { continue }
        if errno == EAGAIN || errno == EWOULDBLOCK { return }
        drop(client.id)
        return
      }
      if n == 0 {
        // The client has finished sending; answer what it sent, then close.
        client.inputClosed = true
        if client.queued == 0 { drop(client.id) } else { updateWatch(client) }
        return
      }
      let items = buffer.withUnsafeBytes {
        client.framer.push(UnsafeRawBufferPointer(rebasing: $0[0..<n]))
      }
      for item in items {
        switch item {
        case .line(let bytes):
          if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }  // blank lines are ignored
          onInput?(client.id, .line(bytes))
        case .oversized: onInput?(client.id, .oversized)
        }
        guard clients[client.id] != nil else { return }
      }
      if client.paused { return }
    }
  }

  // MARK: Writing

  /// Queues one line (a newline is added) for a client. Returns false when
  /// the client is gone or was dropped for not reading.
  @discardableResult
  public func send(_ id: ClientID, _ line: String) -> Bool {
    guard let client = clients[id] else { return false }
    if client.queued + line.utf8.count + 1 > options.outputLimit {
      onLog?(
        "control socket: client \(id) (pid \(client.peer.pid)) does not read its messages; disconnected"
      )
      drop(id)
      return false
    }
    let wasEmpty = client.queued == 0
    client.out.append(contentsOf: line.utf8)
    client.out.append(0x0A)
    if wasEmpty { flush(client) }
    if let c = clients[id], c.queued > options.outputHighWater, !c.paused {
      c.paused = true
      updateWatch(c)
    }
    return clients[id] != nil
  }

  public func isConnected(_ id: ClientID) -> Bool { clients[id] != nil }

  /// Closes a client's connection once its queued output is written.
  public func disconnect(_ id: ClientID) { drop(id) }

  private func flush(_ client: Client) {
    while client.queued > 0 {
      let n = client.out.withUnsafeBytes {
        Glibc.send(
          client.fd.rawValue, $0.baseAddress! + client.outOffset, client.queued,
          Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
      }
      if n < 0 {
        if errno == EINTR { continue }
        if errno == EAGAIN || errno == EWOULDBLOCK { break }
        drop(client.id)  // EPIPE, ECONNRESET: the client is gone
        return
      }
      client.outOffset += n
    }
    if client.queued == 0 {
      client.out.removeAll(keepingCapacity: client.out.capacity <= 64 * 1024)
      client.outOffset = 0
      if client.inputClosed {
        drop(client.id)
        return
      }
      if client.paused { client.paused = false }
    } else if client.outOffset > 64 * 1024 {
      client.out.removeFirst(client.outOffset)
      client.outOffset = 0
    }
    updateWatch(client)
  }

  private func updateWatch(_ client: Client) {
    var events: UInt32 = 0
    if !client.paused && !client.inputClosed { events |= EPOLLIN.rawValue | EPOLLRDHUP.rawValue }
    if client.queued > 0 { events |= EPOLLOUT.rawValue }
    guard events != client.watchedEvents else { return }
    client.watchedEvents = events
    try? loop.modify(client.fd, events: events)
  }

  private func drop(_ id: ClientID, notify: Bool = true) {
    guard let client = clients.removeValue(forKey: id) else { return }
    loop.unwatch(client.fd)
    client.fd.close()
    if notify { onDisconnect?(id) }
    noteClientLeft()
  }
}
