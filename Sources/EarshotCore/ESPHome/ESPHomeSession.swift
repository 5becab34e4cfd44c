/// One client of the Bluetooth proxy, as a pure state machine: the
/// client's bytes in, bytes to write out, and the events the owner acts
/// on. No socket, no clock.
///
/// Guarantees:
/// - Memory is bounded: at most `maxQueuedBatches` advertisement batches
///   wait for a client that does not read; past that the oldest is dropped
///   and counted (`droppedBatches`), never the newest and never a reply.
///   Replies waiting past `maxQueuedReplyBytes` (a client that asks and
///   never reads) end the session.
/// - Frames go out in the order their Noise nonces were given: replies
///   are sealed when queued, a batch only when it is taken to be written
///   (so dropping a batch never breaks the nonce sequence).
/// - A malformed frame, a wrong key or a message that fails to decrypt ends
///   the session (`isClosing`) after at most one error frame; nothing is
///   delivered from a frame that was not whole and valid.
public struct ESPHomeSession {
  public enum Event: Equatable, Sendable {
    case connected(clientInfo: String)
    case subscribed
    case unsubscribed
    case scannerModeRequested(active: Bool)
    /// The session ends; `reason` says why (for the log).
    case closing(reason: String)
  }

  public struct Limits: Sendable {
    public var maxQueuedBatches = 64
    public var maxQueuedReplyBytes = 64 * 1024
    public var maxFrame = ESPHomeFrameDecoder.defaultMaxFrame
    /// Seconds from connecting to the client's Hello: a connection that
    /// never speaks (or stalls mid-handshake) must not hold a slot.
    public var helloTimeout = 10.0
    /// Seconds without a byte from the client before the proxy asks with
    /// a PingRequest (as an ESPHome node does): aioesphomeapi sends its own
    /// pings only while it hears nothing, so a subscriber that gets a
    /// stream of advertisements may rightly stay silent.
    public var pingAfter = 60.0
    /// Seconds without a byte after which the client is gone (it did not
    /// answer the ping: a host that died without closing the connection
    /// would otherwise hold its slot for ever).
    public var idleTimeout = 90.0
    public init() {}
  }

  private enum Phase {
    case awaitingClientHello
    case awaitingHandshake(NoiseResponderHandshake)
    case ready
    case closing
  }

  public let info: ESPHomeDeviceInfo
  public let serverInfo: String
  public let limits: Limits
  private let crypto: NoiseCrypto?
  private let psk: [UInt8]?
  private var decoder: ESPHomeFrameDecoder
  private var phase: Phase
  private var sendCipher: NoiseCipherState?
  private var receiveCipher: NoiseCipherState?
  /// Bytes ready to write, in order (handshake frames and sealed replies).
  private var replies: [UInt8] = []
  /// Advertisement batch bodies, oldest first, sealed when taken.
  private var batches: [[UInt8]] = []
  private var batchesHead = 0
  public private(set) var subscribed = false
  /// When the client connected, last sent anything, and whether it said Hello.
  public private(set) var connectedAt: MonotonicTime
  private var lastHeard: MonotonicTime
  /// The client said Hello: its handshake is done (with a key, the Hello
  /// comes only through the Noise session the key opened).
  public private(set) var saidHello = false
  /// The session ended on bad input from the client (a malformed or
  /// unexpected frame, a wrong key, a message that does not decode), not
  /// on an orderly disconnect.
  public private(set) var closedOnBadInput = false
  private var pinged = false
  public private(set) var droppedBatches = 0
  public private(set) var sentBatches = 0
  /// The scanner as the client was last told (the owner updates it with
  /// `report(scanner:)`).
  public private(set) var scanner: ESPHomeScannerStatus
  /// The scanner mode this client asked for last (`nil`: it never asked).
  public private(set) var requestedActive: Bool?

  /// `psk` (32 bytes) and `crypto` for Noise; both `nil` for plaintext.
  public init(
    info: ESPHomeDeviceInfo, serverInfo: String, psk: [UInt8]?, crypto: NoiseCrypto?,
    limits: Limits = Limits(), connectedAt: MonotonicTime = .zero,
    scanner: ESPHomeScannerStatus = ESPHomeScannerStatus(
      state: .running, active: false, configuredActive: false)
  ) {
    self.connectedAt = connectedAt
    self.scanner = scanner
    lastHeard = connectedAt
    precondition((psk == nil) == (crypto == nil), "Noise needs both a key and crypto")
    self.info = info
    self.serverInfo = serverInfo
    self.limits = limits
    self.crypto = crypto
    self.psk = psk
    decoder = ESPHomeFrameDecoder(
      framing: psk == nil ? .plaintext : .noise, maxFrame: limits.maxFrame)
    phase = psk == nil ? .ready : .awaitingClientHello
  }

  public var isClosing: Bool {
    if case .closing = phase { return true }
    return false
  }

  public var queuedBatches: Int { batches.count - batchesHead }

