import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// `earshot run`: one event loop serving the control socket, the find-phone
/// driver, and the parts attached to it: the region monitor on the live
/// scanner (`attach(monitor:)`), MQTT (`attach(mqtt:)`), the proximity log
/// (`proximityLog`), the mixer and the alert. Everything runs on the loop's
/// thread.
public final class Daemon {
  public struct Options: Sendable {
    public var socketPath: String
    /// Where the user's volume is kept while find-phone rings.
    public var stateDirectory: String
    /// `[control] group`: its members may use the socket.
    public var allowedGroup: UInt32?
    /// `[control] max_clients` (fitted to the open-file limit).
    public var maxClients = 1024
    /// `[find-phone]`.
    public var findPhone = FindPhoneConfig()
    /// Handle SIGINT/SIGTERM through the loop (off in in-process tests).
    public var handleSignals = true

    public init(socketPath: String, stateDirectory: String) {
      self.socketPath = socketPath
      self.stateDirectory = stateDirectory
    }
  }

  public let version: String
  public let loop: EventLoop
  public let server: ControlServer
  public let find: FindPhoneDriver
  public let socketLink: SocketDeviceLink
  let volume: VolumeControl?
  /// Attached parts (see DaemonParts.swift).
  var monitor: AgentMonitor?
  var mqtt: MQTTBridge?
  let mqttLink = MQTTDeviceLink()
  /// Records find-phone and volume events (the monitor records its own).
  public var proximityLog: ProximityLogWriter?
  var lastFindState: FindStatus.State = .idle
  /// The shutter, media and BLE link parts and their waiting requests
  /// (DaemonDevices.swift).
  let deviceParts = DeviceParts()
  /// Called on every find-phone status change and volume change, after the
  /// socket's subscribers (the BLE link, media preemption).
  var findObservers: [(FindStatus) -> Void] = []
  var volumeObservers: [(VolumeSetting) -> Void] = []
  /// Run after the loop ends, in order (stop the scanner, close MQTT, ...).
  public var stopActions: [() -> Void] = []
  private var topics: [ControlServer.ClientID: Set<ControlTopic>] = [:]
  private let startedAt = Clock.monotonicNanos()
  private let stopPipe: [Int32]

  /// Sections of `status` besides the agent, find-phone and volume. The
  /// region monitor replaces "regions" and "beacons" when it is wired in.
  public var statusSections: [(name: String, value: () -> JSONValue)] = [
    ("monitoring", { .bool(false) }),
    ("regions", { .array([]) }),
    ("beacons", { .array([]) }),
  ]

  public var log: (String) -> Void = { Console.error("earshot run: \($0)\n") }

  /// Writing a byte here (from any thread) stops the daemon.
  public var stopDescriptor: Int32 { stopPipe[1] }

  public init(options: Options, version: String, alert: AlertOutput?, volume: VolumeControl?)
    throws
  {
    self.version = version
    self.volume = volume
    loop = try EventLoop()
    var serverOptions = ControlServer.Options(
      path: options.socketPath, allowedGroup: options.allowedGroup)
    serverOptions.maxClients = options.maxClients
    server = try ControlServer(loop: loop, options: serverOptions)
    find = FindPhoneDriver(
      loop: loop, settings: options.findPhone, alert: alert, volume: volume,
      savedVolume: SavedVolumeFile(directory: options.stateDirectory))
    socketLink = SocketDeviceLink(server: server)
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else { throw SystemError(errno: errno, "pipe") }
    for fd in fds {
      _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
      UnixSocket.setNonblocking(fd)
    }
    stopPipe = fds
    handleSignalsEnabled = options.handleSignals
    find.add(socketLink)
    wire(options)
  }

  deinit {
    close(stopPipe[0])
    close(stopPipe[1])
  }

