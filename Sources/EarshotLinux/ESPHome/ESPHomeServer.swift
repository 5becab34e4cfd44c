import CLinux
import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// The ESPHome native API on a TCP port (plaintext or Noise framing),
/// served by a `StreamServer`: one `ESPHomeSession` per client, which cuts
/// the frames and answers them. Each client holds at most one session
/// output being written plus its session's bounded queue, so a client that
/// stops reading costs a bounded amount of memory and its oldest
/// advertisement batches, never the loop's time or another client's frames.
///
/// Slots go by `HandshakeAdmission`: when all `maxClients` are taken, a
/// newcomer takes the place of the oldest connection that has not proved
/// itself (`ESPHomeSession.isProven`: the key's Noise handshake, or a
/// plaintext Hello), so silent or garbage connections never keep Home
/// Assistant out; it is refused only when every client has proved itself.
/// What peers do wrong (refused, displaced, no Hello, bad frames) is
/// logged through a `LimitedLog` per peer address: a first line, then a
/// summary a minute.
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
    /// Seconds per window of the bad-input log (`LogLimiter`).
    public var badInputLogInterval = 60.0
    /// TCP_DEFER_ACCEPT: a connection that sends nothing is handed to the
    /// proxy only after this (the kernel rounds it up to its SYN-ACK
    /// retransmissions: 3 s is about 3 s).
    public var deferAcceptSeconds = 3

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

  final class Connection {
    let peer: String
    /// The peer's address without its port: what the bad-input log counts by.
    let host: String
    var session: ESPHomeSession
    var askedForScannerMode = false

    init(peer: String, host: String, session: ESPHomeSession) {
      self.peer = peer
      self.host = host
      self.session = session
    }
  }

  /// What peers do wrong, as the bad-input log counts and summarises it.
  enum BadInput {
    private static func more(_ n: Int) -> String { LogLimiter.Kind.count(n, "more connection") }
    static let refused = LogLimiter.Kind("refused") { n, host, window in
      "esphome: refused \(more(n)) from \(host) \(window) (every slot held by a proven client)"
    }
    static let displaced = LogLimiter.Kind("displaced") { n, host, window in
      "esphome: closed \(more(n)) from \(host) \(window) to make room (no handshake yet)"
    }
    static let noHello = LogLimiter.Kind("no_hello") { n, host, window in
      "esphome: closed \(more(n)) from \(host) \(window) that said no Hello in time"
    }
    static let closedEarly = LogLimiter.Kind("closed_before_hello") { n, host, window in
      "esphome: \(more(n)) from \(host) closed before their Hello \(window)"
    }
    static let malformed = LogLimiter.Kind("closed_on_bad_input") { n, host, window in
      "esphome: closed \(more(n)) from \(host) \(window) on bad input"
    }
  }

  /// Bytes the kernel buffers per client (it doubles the number for its bookkeeping).
  public static let socketSendBuffer = 32 * 1024

  public let options: Options
  /// The port listened on (the chosen one when `options.port` is 0).
  public private(set) var port: Int = 0
  public var onLog: ((String) -> Void)?
  /// The scanner mode the clients want changed (a request, or a client
  /// that asked left): true for active (`ESPHomeScannerStatus.wantsActive`).
  public var onScannerMode: ((Bool) -> Void)?
  /// The scanner as clients are told (`report(scanner:)`).
  public private(set) var scanner = ESPHomeScannerStatus(
    state: .running, active: false, configuredActive: false)
  private var lastWantsActive: Bool?
  private let loop: EventLoop
  private var stream: StreamServer<ESPHomeServer>!
  private let crypto: LibcryptoNoise?
  private var admission: HandshakeAdmission<ClientID>
  private var badInput: LimitedLog!
  /// Sweeps clients past their Hello or idle deadline while any are connected.
  private var sweep: EventLoop.TimerID?
  /// Batches handed to subscribers, and those dropped for slow ones (counted per client).
  public private(set) var batchesOffered = 0
  public private(set) var batchesDropped = 0

  public init(loop: EventLoop, options: Options) throws {
    self.loop = loop
    self.options = options
    crypto = options.psk == nil ? nil : LibcryptoNoise()
    admission = HandshakeAdmission(capacity: options.maxClients)
    guard let address = SocketAddress(ip: options.bind, port: options.port) else {
      throw SystemError(errno: EINVAL, "[esphome] bind = \(options.bind) is not an IP address")
    }
    let raw = socket(
      address.family, earshot_sock_stream | earshot_sock_nonblock | earshot_sock_cloexec, 0)
    guard raw >= 0 else { throw SystemError(errno: errno, "cannot create the ESPHome API socket") }
    let fd = FileDescriptor(rawValue: raw)
    do {
      var one: Int32 = 1
      setsockopt(raw, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
      let endpoint = "\(options.bind) port \(options.port)"
      guard address.withSockaddr({ Glibc.bind(raw, $0, $1) }) == 0 else {
        throw SystemError(
          errno: errno,
          "cannot listen on \(endpoint) for the ESPHome API (another proxy or ESPHome tool on that port? set [esphome] port)"
        )
      }
      guard listen(raw, 16) == 0 else {
        throw SystemError(errno: errno, "cannot listen on \(endpoint)")
      }
      // A connection reaches accept once its first bytes have come (an
      // API client speaks first), or after about this many seconds: a
      // client is proven by the read that follows its accept, before
      // silent connections reopened elsewhere can take its place.
      var deferSeconds = Int32(options.deferAcceptSeconds)
      setsockopt(
        raw, Int32(IPPROTO_TCP), TCP_DEFER_ACCEPT, &deferSeconds,
        socklen_t(MemoryLayout<Int32>.size))
      var bound = SocketAddress()
      _ = bound.withMutableSockaddr { getsockname(raw, $0, $1) }
      port = bound.port
    } catch {
      fd.close()
      throw error
    }
    badInput = LimitedLog(loop: loop, interval: options.badInputLogInterval) { [unowned self] in
      self.onLog?($0)
    }
    stream = try StreamServer(
      loop: loop, listener: fd, limits: .init(maxClients: options.maxClients), service: self)
  }

  /// Bad input counted since the start, per kind ("refused", "displaced",
  /// "no_hello", "closed_before_hello", "closed_on_bad_input").
  public var badInputTotals: [String: Int] { badInput.totals }

  public var clientCount: Int { stream.clientCount }
  /// Clients whose last scanner-mode request was for active scanning.
  public var clientsAskingActive: Int {
    stream.connections.reduce(0) { $0 + ($1.connection.session.requestedActive == true ? 1 : 0) }
  }
  public var subscriberCount: Int {
    stream.connections.reduce(0) { $0 + ($1.connection.session.subscribed ? 1 : 0) }
  }

  /// Stops listening and closes every client.
  public func shutdown() {
    if let sweep { loop.cancel(sweep) }
    sweep = nil
    // Each client is asked to disconnect (what the socket takes now), then closed.
    for (id, connection) in stream.connections {
      connection.session.goodbye()
      pump(id, connection)
    }
    stream.shutdown()
    badInput.finish()
  }

  /// Every 2 s while clients are connected: time for each session (those
  /// past a deadline go; a silent one is pinged).
  private func scheduleSweep() {
    guard sweep == nil else { return }
    sweep = loop.after(seconds: 2) { [weak self] in
      guard let self else { return }
      self.sweep = nil
      let now = Clock.now()
      for (id, connection) in self.stream.connections {
        if let why = connection.session.tick(at: now) {
          self.stream.close(id, reason: why)
        } else {
          self.pump(id, connection)  // a PingRequest the session may have queued
        }
      }
      if self.stream.clientCount > 0 { self.scheduleSweep() }
    }
  }

  /// The scanner's state or mode changed: every client is told (each
  /// subscriber gets a BluetoothScannerStateResponse), and new ones start
  /// from it.
  public func report(scanner new: ESPHomeScannerStatus) {
    guard new != scanner else { return }
    scanner = new
    for (id, connection) in stream.connections {
      connection.session.report(scanner: new)
      if stream.queuedBytes(id) == 0 { pump(id, connection) }
    }
  }

  /// Tells the owner when the clients' requests change what the scanner should do.
  private func scannerModeChanged() {
    let wants = ESPHomeScannerStatus.wantsActive(
      configuredActive: scanner.configuredActive,
      requests: stream.connections.map { $0.connection.session.requestedActive })
    guard wants != lastWantsActive else { return }
    lastWantsActive = wants
    onScannerMode?(wants)
  }

  // MARK: Writing

  /// Offers one BluetoothLERawAdvertisementsResponse body to every
  /// subscriber and writes what each socket takes now.
  public func broadcast(batch: [UInt8]) {
    for (id, connection) in stream.connections where connection.session.subscribed {
      let dropped = connection.session.droppedBatches
      connection.session.offer(batch: batch)
      batchesOffered += 1
      if connection.session.droppedBatches != dropped {
        batchesDropped += 1
        // Said at the first drop and then every 1000, not per batch.
        if connection.session.droppedBatches % 1000 == 1 {
          onLog?(
            "esphome: \(connection.peer) does not keep up; dropping its oldest advertisement batches (\(connection.session.droppedBatches) so far)"
          )
        }
      }
      if stream.queuedBytes(id) == 0 { pump(id, connection) }
    }
  }

  /// Writes until the socket would block or the session has nothing more.
  private func pump(_ id: ClientID, _ connection: Connection) {
    stream.flush(id)
    // The error frame, if any, was offered to the socket: that is all a
    // closing client gets (it must not hold the slot by not reading).
    if connection.session.isClosing { stream.close(id, reason: nil) }
  }
}