  /// The client has shown it is one: with a key, the Noise handshake is
  /// done (it proved the key; aioesphomeapi's first write does it); in
  /// plaintext, it said Hello (its first message).
  public var isProven: Bool {
    if isClosing { return false }
    return saidHello || sendCipher != nil
  }

  // MARK: Input

  /// The client was heard from at `t` (the shell calls it with each read).
  public mutating func heard(at t: MonotonicTime) {
    lastHeard = max(lastHeard, t)
    pinged = false
  }

  /// Time passes (the shell calls it every few seconds, then writes what
  /// the session queued). Returns why the session must end now, if it
  /// must: no Hello within `helloTimeout` of connecting, or nothing heard
  /// for `idleTimeout`. A client silent for `pingAfter` is asked once with
  /// a PingRequest; its answer, or anything else, counts as heard.
  public mutating func tick(at now: MonotonicTime) -> String? {
    guard !isClosing else { return nil }
    if !saidHello, connectedAt.seconds(until: now) >= limits.helloTimeout {
      return "no Hello within \(Int(limits.helloTimeout)) s of connecting"
    }
    let silent = lastHeard.seconds(until: now)
    if silent >= limits.idleTimeout { return "nothing heard for \(Int(limits.idleTimeout)) s" }
    if case .ready = phase, saidHello, silent >= limits.pingAfter, !pinged {
      pinged = true
      reply(.pingRequest, [])
    }
    return nil
  }

  /// The client's bytes, as they came.
  public mutating func receive(_ bytes: some Collection<UInt8>) -> [Event] {
    guard !isClosing else { return [] }
    let frames: [ESPHomeFrame]
    do { frames = try decoder.push(bytes) } catch {
      return [fail(error.description, errorFrame: badFramingReply(error))]
    }
    var events: [Event] = []
    for frame in frames {
      events += handle(frame)
      if isClosing { break }
    }
    return events
  }

  /// What a client of the other framing understands as "wrong framing".
  private func badFramingReply(_ error: ESPHomeFrameError) -> [UInt8] {
    switch decoder.framing {
    // A Noise client reads a 0x00 header as "the device uses plaintext".
    case .plaintext: return [0x00, 0x00, 0x00]
    // A plaintext client reads 0x01 as "the device uses encryption".
    case .noise: return noiseFrame([0x01] + Array("Bad indicator byte".utf8))
    }
  }

  private mutating func fail(_ reason: String, errorFrame: [UInt8] = [], badInput: Bool = true)
    -> Event
  {
    closedOnBadInput = badInput
    replies += errorFrame
    phase = .closing
    batches.removeAll()
    batchesHead = 0
    return .closing(reason: reason)
  }

  private mutating func handle(_ frame: ESPHomeFrame) -> [Event] {
    switch (phase, frame) {
    case (.awaitingClientHello, .noise(let hello)):
      // ESPHome's prologue: "NoiseAPIInit", the hello's length, the hello.
      let prologue =
        Array("NoiseAPIInit".utf8) + [UInt8(hello.count >> 8), UInt8(hello.count & 0xFF)] + hello
      phase = .awaitingHandshake(
        NoiseResponderHandshake(crypto: crypto!, psk: psk!, prologue: prologue))
      let mac = info.macAddress.lowercased().filter { $0 != ":" }
      replies += noiseFrame([0x01] + Array(info.name.utf8) + [0] + Array(mac.utf8) + [0])
      return []
    case (.awaitingHandshake(var handshake), .noise(let message)):
      guard message.first == 0x00 else {
        return [
          fail(
            "handshake frame with protocol byte \(message.first.map(String.init) ?? "none")",
            errorFrame: noiseFrame([0x01] + Array("Bad handshake frame".utf8)))
        ]
      }
      do {
        let r = try handshake.respond(to: Array(message.dropFirst()))
        receiveCipher = r.receive
        sendCipher = r.send
        replies += noiseFrame([0x00] + r.reply)
        phase = .ready
        return []
      } catch {
        return [
          fail(
            error == .macFailure
              ? "wrong encryption key (handshake MAC failure)" : error.description,
            errorFrame: noiseFrame([0x01] + Array(error.description.utf8)))
        ]
      }
    case (.ready, .noise(let sealed)):
      guard let plain = receiveCipher!.decrypt(crypto!, sealed) else {
        return [fail("a frame failed to decrypt")]
      }
      guard plain.count >= 4, Int(plain[2]) << 8 | Int(plain[3]) == plain.count - 4 else {
        return [fail("a decrypted frame of \(plain.count) bytes has a bad header")]
      }
      return message(type: UInt32(plain[0]) << 8 | UInt32(plain[1]), body: Array(plain[4...]))
    case (.ready, .plaintext(let type, let body)):
      return message(type: type, body: body)
    default:
      return [fail("unexpected frame")]
    }
  }

