import CLinux

#if canImport(Glibc)
  import Glibc
#endif

typealias StreamClientID = Int

/// A protocol served by `StreamServer`: what a client's bytes mean and
/// what the server says for it. The server does the sockets; the service
/// cuts frames from the bytes (with its own bound on a frame) and answers.
protocol StreamService: AnyObject {
  /// One client's protocol state (its framer, its session).
  associatedtype Connection: AnyObject

  /// A client connected; if admitted it is `id`. `full` says the server
  /// already serves `maxClients`: it is refused unless the service names
  /// a client to make room (`acceptDisplacing`).
  func admit(
    _ socket: FileDescriptor, from peer: SocketAddress, as id: StreamClientID, full: Bool
  ) -> StreamAdmission<Connection>
  /// Bytes from one read, cut anywhere: a frame may span reads and one
  /// read may hold several frames.
  func received(
    _ bytes: UnsafeRawBufferPointer, from client: StreamClientID, _ connection: Connection)
  /// More bytes to write once the client's queue is empty; nil when none.
  func nextOutput(for connection: Connection) -> [UInt8]?
  /// The client is gone (its socket is closed) and why.
  func dropped(_ client: StreamClientID, _ connection: Connection, _ reason: StreamDropReason)
  /// Accepting rests for `Limits.acceptPause`: out of descriptors or memory.
  func acceptPaused(errno: Int32)
}

enum StreamAdmission<Connection> {
  case accept(Connection)
  /// Accepted in the place of a client the service names, which is dropped
  /// first (`displaced`); the way a full server lets a newcomer in.
  case acceptDisplacing(Connection, StreamClientID)
  /// Refused: `farewell` is offered to the socket once, then it is closed.
  case refuse(farewell: [UInt8])
}

enum StreamDropReason: Equatable, Sendable {
  /// End of input, or the connection was reset or broken.
  case peerClosed
  case readFailed(errno: Int32)
  case writeFailed(errno: Int32)
  /// epoll said the socket has an error.
  case socketError
  /// Its queued output passed `Limits.maxQueuedBytes`: it does not read.
  case outputOverflow
  /// The service closed it, for this reason (nil: nothing to log).
  case closed(String?)
  /// The service gave its place to a newcomer (`acceptDisplacing`).
  case displaced
  case shutdown
}

/// A listening stream socket served from the event loop, for a protocol
/// reduced to a `StreamService`: accept, admit, read, write, drop.
///
/// Guarantees:
/// - Never blocks the loop: every socket is nonblocking, and a client gets
///   at most `readsPerWakeup` reads of `readChunk` bytes per wake-up, so a
///   busy client cannot starve the others.
/// - At most `maxClients` clients; one more is refused (with the service's
///   farewell) and closed, the others go on, unless the service names a
///   client whose place it takes (that one is dropped first).
/// - Memory per client is bounded: one read chunk is shared by all, frames
///   are bounded by the service's framer, and queued output by
///   `maxQueuedBytes`: a client whose queue would pass it is dropped
///   (`outputOverflow`) and no other client notices. Past
///   `pauseInputAbove` its input is not read until its queue drains.
/// - Bytes go out in the order they were queued; `nextOutput` is asked
///   only once the socket has taken everything before (so a service may
///   seal or number its frames when it hands them over).
/// - A client that errors or hangs up is dropped, and the service told
///   why exactly once (`dropped`); after that no call names it again. At
///   the end of its input it is dropped at once, or with
///   `answerAfterEndOfInput` once what is queued for it is written.
/// - Out of descriptors or memory, accepting rests for `acceptPause`
///   instead of spinning on a listening socket that stays readable.
final class StreamServer<Service: StreamService> {
  struct Limits: Sendable {
    var maxClients: Int
    /// Output queued past this many bytes drops the client.
    var maxQueuedBytes = Int.max
    /// Past this many queued output bytes the client's input waits.
    var pauseInputAbove: Int? = nil
    /// At the end of a client's input: write what is queued before
    /// closing (true), or close at once (false).
    var answerAfterEndOfInput = false
    /// Nanoseconds accepting rests when out of descriptors or memory.
    var acceptPause: UInt64 = 1_000_000_000

    init(maxClients: Int) { self.maxClients = maxClients }
  }

  static var readChunk: Int { 16 * 1024 }
  static var readsPerWakeup: Int { 8 }

