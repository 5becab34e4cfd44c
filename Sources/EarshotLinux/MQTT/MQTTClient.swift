import CMosquitto
import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// An MQTT connection over libmosquitto, driven by the agent's EventLoop
/// (no library thread): its socket is watched for reads and, when the
/// library has data queued, writes; a one-second timer does keepalive.
/// A broker that is down never blocks the caller: connecting and
/// reconnecting are asynchronous, with exponential backoff.
public final class MQTTClient {
  public struct Options: Sendable {
    public var host = "localhost"
    public var port: Int32 = 1883
    public var clientID: String
    public var username: String?
    public var password: String?
    public var caFile: String?
    public var certFile: String?
    public var keyFile: String?
    public var keepalive: Int32 = 30
    /// Last will: published by the broker if this client vanishes.
    public var will: (topic: String, payload: String)?

    public init(clientID: String) { self.clientID = clientID }
  }

  public var onConnect: (() -> Void)?
  /// The connection was lost or refused after it was up (not on `close`).
  public var onDisconnect: (() -> Void)?
  public var onMessage: ((String, [UInt8]) -> Void)?
  /// Inside `onMessage`: whether the broker sent the message as retained
  /// (held from before this subscription), not as it was published.
  public private(set) var messageIsRetained = false
  public var onLog: ((String) -> Void)?
  public private(set) var isConnected = false

  private let loop: EventLoop
  private let options: Options
  private let mosq: OpaquePointer
  /// The library's socket while the loop watches it.
  private var watchedFD: FileDescriptor?
  /// The events the loop watches `watchedFD` for: changed only when they
  /// differ (a publisher calls this per message; epoll_ctl each time cost
  /// a syscall per sighting).
  private var watchedEvents: UInt32 = 0
  private var backoff: Double = 1
  private var reconnectTimer: EventLoop.TimerID?
  private var keepaliveTimer: EventLoop.TimerID?
  private var subscriptions: [String] = []
  private var closed = false
  private var takeover = SessionTakeoverDetector()