  private func wire(_ options: Options) {
    server.onLog = { [unowned self] in self.log($0) }
    find.onLog = { [unowned self] in self.log($0) }
    server.onInput = { [unowned self] client, input in self.handle(client, input) }
    server.onDisconnect = { [unowned self] client in
      self.topics[client] = nil
      self.socketLink.clientGone(client)
    }
    socketLink.onDeviceGone = { [unowned self] device in self.find.submit(.deviceGone(device)) }
    find.onStatusChanged = { [unowned self] status in
      let line = ControlProtocol.event(
        "find", [("find", ControlProtocol.json(status, now: Clock.monotonicNanos()))])
      self.publish(.find, line)
      self.mqtt?.findState(status.state.rawValue)
      self.mqtt?.event(line)
      self.recordFind(status)
      for observe in self.findObservers { observe(status) }
    }
    find.onNoticeResult = { [unowned self] id, device, result in
      var fields: [(String, JSONValue)] = [
        ("notice", .int(id)), ("device", .string(device.description)),
      ]
      let detail: String
      switch result {
      case .accepted:
        fields.append(("result", .string("accepted")))
        detail = "accepted"
      case .failed(let why):
        fields.append(("result", .string("failed")))
        fields.append(("reason", .string(why)))
        detail = "failed: \(why)"
      }
      let line = ControlProtocol.event("notice_result", fields)
      self.publish(.find, line)
      self.mqtt?.event(line)
      self.proximityLog?.record(
        .findPhone(
          FindPhoneLogEvent(
            t: Clock.realtimeMicros(), kind: .notice, device: device.description, detail: detail)))
    }
    find.onVolumeSet = { [unowned self] v in self.publishVolume(v) }
    volume?.onChange = { [unowned self] v in self.publishVolume(v) }
  }

  /// Serves until SIGINT/SIGTERM or a byte on `stopDescriptor`.
  public func run() throws {
    signal(SIGPIPE, SIG_IGN)
    try loop.watch(stopPipe[0]) { [unowned self] _ in self.loop.stop() }
    // Loop-level signal handling blocks the signals process-wide, which an
    // in-process test must not do to its host.
    if handleSignalsEnabled {
      try loop.handleSignals([SIGINT, SIGTERM]) { [unowned self] sig in
        self.log("signal \(sig): stopping")
        self.loop.stop()
      }
    }
    find.recoverLeftover()
    log("serving \(server.options.path)")
    try loop.run()
    // Leave nothing raised or playing behind on a clean stop.
    if find.status.state != .idle {
      for d in find.status.requesters { find.submit(.deviceStop(d)) }
    }
    for action in stopActions { action() }
    stopActions.removeAll()
    server.shutdown()
  }

  private let handleSignalsEnabled: Bool

  // MARK: Requests

  private func handle(_ client: ControlServer.ClientID, _ input: ControlServer.Input) {
    switch input {
    case .oversized:
      server.send(
        client,
        ControlProtocol.failure(
          id: .null,
          ControlError(
            .lineTooLong,
            "a request line is limited to \(ControlProtocol.maxLineBytes) bytes; it was skipped")))
    case .line(let bytes):
      switch ControlProtocol.parse(line: bytes) {
      case .failure(let r): server.send(client, ControlProtocol.failure(id: r.id, r.error))
      case .success(let request):
        // Shutter events and play requests are answered when done.
        if startDeferred(request, from: client) { return }
        let response: String
        do {
          response = ControlProtocol.success(
            id: request.id, try execute(request.command, from: client))
        } catch let e as ControlError {
          response = ControlProtocol.failure(id: request.id, e)
        } catch {
          response = ControlProtocol.failure(id: request.id, ControlError(.failed, "\(error)"))
        }
        server.send(client, response)
      }
    }
  }

  private func findJSON() -> JSONValue {
    ControlProtocol.json(find.status, now: Clock.monotonicNanos())
  }