  private mutating func message(type: UInt32, body: [UInt8]) -> [Event] {
    let m: ESPHomeClientMessage
    do { m = try ESPHomeClientMessage.decode(type: type, body: body) } catch {
      return [fail("message \(type): \(error)")]
    }
    var events: [Event] = []
    switch m {
    case .hello(let clientInfo, _, _):
      saidHello = true
      reply(
        .helloResponse, ESPHomeServerMessage.helloResponse(serverInfo: serverInfo, name: info.name))
      events.append(.connected(clientInfo: clientInfo))
    case .authenticate:
      reply(.authenticationResponse, [])  // no password: invalid_password = false
    case .disconnect:
      reply(.disconnectResponse, [])
      events.append(fail("the client disconnected", badInput: false))
    case .disconnected:
      events.append(fail("the client acknowledged the disconnect", badInput: false))
    case .ping: reply(.pingResponse, [])
    case .pong: break
    case .deviceInfo: reply(.deviceInfoResponse, ESPHomeServerMessage.deviceInfoResponse(info))
    case .listEntities: reply(.listEntitiesDoneResponse, [])
    case .subscribeQuietly, .ignored: break
    case .subscribeAdvertisements(let flags):
      // Only the raw form (flag 1) is offered, as the feature flags say.
      guard flags & 1 != 0 else { break }
      if !subscribed {
        subscribed = true
        events.append(.subscribed)
      }
      // Every subscription is answered with the scanner's state, as
      // ESPHome does: Home Assistant takes the answer as proof that the
      // subscription landed, and subscribes again until one comes.
      reply(.bluetoothScannerStateResponse, scanner.body)
    case .unsubscribeAdvertisements:
      if subscribed {
        subscribed = false
        batches.removeAll()
        batchesHead = 0
        events.append(.unsubscribed)
      }
    case .connectionsFree:
      reply(.bluetoothConnectionsFreeResponse, ESPHomeServerMessage.connectionsFree())
    case .setScannerMode(let active):
      requestedActive = active
      events.append(.scannerModeRequested(active: active))
    }
    if replies.count > limits.maxQueuedReplyBytes {
      events.append(fail("the client sends requests and does not read the replies"))
    }
    return events
  }

  // MARK: Output

  private func noiseFrame(_ payload: [UInt8]) -> [UInt8] {
    [0x01, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
  }

  private mutating func frame(_ type: ESPHomeMessageID, _ body: [UInt8]) -> [UInt8] {
    let id = type.rawValue
    if var cipher = sendCipher {
      let plain =
        [UInt8(id >> 8), UInt8(id & 0xFF), UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
      let sealed = cipher.encrypt(crypto!, plain)
      sendCipher = cipher
      return noiseFrame(sealed)
    }
    var out: [UInt8] = [0x00]
    ProtobufWire.appendVarint(UInt64(body.count), to: &out)
    ProtobufWire.appendVarint(UInt64(id), to: &out)
    return out + body
  }

  private mutating func reply(_ type: ESPHomeMessageID, _ body: [UInt8]) {
    replies += frame(type, body)
  }

  /// The agent stops: a connected client is asked to disconnect (ESPHome's
  /// DisconnectRequest, as a node that shuts down sends it), so Home
  /// Assistant takes the end as expected rather than as a lost node; then
  /// the session closes. Nothing is said before the handshake is done.
  public mutating func goodbye() {
    if case .ready = phase { reply(.disconnectRequest, []) }
    if !isClosing { _ = fail("the agent stops", badInput: false) }
  }

  /// The scanner changed (state or mode): a subscribed client is told, as
  /// ESPHome pushes a BluetoothScannerStateResponse on each change.
  public mutating func report(scanner new: ESPHomeScannerStatus) {
    guard new != scanner else { return }
    scanner = new
    if subscribed, !isClosing { reply(.bluetoothScannerStateResponse, new.body) }
  }

  /// Queues one BluetoothLERawAdvertisementsResponse body if the client
  /// subscribed; drops the oldest queued batch when the queue is full.
  public mutating func offer(batch: [UInt8]) {
    guard subscribed, !isClosing else { return }
    if queuedBatches >= limits.maxQueuedBatches {
      batchesHead += 1
      droppedBatches += 1
    }
    batches.append(batch)
    if batchesHead > 64 {
      batches.removeFirst(batchesHead)
      batchesHead = 0
    }
  }

  /// The next bytes to write: all queued replies, else one batch (sealed
  /// now); `nil` when there is nothing to write. Call it only when the
  /// socket has taken everything given before.
  public mutating func takeOutput() -> [UInt8]? {
    if !replies.isEmpty {
      defer { replies.removeAll(keepingCapacity: true) }
      return replies
    }
    guard queuedBatches > 0 else { return nil }
    let body = batches[batchesHead]
    batchesHead += 1
    if batchesHead == batches.count {
      batches.removeAll(keepingCapacity: true)
      batchesHead = 0
    }
    sentBatches += 1
    return frame(.bluetoothLERawAdvertisementsResponse, body)
  }
}
