import CLinux
import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// The ESPHome native API on a TCP port, served from the event loop: one
/// `ESPHomeSession` per client. Nonblocking throughout. Each client holds
/// at most one session output being written plus its session's bounded
/// queue, so a client that stops reading costs a bounded amount of memory
/// and its oldest advertisement batches, never the loop's time or another
/// client's frames.
public final class ESPHomeServer {
  public typealias ClientID = Int

  public struct Options: Sendable {
    /// An IPv4 or IPv6 address to listen on.
    public var bind: String
    /// 0 picks a free port (tests); `port` then says which.
    public var port: Int
    public var maxClients: Int
    /// The 32-byte pre-shared key; `nil` serves plaintext.
    public var psk: [UInt8]?
    public var info: ESPHomeDeviceInfo
    public var serverInfo: String
    public var limits = ESPHomeSession.Limits()

    public init(
      bind: String, port: Int, maxClients: Int, psk: [UInt8]?, info: ESPHomeDeviceInfo,
      serverInfo: String
    ) {
      self.bind = bind
      self.port = port
      self.maxClients = maxClients
      self.psk = psk
      self.info = info
      self.serverInfo = serverInfo
    }
  }

  private final class Client {
    let id: ClientID
    let fd: FileDescriptor
    let peer: String
    var session: ESPHomeSession
    var out: [UInt8] = []
    var outOffset = 0
    var watchedEvents: UInt32 = 0
    var askedForScannerMode = false

    init(id: ClientID, fd: FileDescriptor, peer: String, session: ESPHomeSession) {
      self.id = id
      self.fd = fd
      self.peer = peer
      self.session = session
    }
  }

  /// Bytes the kernel buffers per client (it doubles the number for its bookkeeping).
  public static let socketSendBuffer = 32 * 1024

  public let options: Options
  /// The port listened on (the chosen one when `options.port` is 0).
  public private(set) var port: Int = 0
  public var onLog: ((String) -> Void)?
  /// A client asked for another scanner mode (logged; the agent's scanner is shared).
  public var onScannerMode: ((Bool) -> Void)?
  private let loop: EventLoop
  private let listenFD: FileDescriptor
  private let crypto: LibcryptoNoise?
  private var clients: [ClientID: Client] = [:]
  private var nextID: ClientID = 1
  /// Sweeps clients past their Hello or idle deadline while any are connected.
  private var sweep: EventLoop.TimerID?
  /// Out of descriptors: accepting waits for this timer (the listening
  /// socket is level-triggered and would wake the loop at once, for ever).
  private var acceptPause: EventLoop.TimerID?
  /// Batches handed to subscribers, and those dropped for slow ones (counted per client).
  public private(set) var batchesOffered = 0
  public private(set) var batchesDropped = 0