  private func execute(_ command: ControlCommand, from client: ControlServer.ClientID) throws
    -> [(String, JSONValue)]
  {
    switch command {
    case .status:
      var fields: [(String, JSONValue)] = [
        (
          "agent",
          .object([
            ("version", .string(version)), ("pid", .int(getpid())),
            ("uptime_s", .number(Double((Clock.monotonicNanos() - startedAt) / 1_000_000) / 1000)),
            ("clients", .int(server.clientCount)),
            ("subscribers", .int(topics.values.filter { !$0.isEmpty }.count)),
          ])
        ),
        ("find", findJSON()),
        (
          "volume", (try? volume?.currentVolume()).flatMap { $0 }.map(ControlProtocol.json) ?? .null
        ),
      ]
      for section in statusSections { fields.append((section.name, section.value())) }
      return fields
    case .volumeGet:
      return [("volume", ControlProtocol.json(try mixer().currentVolume()))]
    case .volumeSet(let level):
      // Setting a level also unmutes, as desktop volume applets do.
      return [
        (
          "volume",
          ControlProtocol.json(
            try changeVolume {
              $0.level = level
              $0.muted = false
            })
        )
      ]
    case .volumeMute, .volumeUnmute:
      let muted = command == .volumeMute
      return [("volume", ControlProtocol.json(try changeVolume { $0.muted = muted }))]
    case .findStatus:
      return [("find", findJSON())]
    case .found:
      let reply = find.submit(.found)
      if reply == .notRinging {
        throw ControlError(.notRinging, "nothing is ringing and no device is asking")
      }
      var fields: [(String, JSONValue)] = [("result", reply.map(ControlProtocol.json) ?? .null)]
      if case .stopping(let devices)? = reply {
        fields.append(("notify", .array(devices.map { .string($0.description) })))
      }
      fields.append(("find", findJSON()))
      return fields
    case .subscribe(let list):
      topics[client, default: []].formUnion(list)
      return [
        (
          "topics",
          .array(
            ControlTopic.allCases.filter { topics[client]!.contains($0) }.map {
              .string($0.rawValue)
            })
        )
      ]
    case .unsubscribe(let list):
      topics[client, default: []].subtract(list)
      return [
        (
          "topics",
          .array(
            ControlTopic.allCases.filter { topics[client]!.contains($0) }.map {
              .string($0.rawValue)
            })
        )
      ]
    case .deviceRegister(let name):
      let device = socketLink.register(client, name: name)
      return [("device", .string(device.description))]
    case .findStart, .findStop:
      let device = try registered(client)
      let reply = find.submit(command == .findStart ? .deviceStart(device) : .deviceStop(device))
      return [("result", reply.map(ControlProtocol.json) ?? .null), ("find", findJSON())]
    case .noticeAck(let id), .noticeFail(let id, _):
      let device = try registered(client)
      guard find.owner(of: id) == device else {
        throw ControlError(
          .unknownNotice, "notice \(id) is not waiting for an answer from \(device)")
      }
      let result: NoticeResult
      if case .noticeFail(_, let reason) = command {
        result = .failed(reason)
      } else {
        result = .accepted
      }
      find.submit(.noticeResult(id, result))
      return [("notice", .int(id))]
    case .shutter, .mediaPlay, .mediaPause, .mediaResume, .mediaStop:
      return try executeMedia(command)
    }
  }

  /// A volume change asked for by a user (control socket, MQTT): refused
  /// while find-phone owns the volume. Returns the volume now.
  func changeVolume(_ change: (inout VolumeSetting) -> Void) throws -> VolumeSetting {
    let mixer = try mixer()
    guard find.status.state == .idle else {
      throw ControlError(
        .busy,
        "find-phone is \(find.status.state.rawValue) and owns the volume; say 'earshot found' first"
      )
    }
    var v = try mixer.currentVolume()
    change(&v)
    try mixer.setVolume(v)
    let now = try mixer.currentVolume()
    publishVolume(now)
    return now
  }

  private func mixer() throws -> VolumeControl {
    guard let volume else {
      throw ControlError(
        .unavailable,
        "no mixer is available to this agent: check [audio] mixer_card and mixer_control (the agent log says why it could not open them), or it runs with --no-audio"
      )
    }
    return volume
  }

  private func registered(_ client: ControlServer.ClientID) throws -> DeviceID {
    guard let device = socketLink.device(of: client) else {
      throw ControlError(
        .notRegistered,
        "send {\"cmd\":\"device.register\",\"name\":...} first: only a device can do this")
    }
    return device
  }

  // MARK: Events

  func publishVolume(_ v: VolumeSetting) {
    publish(.volume, ControlProtocol.event("volume", [("volume", ControlProtocol.json(v))]))
    mqtt?.volume(v.level, muted: v.muted)
    proximityLog?.record(
      .volume(VolumeLogEvent(t: Clock.realtimeMicros(), volume: v.level, muted: v.muted)))
    for observe in volumeObservers { observe(v) }
  }

  /// Sends an event line to every subscriber of `topic`. The region monitor
  /// and the ranger publish `.regions` and `.ranging` through this.
  public func publish(_ topic: ControlTopic, _ line: String) {
    for (client, set) in topics.sorted(by: { $0.key < $1.key }) where set.contains(topic) {
      server.send(client, line)
    }
  }
}