extension ESPHomeServer: StreamService {
  func admit(
    _ socket: FileDescriptor, from address: SocketAddress, as id: ClientID, full _: Bool
  ) -> StreamAdmission<Connection> {
    let peer = address.description
    let decision = admission.arrive(id)
    if decision == .refuse {
      badInput.note(BadInput.refused, from: address.host) {
        "esphome: refused \(peer): \(stream.clientCount) clients connected, each past its handshake (the cap, [esphome] max_clients = \(options.maxClients))"
      }
      return .refuse(farewell: [])
    }
    var nodelay: Int32 = 1
    setsockopt(
      socket.rawValue, Int32(IPPROTO_TCP), TCP_NODELAY, &nodelay,
      socklen_t(MemoryLayout<Int32>.size))
    // A fixed send buffer (no autotuning to megabytes): what a client
    // that stops reading holds in the kernel stays small, and the
    // session's queue (drop oldest) takes over.
    var sendBuffer = Int32(Self.socketSendBuffer)
    setsockopt(
      socket.rawValue, SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<Int32>.size))
    let session = ESPHomeSession(
      info: options.info, serverInfo: options.serverInfo, psk: options.psk, crypto: crypto,
      limits: options.limits, connectedAt: Clock.now(), scanner: scanner)
    scheduleSweep()
    let connection = Connection(peer: peer, host: address.host, session: session)
    if case .admitDisplacing(let oldest) = decision {
      return .acceptDisplacing(connection, oldest)
    }
    return .accept(connection)
  }

  func received(_ bytes: UnsafeRawBufferPointer, from client: ClientID, _ connection: Connection) {
    connection.session.heard(at: Clock.now())
    let events = connection.session.receive(bytes)
    if connection.session.isProven { admission.prove(client) }
    for event in events {
      switch event {
      case .connected(let info):
        // The client names itself: one printable line, bounded.
        let name = String(
          String.UnicodeScalarView(
            info.unicodeScalars.prefix(64).map {
              $0.properties.isWhitespace || $0.value < 0x20 ? " " : $0
            }))
        onLog?("esphome: \(connection.peer) connected (\(name))")
      case .subscribed: onLog?("esphome: \(connection.peer) subscribed to raw advertisements")
      case .unsubscribed: onLog?("esphome: \(connection.peer) unsubscribed")
      case .scannerModeRequested(let active):
        // Said once per client: Home Assistant asks at each active window.
        if !connection.askedForScannerMode {
          connection.askedForScannerMode = true
          onLog?(
            "esphome: \(connection.peer) asks for \(active ? "active" : "passive") scanning (the scan is active while any client or [scanner] passive = false asks)"
          )
        }
        scannerModeChanged()
      case .closing(let reason):
        let line = "esphome: closing \(connection.peer): \(reason)"
        if connection.session.closedOnBadInput {
          badInput.note(BadInput.malformed, from: connection.host) { line }
        } else {
          onLog?(line)
        }
      }
    }
    pump(client, connection)
  }

  func nextOutput(for connection: Connection) -> [UInt8]? { connection.session.takeOutput() }

  func dropped(_ client: ClientID, _ connection: Connection, _ reason: StreamDropReason) {
    admission.leave(client)
    let s = connection.session
    if s.requestedActive != nil {
      // Its request goes with it (on the loop's next turn: the client
      // is still listed while it is being dropped).
      _ = loop.after(nanos: 0) { [weak self] in self?.scannerModeChanged() }
    }
    let tally =
      s.subscribed || s.sentBatches > 0
      ? " (\(s.sentBatches) batches sent, \(s.droppedBatches) dropped)" : ""
    let why: String?
    switch reason {
    case .peerClosed: why = "the client closed the connection"
    case .readFailed(let code): why = "read failed (errno \(code))"
    case .writeFailed(let code): why = "write failed (errno \(code))"
    case .socketError: why = "socket error"
    case .outputOverflow: why = "it does not read"  // not reached: the session bounds its queue
    case .closed(let reason): why = reason
    case .displaced:
      why =
        "no handshake \(Self.seconds(s.connectedAt)) after connecting, and the proxy was full: its place went to a newcomer ([esphome] max_clients = \(options.maxClients))"
    case .shutdown: why = nil
    }
    // Closed on bad input: its closing line said why (bounded).
    if s.closedOnBadInput, tally.isEmpty { return }
    if let why, !s.saidHello {
      // Before its Hello a connection is anyone's: counted, said bounded.
      let kind: LogLimiter.Kind
      switch reason {
      case .displaced: kind = BadInput.displaced
      case .closed: kind = BadInput.noHello
      default: kind = BadInput.closedEarly
      }
      badInput.note(kind, from: connection.host) { "esphome: \(connection.peer) gone: \(why)" }
    } else if let why {
      onLog?("esphome: \(connection.peer) gone: \(why)\(tally)")
    } else if !tally.isEmpty {
      onLog?("esphome: \(connection.peer) closed\(tally)")
    }
  }

  /// "0.3 s": the time since `t`, for a log line.
  private static func seconds(_ t: MonotonicTime) -> String {
    "\((t.seconds(until: Clock.now()) * 10).rounded() / 10) s"
  }

  func acceptPaused(errno error: Int32) {
    onLog?(
      "esphome: cannot accept a client (\(String(cString: strerror(error)))); trying again in 1 s")
  }
}
