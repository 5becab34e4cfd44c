import EarshotCore

/// The control socket as a transport: JSON lines in (`ControlProtocol`),
/// device requests to the agent, one response line per request, and event
/// lines to the clients that subscribed to their topic. Subscriptions and
/// `device.register` are the socket's own business; everything else is a
/// `DeviceRequest`.
public final class ControlSocketTransport: AgentTransport {
  public let name = "socket"
  public let server: ControlServer
  public let link: SocketDeviceLink
  public var deviceLink: DeviceLink? { link }
  private unowned let agent: Daemon
  private var topics: [ControlServer.ClientID: Set<ControlTopic>] = [:]

  init(server: ControlServer, agent: Daemon) {
    self.server = server
    self.agent = agent
    link = SocketDeviceLink(server: server)
    server.onLog = { [unowned agent] in agent.log($0) }
    server.onInput = { [unowned self] client, input in self.handle(client, input) }
    server.onDisconnect = { [unowned self, unowned agent] client in
      self.topics[client] = nil
      if let gone = self.link.clientGone(client) { agent.deviceGone(gone) }
    }
  }

  public var clientCount: Int { server.clientCount }
  public var subscriberCount: Int { topics.values.filter { !$0.isEmpty }.count }

  public func start() {}
  public func stop() { server.shutdown() }

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
      case .success(let request): handle(request, from: client)
      }
    }
  }

  private func handle(_ request: ControlRequest, from client: ControlServer.ClientID) {
    let id = request.id
    let deviceRequest: DeviceRequest
    switch request.command {
    case .subscribe(let list):
      topics[client, default: []].formUnion(list)
      server.send(client, ControlProtocol.success(id: id, [("topics", topicList(client))]))
      return
    case .unsubscribe(let list):
      topics[client, default: []].subtract(list)
      server.send(client, ControlProtocol.success(id: id, [("topics", topicList(client))]))
      return
    case .deviceRegister(let name):
      let (device, replaced) = link.register(client, name: name)
      if let replaced { agent.deviceGone(replaced) }
      server.send(
        client, ControlProtocol.success(id: id, [("device", .string(device.description))]))
      return
    case .status: deviceRequest = .status
    case .findStatus: deviceRequest = .findStatus
    case .found: deviceRequest = .found
    case .findStart: deviceRequest = .findStart
    case .findStop: deviceRequest = .findStop
    case .noticeAck(let n): deviceRequest = .noticeResult(n, .accepted)
    case .noticeFail(let n, let reason): deviceRequest = .noticeResult(n, .failed(reason))
    case .volumeGet: deviceRequest = .volumeGet
    case .volumeSet(let level): deviceRequest = .volumeSet(level)
    case .volumeMute: deviceRequest = .volumeMute(true)
    case .volumeUnmute: deviceRequest = .volumeMute(false)
    case .shutter(let raw): deviceRequest = .shutter(raw)
    case .mediaPlay(let title): deviceRequest = .mediaPlay(title: title)
    case .mediaPause: deviceRequest = .mediaPause
    case .mediaResume: deviceRequest = .mediaResume
    case .mediaStop: deviceRequest = .mediaStop
    case .ring(let target, let level): deviceRequest = .ring(target: target, level: level)
    case .trackerTrust(let n, let seconds):
      deviceRequest = .trackerTrust(
        TrackerNumber(n), for: seconds.map { .milliseconds(Int64(($0 * 1000).rounded())) })
    case .trackerClear(let n): deviceRequest = .trackerClear(TrackerNumber(n))
    case .trackerEvidence(let n): deviceRequest = .trackerEvidence(n.map(TrackerNumber.init))
    case .trackerRing(let n, let mode): deviceRequest = .trackerSound(TrackerNumber(n), mode)
    }
    let requester = Requester(device: link.device(of: client), name: "socket client \(client)")
    agent.perform(deviceRequest, from: requester) { [weak self] outcome in
      self?.server.send(client, Self.response(id: id, outcome))
    }
  }

  private func topicList(_ client: ControlServer.ClientID) -> JSONValue {
    let mine = topics[client] ?? []
    return .array(ControlTopic.allCases.filter { mine.contains($0) }.map { .string($0.rawValue) })
  }

  /// An outcome as the response line to request `id`.
  static func response(id: JSONValue, _ outcome: RequestOutcome) -> String {
    let now = Clock.now()
    switch outcome {
    case .refused(let e):
      return ControlProtocol.failure(id: id, ControlError(e))
    case .status(let sections):
      return ControlProtocol.success(id: id, sections.objectFields ?? [])
    case .find(let reply, let status):
      return ControlProtocol.success(
        id: id,
        [
          ("result", reply.map(ControlProtocol.json) ?? .null),
          ("find", ControlProtocol.json(status, now: now)),
        ])
    case .findStatus(let status):
      return ControlProtocol.success(id: id, [("find", ControlProtocol.json(status, now: now))])
    case .found(let reply, let status):
      var fields: [(String, JSONValue)] = [("result", reply.map(ControlProtocol.json) ?? .null)]
      if case .stopping(let devices)? = reply {
        fields.append(("notify", .array(devices.map { .string($0.description) })))
      }
      fields.append(("find", ControlProtocol.json(status, now: now)))
      return ControlProtocol.success(id: id, fields)
    case .noticeRecorded(let notice):
      return ControlProtocol.success(id: id, [("notice", .int(notice))])
    case .volume(let v):
      return ControlProtocol.success(id: id, [("volume", ControlProtocol.json(v))])
    case .shutter(let event, let state, let photo):
      var fields: [(String, JSONValue)] = [
        ("event", ShutterCommand(rawValue: event).map { .string($0.name) } ?? .int(event)),
        ("value", .int(event)), ("state", .string(state.name)), ("code", .int(state.rawValue)),
      ]
      if let photo { fields.append(("photo", .string(photo))) }
      return ControlProtocol.success(id: id, fields)
    case .mediaCompleted(let request, let response, let item):
      var fields: [(String, JSONValue)] = [
        ("request", .int(request.value)), ("result", .string(response.name)),
        ("code", .int(response.rawValue)),
      ]
      if let item {
        fields.append(("title", .string(item.title)))
        if let a = item.artist { fields.append(("artist", .string(a))) }
        fields.append(("path", .string(item.path)))
      }
      return ControlProtocol.success(id: id, fields)
    case .media(let phase):
      return ControlProtocol.success(id: id, [("media", ControlProtocol.json(phase))])
    case .trackers(let list):
      return ControlProtocol.success(id: id, [("trackers", list)])
    case .trackerSound(let number, let outcome, let line):
      var fields: [(String, JSONValue)] = [
        ("tracker", .int(number.value)), ("result", .string(outcome.code)),
        ("message", .string(line)),
      ]
      if case .identified(_, let facts) = outcome {
        fields.append(("facts", .object(facts.map { ($0.name, .string($0.value)) })))
      }
      return ControlProtocol.success(id: id, fields)
    case .rang(let target, let device, let level):
      return ControlProtocol.success(
        id: id,
        [
          ("target", .string(target)), ("device", .string(device.description)),
          ("level", .int(Int(level.rawValue))),
        ])
    }
  }

  // MARK: Events

  public func agentEvent(_ event: AgentEvent) {
    switch event {
    case .find(let status):
      publish(
        .find,
        ControlProtocol.event(
          "find", [("find", ControlProtocol.json(status, now: Clock.now()))]))
    case .noticeResult(let id, let device, let result):
      publish(.find, ControlProtocol.noticeResultEvent(id, device, result))
    case .volume(let v):
      publish(.volume, ControlProtocol.event("volume", [("volume", ControlProtocol.json(v))]))
    case .monitor(let e):
      publish(e.kind == .range ? .ranging : .regions, MonitorEventFormatter.json(e))
    case .tag(let e):
      publish(.tags, ControlProtocol.tagEvent(e))
    case .trackerFollowing(let row):
      publish(.trackers, ControlProtocol.trackerFollowingEvent(row))
    case .reloaded, .telemetry, .trackersChanged:
      break
    }
  }

  /// Sends an event line to every subscriber of `topic`.
  private func publish(_ topic: ControlTopic, _ line: String) {
    for (client, set) in topics.sorted(by: { $0.key < $1.key }) where set.contains(topic) {
      server.send(client, line)
    }
  }
}