  let limits: Limits
  private let loop: EventLoop
  private let listener: FileDescriptor
  private weak var service: Service?
  private var listening = false
  private var acceptPause: EventLoop.TimerID?
  private var clients: [StreamClientID: Client] = [:]
  private var nextID: StreamClientID = 1
  /// One read at a time on the loop's thread: one buffer serves all.
  private let readBuffer = UnsafeMutableRawBufferPointer.allocate(
    byteCount: readChunk, alignment: 1)

  private final class Client {
    let fd: FileDescriptor
    let connection: Service.Connection
    var out: [UInt8] = []
    var outOffset = 0
    var inputPaused = false
    var inputEnded = false
    var watchedEvents = EPOLLIN.rawValue | EPOLLRDHUP.rawValue

    init(fd: FileDescriptor, connection: Service.Connection) {
      self.fd = fd
      self.connection = connection
    }

    var queued: Int { out.count - outOffset }
  }

  /// Serves `listener`, a listening nonblocking socket, which it closes at
  /// `shutdown` (or now, if watching it fails).
  init(loop: EventLoop, listener: FileDescriptor, limits: Limits, service: Service) throws {
    self.loop = loop
    self.listener = listener
    self.limits = limits
    self.service = service
    do { try watchListener() } catch {
      listener.close()
      throw error
    }
    listening = true
  }

  deinit { readBuffer.deallocate() }

  var clientCount: Int { clients.count }

  var connections: [(id: StreamClientID, connection: Service.Connection)] {
    clients.map { ($0.key, $0.value.connection) }
  }

  func isConnected(_ id: StreamClientID) -> Bool { clients[id] != nil }

  /// Output bytes queued for a client and not yet taken by its socket.
  func queuedBytes(_ id: StreamClientID) -> Int { clients[id]?.queued ?? 0 }

  /// Stops listening and drops every client (`shutdown`).
  func shutdown() {
    if let acceptPause { loop.cancel(acceptPause) }
    acceptPause = nil
    if listening {
      listening = false
      loop.unwatch(listener)
      listener.close()
    }
    for id in Array(clients.keys) { drop(id, .shutdown) }
  }

  // MARK: Accepting

  private func watchListener() throws {
    try loop.watch(listener) { [unowned self] _ in self.acceptClients() }
  }

  private func acceptClients() {
    while listening {
      var peer = SocketAddress()
      let raw = peer.withMutableSockaddr { accept(listener.rawValue, $0, $1) }
      if raw < 0 {
        switch errno {
        case EINTR, ECONNABORTED: continue
        case EMFILE, ENFILE, ENOBUFS, ENOMEM: pauseAccepting(errno)
        default: break  // EAGAIN: all accepted
        }
        return
      }
      // accept4 needs _GNU_SOURCE, which Swift's Glibc module lacks.
      let fd = FileDescriptor(rawValue: raw)
      fd.setCloseOnExec()
      fd.setNonblocking()
      admit(fd, from: peer)
    }
  }

  private func pauseAccepting(_ error: Int32) {
    guard acceptPause == nil else { return }
    loop.unwatch(listener)
    service?.acceptPaused(errno: error)
    acceptPause = loop.after(nanos: limits.acceptPause) { [weak self] in
      guard let self else { return }
      self.acceptPause = nil
      try? self.watchListener()
      self.acceptClients()
    }
  }

  private func admit(_ fd: FileDescriptor, from peer: SocketAddress) {
    guard let service else { return fd.close() }
    let full = clients.count >= limits.maxClients
    let id = nextID
    nextID += 1
    let connection: Service.Connection
    switch service.admit(fd, from: peer, as: id, full: full) {
    case .refuse(let farewell):
      return refuse(fd, farewell)
    case .accept where full:
      return refuse(fd, [])
    case .accept(let c):
      connection = c
    case .acceptDisplacing(let c, let victim):
      drop(victim, .displaced)
      guard clients.count < limits.maxClients else {
        // The service named no client of this server: the cap still holds.
        service.dropped(id, c, .closed(nil))
        return refuse(fd, [])
      }
      connection = c
    }
    do {
      let client = Client(fd: fd, connection: connection)
      clients[id] = client
      try loop.watch(fd, events: client.watchedEvents) { [unowned self] events in
        self.ready(id, events)
      }
    } catch {
      clients[id] = nil
      fd.close()
      // The service accepted it: it hears that it is gone.
      service.dropped(id, connection, .socketError)
    }
  }

  /// One best-effort write, then close: the client may learn why.
  private func refuse(_ fd: FileDescriptor, _ farewell: [UInt8]) {
    if !farewell.isEmpty { _ = farewell.withUnsafeBytes { try? fd.send($0) } }
    fd.close()
  }