  public init(loop: EventLoop, options: Options) throws {
    self.loop = loop
    self.options = options
    crypto = options.psk == nil ? nil : LibcryptoNoise()
    let v6 = options.bind.contains(":")
    let raw = socket(
      v6 ? AF_INET6 : AF_INET, earshot_sock_stream | earshot_sock_nonblock | earshot_sock_cloexec,
      0)
    guard raw >= 0 else { throw SystemError(errno: errno, "cannot create the ESPHome API socket") }
    let fd = FileDescriptor(rawValue: raw)
    listenFD = fd
    do {
      var one: Int32 = 1
      setsockopt(raw, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
      let where_ = "\(options.bind) port \(options.port)"
      var bound: Int32
      if v6 {
        var a = sockaddr_in6()
        a.sin6_family = sa_family_t(AF_INET6)
        a.sin6_port = in_port_t(UInt16(options.port).bigEndian)
        guard inet_pton(AF_INET6, options.bind, &a.sin6_addr) == 1 else {
          throw SystemError(errno: EINVAL, "[esphome] bind = \(options.bind) is not an IP address")
        }
        bound = withUnsafePointer(to: &a) {
          $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            Glibc.bind(raw, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
          }
        }
      } else {
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = in_port_t(UInt16(options.port).bigEndian)
        guard inet_pton(AF_INET, options.bind, &a.sin_addr) == 1 else {
          throw SystemError(errno: EINVAL, "[esphome] bind = \(options.bind) is not an IP address")
        }
        bound = withUnsafePointer(to: &a) {
          $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            Glibc.bind(raw, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
          }
        }
      }
      guard bound == 0 else {
        throw SystemError(
          errno: errno,
          "cannot listen on \(where_) for the ESPHome API (another proxy or ESPHome tool on that port? set [esphome] port)"
        )
      }
      guard listen(raw, 16) == 0 else {
        throw SystemError(errno: errno, "cannot listen on \(where_)")
      }
      var a = sockaddr_in6()
      var n = socklen_t(MemoryLayout<sockaddr_in6>.size)
      _ = withUnsafeMutablePointer(to: &a) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(raw, $0, &n) }
      }
      // sin_port and sin6_port sit at the same offset.
      port = Int(UInt16(bigEndian: a.sin6_port))
      try loop.watch(fd) { [unowned self] _ in self.acceptClients() }
    } catch {
      fd.close()
      throw error
    }
  }

  public var clientCount: Int { clients.count }
  public var subscriberCount: Int {
    clients.values.reduce(0) { $0 + ($1.session.subscribed ? 1 : 0) }
  }

  /// Stops listening and closes every client.
  public func shutdown() {
    if let sweep { loop.cancel(sweep) }
    if let acceptPause { loop.cancel(acceptPause) }
    sweep = nil
    acceptPause = nil
    loop.unwatch(listenFD)
    listenFD.close()
    // Each client is asked to disconnect (what the socket takes now), then closed.
    for client in Array(clients.values) {
      client.session.goodbye()
      pump(client)
      drop(client.id, reason: nil)
    }
  }

  // MARK: Accepting

  private func acceptClients() {
    while true {
      var a = sockaddr_in6()
      var n = socklen_t(MemoryLayout<sockaddr_in6>.size)
      let raw = withUnsafeMutablePointer(to: &a) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listenFD.rawValue, $0, &n) }
      }
      if raw < 0 {
        if errno == EINTR || errno == ECONNABORTED { continue }
        if errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM {
          pauseAccepting(errno)
        }
        return  // EAGAIN: all accepted
      }
      let fd = FileDescriptor(rawValue: raw)
      fd.setCloseOnExec()
      fd.setNonblocking()
      var nodelay: Int32 = 1
      setsockopt(
        raw, Int32(IPPROTO_TCP), TCP_NODELAY, &nodelay, socklen_t(MemoryLayout<Int32>.size))
      // A fixed send buffer (no autotuning to megabytes): what a client
      // that stops reading holds in the kernel stays small, and the
      // session's queue (drop oldest) takes over.
      var sendBuffer = Int32(Self.socketSendBuffer)
      setsockopt(raw, SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<Int32>.size))
      let peer = Self.describe(a)
      guard clients.count < options.maxClients else {
        onLog?(
          "esphome: refused \(peer): \(clients.count) clients connected, the cap ([esphome] max_clients = \(options.maxClients))"
        )
        fd.close()
        continue
      }
      admit(fd, peer: peer)
    }
  }

  /// Stops watching the listening socket for a second (no descriptor or
  /// memory for a new client now), then accepts again.
  private func pauseAccepting(_ error: Int32) {
    guard acceptPause == nil else { return }
    loop.unwatch(listenFD)
    onLog?(
      "esphome: cannot accept a client (\(String(cString: strerror(error)))); trying again in 1 s")
    acceptPause = loop.after(seconds: 1) { [weak self] in
      guard let self else { return }
      self.acceptPause = nil
      try? self.loop.watch(self.listenFD) { [unowned self] _ in self.acceptClients() }
      self.acceptClients()
    }
  }

  /// Every 2 s while clients are connected: time for each session (those
  /// past a deadline go; a silent one is pinged).
  private func scheduleSweep() {
    guard sweep == nil, !clients.isEmpty else { return }
    sweep = loop.after(seconds: 2) { [weak self] in
      guard let self else { return }
      self.sweep = nil
      let now = Clock.now()
      for client in Array(self.clients.values) {
        if let why = client.session.tick(at: now) {
          self.drop(client.id, reason: why)
        } else {
          self.pump(client)  // a PingRequest the session may have queued
        }
      }
      self.scheduleSweep()
    }
  }

  private static func describe(_ a: sockaddr_in6) -> String {
    var copy = a
    var text = [CChar](repeating: 0, count: 64)
    if Int32(a.sin6_family) == AF_INET {
      return withUnsafePointer(to: &copy) {
        $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { p in
          var addr = p.pointee.sin_addr
          inet_ntop(AF_INET, &addr, &text, 64)
          return Self.text(text) + ":\(UInt16(bigEndian: p.pointee.sin_port))"
        }
      }
    }
    inet_ntop(AF_INET6, &copy.sin6_addr, &text, 64)
    return "[\(Self.text(text))]:\(UInt16(bigEndian: a.sin6_port))"
  }

  private static func text(_ c: [CChar]) -> String {
    String(decoding: c.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  private func admit(_ fd: FileDescriptor, peer: String) {
    let id = nextID
    nextID += 1
    let session = ESPHomeSession(
      info: options.info, serverInfo: options.serverInfo, psk: options.psk, crypto: crypto,
      limits: options.limits, connectedAt: Clock.now())
    let client = Client(id: id, fd: fd, peer: peer, session: session)
    clients[id] = client
    client.watchedEvents = EPOLLIN.rawValue | EPOLLRDHUP.rawValue
    do {
      try loop.watch(fd, events: client.watchedEvents) { [unowned self] events in
        self.ready(id, events)
      }
    } catch {
      clients[id] = nil
      fd.close()
    }
    scheduleSweep()
  }

  // MARK: Reading

  private func ready(_ id: ClientID, _ events: UInt32) {
    guard let client = clients[id] else { return }
    if events & EPOLLOUT.rawValue != 0 {
      pump(client)
      guard clients[id] != nil else { return }
    }
    if events & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue) != 0 {
      readInput(client)
      guard clients[id] != nil else { return }
    }
    if events & EPOLLERR.rawValue != 0 { drop(id, reason: "socket error") }
  }

  private func readInput(_ client: Client) {
    var buffer = [UInt8](repeating: 0, count: 16 * 1024)
    // A few reads per wake-up: one busy client must not starve the others.
    for _ in 0..<8 {
      let n = buffer.withUnsafeMutableBytes {
        recv(client.fd.rawValue, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
      }
      if n < 0 {
        if errno == EINTR { continue }
        if errno == EAGAIN || errno == EWOULDBLOCK { return }
        drop(
          client.id,
          reason: errno == ECONNRESET
            ? "the client closed the connection" : "read failed (errno \(errno))")
        return
      }
      if n == 0 {
        drop(client.id, reason: "the client closed the connection")
        return
      }
      client.session.heard(at: Clock.now())
      let events = client.session.receive(buffer[0..<n])
      for e in events {
        switch e {
        case .connected(let info):
          // The client names itself: one printable line, bounded.
          let name = String(
            String.UnicodeScalarView(
              info.unicodeScalars.prefix(64).map {
                $0.properties.isWhitespace || $0.value < 0x20 ? " " : $0
              }))
          onLog?("esphome: \(client.peer) connected (\(name))")
        case .subscribed: onLog?("esphome: \(client.peer) subscribed to raw advertisements")
        case .unsubscribed: onLog?("esphome: \(client.peer) unsubscribed")
        case .scannerModeRequested(let active):
          // Said once per client: a client can send these as fast as it likes.
          guard !client.askedForScannerMode else { break }
          client.askedForScannerMode = true
          onLog?(
            "esphome: \(client.peer) asked for \(active ? "active" : "passive") scanning; the scanner follows [scanner] passive (it is shared with presence)"
          )
          onScannerMode?(active)
        case .closing(let reason): onLog?("esphome: closing \(client.peer): \(reason)")
        }
      }
      pump(client)
      guard clients[client.id] != nil else { return }
    }
  }

  // MARK: Writing

  /// Offers one BluetoothLERawAdvertisementsResponse body to every
  /// subscriber and writes what each socket takes now.
  public func broadcast(batch: [UInt8]) {
    for client in clients.values where client.session.subscribed {
      let dropped = client.session.droppedBatches
      client.session.offer(batch: batch)
      batchesOffered += 1
      if client.session.droppedBatches != dropped {
        batchesDropped += 1
        // Said at the first drop and then every 1000, not per batch.
        if client.session.droppedBatches % 1000 == 1 {
          onLog?(
            "esphome: \(client.peer) does not keep up; dropping its oldest advertisement batches (\(client.session.droppedBatches) so far)"
          )
        }
      }
      if client.out.count == client.outOffset { pump(client) }
    }
  }

  /// Writes until the socket would block or the session has nothing more.
  private func pump(_ client: Client) {
    while true {
      if client.outOffset == client.out.count {
        guard let next = client.session.takeOutput() else { break }
        client.out = next
        client.outOffset = 0
      }
      let n = client.out.withUnsafeBytes {
        Glibc.send(
          client.fd.rawValue, $0.baseAddress! + client.outOffset, $0.count - client.outOffset,
          Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
      }
      if n < 0 {
        if errno == EINTR { continue }
        if errno == EAGAIN || errno == EWOULDBLOCK { break }
        drop(
          client.id,
          reason: errno == ECONNRESET || errno == EPIPE
            ? "the client closed the connection" : "write failed (errno \(errno))")
        return
      }
      client.outOffset += n
    }
    let blocked = client.outOffset < client.out.count
    if client.session.isClosing {
      // The error frame, if any, was offered to the socket: that is all a
      // closing client gets (it must not hold the slot by not reading).
      drop(client.id, reason: nil)
      return
    }
    let events = EPOLLIN.rawValue | EPOLLRDHUP.rawValue | (blocked ? EPOLLOUT.rawValue : 0)
    if events != client.watchedEvents {
      client.watchedEvents = events
      try? loop.modify(client.fd, events: events)
    }
  }

  private func drop(_ id: ClientID, reason: String?) {
    guard let client = clients.removeValue(forKey: id) else { return }
    loop.unwatch(client.fd)
    client.fd.close()
    let s = client.session
    let tally =
      s.subscribed || s.sentBatches > 0
      ? " (\(s.sentBatches) batches sent, \(s.droppedBatches) dropped)" : ""
    if let reason {
      onLog?("esphome: \(client.peer) gone: \(reason)\(tally)")
    } else if !tally.isEmpty {
      onLog?("esphome: \(client.peer) closed\(tally)")
    }
  }
}