  public init(loop: EventLoop, options: Options) throws {
    mosquitto_lib_init()
    self.loop = loop
    self.options = options
    guard let m = mosquitto_new(options.clientID, true, nil) else {
      throw SystemError(errno: errno, "mosquitto_new")
    }
    mosq = m
    mosquitto_user_data_set(mosq, Unmanaged.passUnretained(self).toOpaque())
    _ = mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311)
    if let user = options.username {
      _ = mosquitto_username_pw_set(mosq, user, options.password)
    }
    if options.caFile != nil || options.certFile != nil {
      let rc = mosquitto_tls_set(mosq, options.caFile, nil, options.certFile, options.keyFile, nil)
      guard rc == MOSQ_ERR_SUCCESS.rawValue else {
        throw MQTTError(
          "TLS setup failed: \(String(cString: mosquitto_strerror(rc))) (check [mqtt] ca, cert, key)"
        )
      }
    }
    if let will = options.will {
      let rc = mosquitto_will_set(
        mosq, will.topic, Int32(will.payload.utf8.count), will.payload, 1, true)
      guard rc == MOSQ_ERR_SUCCESS.rawValue else {
        throw MQTTError("cannot set the last will on \(will.topic)")
      }
    }
    mosquitto_connect_callback_set(mosq) { m, obj, rc in
      guard let obj else { return }
      Unmanaged<MQTTClient>.fromOpaque(obj).takeUnretainedValue().connected(rc)
    }
    mosquitto_disconnect_callback_set(mosq) { _, obj, rc in
      guard let obj else { return }
      Unmanaged<MQTTClient>.fromOpaque(obj).takeUnretainedValue().disconnected(rc)
    }
    mosquitto_message_callback_set(mosq) { _, obj, message in
      guard let obj, let message else { return }
      let m = message.pointee
      let topic = String(cString: m.topic)
      let payload: [UInt8] =
        m.payloadlen > 0
        ? Array(UnsafeRawBufferPointer(start: m.payload, count: Int(m.payloadlen))) : []
      let client = Unmanaged<MQTTClient>.fromOpaque(obj).takeUnretainedValue()
      client.messageIsRetained = m.retain
      defer { client.messageIsRetained = false }
      client.onMessage?(topic, payload)
    }
  }

  deinit {
    close()
    mosquitto_destroy(mosq)
  }

  /// Starts connecting; returns at once.
  public func start() { attemptConnect(first: true) }

  /// Publishes now if connected; otherwise drops it (the caller republishes
  /// retained state on connect).
  @discardableResult
  public func publish(_ topic: String, _ payload: String, qos: Int32 = 0, retain: Bool = false)
    -> Bool
  {
    guard isConnected else { return false }
    let rc = mosquitto_publish(mosq, nil, topic, Int32(payload.utf8.count), payload, qos, retain)
    if rc != MOSQ_ERR_SUCCESS.rawValue {
      onLog?("mqtt: publish to \(topic) failed: \(String(cString: mosquitto_strerror(rc)))")
      return false
    }
    updateWriteInterest()
    return true
  }

  /// Subscribes now and again after every reconnect.
  public func subscribe(_ pattern: String, qos: Int32 = 1) {
    subscriptions.append(pattern)
    if isConnected { _ = mosquitto_subscribe(mosq, nil, pattern, qos) }
    updateWriteInterest()
  }

  /// Disconnects cleanly (the broker does not publish the will).
  public func close() {
    guard !closed else { return }
    closed = true
    if let t = reconnectTimer { loop.cancel(t) }
    if let t = keepaliveTimer { loop.cancel(t) }
    if isConnected {
      _ = mosquitto_disconnect(mosq)
      _ = mosquitto_loop_write(mosq, 1)
    }
    unwatch()
  }

  // MARK: Connection

  private func attemptConnect(first: Bool) {
    guard !closed else { return }
    reconnectTimer = nil
    let rc =
      first
      ? mosquitto_connect_async(mosq, options.host, options.port, options.keepalive)
      : mosquitto_reconnect_async(mosq)
    guard rc == MOSQ_ERR_SUCCESS.rawValue else {
      let why =
        rc == MOSQ_ERR_ERRNO.rawValue
        ? String(cString: strerror(errno)) : String(cString: mosquitto_strerror(rc))
      onLog?(
        "mqtt: cannot connect to \(options.host):\(options.port): \(why); retrying in \(Int(backoff)) s"
      )
      scheduleReconnect(first: first)
      return
    }
    watch()
    scheduleKeepalive()
  }

  private func scheduleReconnect(first: Bool) {
    unwatch()
    guard !closed, reconnectTimer == nil else { return }
    let delay = backoff
    backoff = min(backoff * 2, 60)
    reconnectTimer = loop.after(seconds: delay) { [weak self] in self?.attemptConnect(first: first)
    }
  }

  private func connected(_ rc: Int32) {
    guard rc == 0 else {
      onLog?(
        "mqtt: broker refused the connection: \(String(cString: mosquitto_connack_string(rc)))")
      return
    }
    isConnected = true
    backoff = 1
    takeover.connected(at: Clock.now())
    for s in subscriptions { _ = mosquitto_subscribe(mosq, nil, s, 1) }
    onConnect?()
    updateWriteInterest()
  }

  private func disconnected(_ rc: Int32) {
    let was = isConnected
    isConnected = false
    guard !closed else { return }
    if was {
      onDisconnect?()
      onLog?("mqtt: connection to \(options.host):\(options.port) lost; reconnecting")
      if takeover.disconnected(at: Clock.now()) {
        onLog?(
          SessionTakeoverDetector.message(
            clientID: options.clientID, threshold: takeover.threshold,
            shortSpan: takeover.shortSpan))
      }
    }
    scheduleReconnect(first: false)
  }

  // MARK: Loop plumbing

  private func watch() {
    let raw = mosquitto_socket(mosq)
    guard raw >= 0 else { return }
    let fd = FileDescriptor(rawValue: raw)
    if watchedFD != fd { unwatch() }
    watchedFD = fd
    watchedEvents = interest()
    try? loop.watch(fd, events: watchedEvents) { [weak self] events in self?.ready(events) }
  }

  private func unwatch() {
    if let watchedFD { loop.unwatch(watchedFD) }
    watchedFD = nil
  }

  private func interest() -> UInt32 {
    var e = EventLoop.readable
    if mosquitto_want_write(mosq) { e |= EventLoop.writable }
    return e
  }

  private func updateWriteInterest() {
    guard let watchedFD else { return }
    let events = interest()
    guard events != watchedEvents else { return }
    watchedEvents = events
    try? loop.modify(watchedFD, events: events)
  }

  private func ready(_ events: UInt32) {
    var rc = MOSQ_ERR_SUCCESS.rawValue
    if events & (EventLoop.readable | EventLoop.hangup | EventLoop.error) != 0 {
      // libmosquitto reads one packet per call: take what is queued (up to
      // a bound, so other work on the loop is not starved), or a busy
      // subscription falls behind by a packet per wakeup.
      var n = 0
      repeat {
        rc = mosquitto_loop_read(mosq, 1)
        n += 1
      } while rc == MOSQ_ERR_SUCCESS.rawValue && n < 64 && socketReadable()
    }
    if rc == MOSQ_ERR_SUCCESS.rawValue,
      events & EventLoop.writable != 0 || mosquitto_want_write(mosq)
    {
      rc = mosquitto_loop_write(mosq, 16)
    }
    if rc != MOSQ_ERR_SUCCESS.rawValue {
      // The socket is gone; the disconnect callback may not have run.
      if isConnected { disconnected(rc) } else { scheduleReconnect(first: false) }
      return
    }
    // connect_async may have replaced the socket.
    if mosquitto_socket(mosq) != watchedFD?.rawValue { watch() } else { updateWriteInterest() }
  }

  private func socketReadable() -> Bool {
    var p = pollfd(fd: mosquitto_socket(mosq), events: Int16(POLLIN), revents: 0)
    return poll(&p, 1, 0) == 1 && p.revents & Int16(POLLIN) != 0
  }

  private func scheduleKeepalive() {
    if let t = keepaliveTimer { loop.cancel(t) }
    keepaliveTimer = loop.after(seconds: 1) { [weak self] in
      guard let self, !self.closed else { return }
      if self.watchedFD != nil {
        let rc = mosquitto_loop_misc(self.mosq)
        if rc != MOSQ_ERR_SUCCESS.rawValue, self.isConnected { self.disconnected(rc) }
        self.updateWriteInterest()
      }
      self.scheduleKeepalive()
    }
  }
}

public struct MQTTError: Error, CustomStringConvertible {
  public let description: String
  public init(_ d: String) { description = d }
}