extension ControlError {
  /// A refused request as the socket says it (the codes share their names).
  init(_ e: RequestError) {
    let code: Code
    switch e.code {
    case .busy: code = .busy
    case .unavailable: code = .unavailable
    case .notADevice: code = .notRegistered
    case .notRinging: code = .notRinging
    case .unknownNotice: code = .unknownNotice
    case .unknownEvent: code = .unknownEvent
    case .failed: code = .failed
    }
    let message =
      e.code == .notADevice
      ? "send {\"cmd\":\"device.register\",\"name\":...} first: only a device can do this"
      : e.message
    self.init(code, message)
  }
}

/// The local device link: a control-socket client that sent
/// `device.register` speaks for that device. Several connections may use the
/// same name (a device and a tool acting for it); a notice goes to each of
/// them and the first answer counts.
public final class SocketDeviceLink: DeviceLink {
  public let linkName = "socket"
  private let server: ControlServer
  private var deviceOfClient: [ControlServer.ClientID: DeviceID] = [:]

  public init(server: ControlServer) {
    self.server = server
  }

  /// Returns the device, and the one this client spoke for before if no
  /// other connection speaks for it any more.
  public func register(_ client: ControlServer.ClientID, name: String) -> (
    DeviceID, replaced: DeviceID?
  ) {
    let device = DeviceID(link: linkName, name: name)
    var gone: DeviceID? = nil
    if let old = deviceOfClient[client], old != device {
      deviceOfClient[client] = nil
      if !deviceOfClient.values.contains(old) { gone = old }
    }
    deviceOfClient[client] = device
    return (device, gone)
  }

  public func device(of client: ControlServer.ClientID) -> DeviceID? { deviceOfClient[client] }

  /// The device whose last connection this was, if any.
  public func clientGone(_ client: ControlServer.ClientID) -> DeviceID? {
    guard let device = deviceOfClient.removeValue(forKey: client) else { return nil }
    return deviceOfClient.values.contains(device) ? nil : device
  }

  public func deliverNotice(_ id: NoticeID, to device: DeviceID) -> Bool {
    let line = ControlProtocol.noticeEvent(id, to: device)
    var delivered = false
    for (client, d) in deviceOfClient.sorted(by: { $0.key < $1.key }) where d == device {
      if server.send(client, line) { delivered = true }
    }
    return delivered
  }
}