  // MARK: Reading

  private func ready(_ id: StreamClientID, _ events: UInt32) {
    guard let client = clients[id] else { return }
    if events & EPOLLOUT.rawValue != 0 {
      flush(id, client)
      guard clients[id] != nil else { return }
    }
    let readable = EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue
    if events & readable != 0 && !client.inputPaused {
      readInput(id, client)
      guard clients[id] != nil else { return }
    }
    if events & EPOLLERR.rawValue != 0 { drop(id, .socketError) }
  }

  private func readInput(_ id: StreamClientID, _ client: Client) {
    for _ in 0..<Self.readsPerWakeup {
      let count: Int
      do {
        guard let n = try client.fd.read(into: readBuffer) else { return }
        count = n
      } catch {
        let code = (error as? SystemError)?.errno ?? EIO
        return drop(id, code == ECONNRESET ? .peerClosed : .readFailed(errno: code))
      }
      if count == 0 {
        guard limits.answerAfterEndOfInput, client.queued > 0 else { return drop(id, .peerClosed) }
        client.inputEnded = true
        return updateWatch(client)
      }
      service?.received(
        UnsafeRawBufferPointer(rebasing: readBuffer[0..<count]), from: id, client.connection)
      guard clients[id] != nil, !client.inputPaused else { return }
    }
  }

  // MARK: Writing

  /// Queues bytes for a client and writes what its socket takes now.
  /// False when the client is gone, or dropped for not reading.
  @discardableResult
  func send(_ bytes: [UInt8], to id: StreamClientID) -> Bool {
    guard let client = clients[id] else { return false }
    if client.queued + bytes.count > limits.maxQueuedBytes {
      drop(id, .outputOverflow)
      return false
    }
    let wasEmpty = client.queued == 0
    client.out.append(contentsOf: bytes)
    if wasEmpty { flush(id, client) }
    guard clients[id] != nil else { return false }
    if let mark = limits.pauseInputAbove, client.queued > mark, !client.inputPaused {
      client.inputPaused = true
      updateWatch(client)
    }
    return true
  }

  /// Writes what the client's socket takes now, asking the service for
  /// more (`nextOutput`) whenever the queue empties.
  func flush(_ id: StreamClientID) {
    guard let client = clients[id] else { return }
    flush(id, client)
  }

  /// Drops a client now; what is still queued for it is lost.
  func close(_ id: StreamClientID, reason: String?) { drop(id, .closed(reason)) }

  private func flush(_ id: StreamClientID, _ client: Client) {
    while true {
      if client.queued == 0 {
        // Nothing, or an empty frame, ends the turn (an empty one would be
        // asked for again forever).
        guard let more = service?.nextOutput(for: client.connection), !more.isEmpty else { break }
        client.out.removeAll(keepingCapacity: true)
        client.outOffset = 0
        client.out.append(contentsOf: more)
      }
      let sent: Int?
      do {
        sent = try client.out.withUnsafeBytes {
          try client.fd.send(UnsafeRawBufferPointer(rebasing: $0[client.outOffset...]))
        }
      } catch {
        let code = (error as? SystemError)?.errno ?? EIO
        let closed = code == ECONNRESET || code == EPIPE
        return drop(id, closed ? .peerClosed : .writeFailed(errno: code))
      }
      guard let sent else { break }
      client.outOffset += sent
    }
    if client.queued == 0 {
      client.out.removeAll(keepingCapacity: client.out.capacity <= 64 * 1024)
      client.outOffset = 0
      if client.inputEnded { return drop(id, .peerClosed) }
      client.inputPaused = false
    } else if client.outOffset > 64 * 1024 {
      // Written bytes at the front are let go now and then, not per write.
      client.out.removeFirst(client.outOffset)
      client.outOffset = 0
    }
    updateWatch(client)
  }

  private func updateWatch(_ client: Client) {
    var events: UInt32 = 0
    if !client.inputPaused && !client.inputEnded {
      events |= EPOLLIN.rawValue | EPOLLRDHUP.rawValue
    }
    if client.queued > 0 { events |= EPOLLOUT.rawValue }
    guard events != client.watchedEvents else { return }
    client.watchedEvents = events
    try? loop.modify(client.fd, events: events)
  }

  private func drop(_ id: StreamClientID, _ reason: StreamDropReason) {
    guard let client = clients.removeValue(forKey: id) else { return }
    loop.unwatch(client.fd)
    client.fd.close()
    service?.dropped(id, client.connection, reason)
  }
}
