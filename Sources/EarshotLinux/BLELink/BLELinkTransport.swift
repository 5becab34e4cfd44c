import EarshotCore

/// The BLE link as a transport: registers with bluetoothd (in the
/// background; a failure is logged and the agent serves on), turns each
/// device's link requests (docs/link-protocol.md) into device requests and
/// their outcomes into link responses, and notifies the find-phone end and
/// volume changes.
public final class BLELinkTransport: AgentTransport {
  public let name = "ble"
  public let server: BLELinkServer
  public let link: BLEDeviceLink
  /// Find Me locators (the Immediate Alert service) reach find-phone here.
  public let findMe = FindMeDeviceLink()
  public var deviceLink: DeviceLink? { link }
  private unowned let agent: Daemon
  /// A BLE device asked for the ring now under way: it hears how it ends.
  private var ringing = false

  public init(server: BLELinkServer, agent: Daemon) {
    self.server = server
    self.agent = agent
    link = BLEDeviceLink(server: server)
    server.onLog = { [unowned agent] in agent.log($0) }
    // Down while bluetoothd is away; up again once it re-registers.
    server.onReady = { [unowned link] in link.ready = (try? $0.get()) != nil }
    server.onEvent = { [unowned self] in self.event($0) }
    agent.find.add(findMe)
    findMe.onNotice = { [unowned agent] id, device in
      agent.log(
        "link: \(device) was told nothing: the Immediate Alert service has no found notice")
      agent.perform(.noticeResult(id, .accepted), from: Requester(device: device)) { _ in }
    }
  }

  public func start() { server.start() }
  public func stop() { server.stop() }

  private func event(_ event: BLELinkServer.Event) {
    switch event {
    case .notifying(let on):
      agent.log("link: a device \(on ? "enabled" : "disabled") notifications")
    case .disconnected(let address):
      // Its unacknowledged notices have failed; its ring request stays.
      agent.log("link: \(address) disconnected")
      let device = BLEDeviceLink.device(address)
      link.forgetNotices(of: device)
      agent.deviceGone(device)
      agent.deviceGone(FindMeDeviceLink.device(address))
    case .alert(let level, let from):
      alert(level, from: from)
    case .legacy(.name, _):
      break  // answered by the server
    case .legacy(.volume, let from):
      agent.perform(.volumeGet, from: requester(from)) { [unowned self] outcome in
        if case .volume(let v) = outcome {
          self.server.sendLegacyVolume(v.level)
        } else {
          self.agent.log("link: REQ_VOLUME from \(from) unanswered: no mixer")
        }
      }
    case .legacy(.setVolume(let level), let from):
      agent.perform(.volumeSet(level), from: requester(from)) { [unowned agent] outcome in
        if case .refused(let e) = outcome {
          agent.log("link: volume \(level) from \(from) ignored: \(e.message)")
        }
      }
    case .request(let frame, let from):
      agent.log("link: \(from): \(frame.request.opcode.name) (seq \(frame.seq))")
      request(frame, from: from)
    }
  }

  /// An Alert Level write: no answer goes back (the service has none), so
  /// the outcome is only logged.
  private func alert(_ level: AlertLevel, from address: BDAddress) {
    let device = FindMeDeviceLink.device(address)
    agent.log("link: \(device) wrote Alert Level \(level.rawValue) (\(level))")
    agent.perform(FindMeDeviceLink.request(level), from: Requester(device: device)) {
      [unowned agent] outcome in
      switch outcome {
      case .find(let reply, let status):
        let what = reply.map { ControlProtocol.json($0).encoded } ?? "queued"
        agent.log("link: \(device): \(what); find-phone is \(status.state.rawValue)")
      case .refused(let e):
        agent.log("link: \(device): Alert Level \(level.rawValue) refused: \(e.message)")
      default: break
      }
    }
  }

  private func requester(_ address: BDAddress) -> Requester {
    Requester(device: BLEDeviceLink.device(address))
  }

  /// Maps a link request to a device request (info is the link's own) and
  /// its outcome to the one response.
  private func request(_ frame: LinkRequestFrame, from address: BDAddress) {
    let request: DeviceRequest
    switch frame.request {
    case .info:
      server.send(.ok(.info(version: LinkCodec.version, features: server.features), to: frame))
      return
    case .findStart: request = .findStart
    case .findStop: request = .findStop
    case .noticeAck(let wire, let code):
      guard let id = link.notice(wire) else {
        server.send(.error(.unknownNotice, to: frame))
        return
      }
      let device = BLEDeviceLink.device(address)
      request = .noticeResult(
        id, code == 0 ? .accepted : .failed("\(device) answered with code \(code)"))
    case .volumeGet: request = .volumeGet
    case .volumeSet(let permille): request = .volumeSet(Double(permille) / 1000)
    case .volumeMute(let muted): request = .volumeMute(muted)
    case .shutter(let event): request = .shutter(Int(event.wire))
    case .playMedia(let title): request = .mediaPlay(title: title)
    }
    agent.perform(request, from: requester(address)) { [unowned self] outcome in
      if case .noticeResult = request, case .noticeRecorded = outcome,
        case .noticeAck(let wire, _) = frame.request
      {
        self.link.answered(wire)
      }
      if request == .findStart, case .find(_, let status) = outcome,
        [.starting, .ringing].contains(status.state)
      {
        self.ringing = true
      }
      if case .refused(let e) = outcome,
        [.volumeGet, .volumeSet, .volumeMute].contains(frame.request.opcode)
      {
        self.agent.log("link: \(frame.request.opcode.name) refused: \(e.message)")
      }
      self.server.send(Self.response(to: frame, outcome))
    }
  }

  /// An outcome as the link's response to `frame`.
  static func response(to frame: LinkRequestFrame, _ outcome: RequestOutcome) -> LinkResponse {
    switch outcome {
    case .refused(let e):
      let status: LinkStatus
      switch e.code {
      case .busy: status = .busy
      case .unavailable: status = .unavailable
      case .unknownNotice, .notADevice: status = .unknownNotice
      case .unknownEvent: status = .unknownEvent
      case .notRinging, .failed: status = .failure
      }
      return .error(status, to: frame)
    case .find(let reply, _):
      switch (frame.request, reply) {
      case (.findStart, .ringing?): return .ok(.findStart(.ringing), to: frame)
      case (.findStart, .joined?): return .ok(.findStart(.joined), to: frame)
      case (.findStart, .alreadyRequested?): return .ok(.findStart(.alreadyRequested), to: frame)
      case (.findStart, .queued?): return .ok(.findStart(.queued), to: frame)
      case (.findStop, .stopped?): return .ok(.findStop(.stopped), to: frame)
      case (.findStop, .withdrawn?): return .ok(.findStop(.withdrawn), to: frame)
      case (.findStop, .notRequested?): return .ok(.findStop(.notRequested), to: frame)
      default: return .error(.failure, to: frame)
      }
    case .noticeRecorded:
      return .ok(to: frame)
    case .volume(let v):
      return .ok(.volume(LinkVolume(level: v.level, muted: v.muted)), to: frame)
    case .shutter(_, let state, _):
      let s = LinkShutterState(rawValue: UInt8(state.rawValue)) ?? .photoFailed
      return .ok(.shutter(s), to: frame)
    case .mediaCompleted(_, let response, _):
      return LinkResponse(opcode: .playMedia, seq: frame.seq, status: linkStatus(response))
    case .status, .findStatus, .found, .media, .rang, .trackers, .trackerSound:
      // Not link requests: never asked for by a frame.
      return .error(.failure, to: frame)
    }
  }

  static func linkStatus(_ r: MediaResponse) -> LinkStatus {
    switch r {
    case .success: .ok
    case .notFound: .notFound
    case .unsupportedMediaType: .unsupportedMediaType
    case .playerNotRunning: .playerNotRunning
    case .busy: .busy
    case .timeout: .timeout
    case .failure: .failure
    }
  }

  public func agentEvent(_ event: AgentEvent) {
    switch event {
    case .find(let status): findChanged(status)
    case .volume(let v):
      guard link.ready else { return }
      server.notify(.volumeChanged(LinkVolume(level: v.level, muted: v.muted)))
      server.sendLegacyVolume(v.level)
    case .noticeResult, .monitor, .tag, .reloaded, .telemetry, .trackerFollowing, .trackersChanged:
      break
    }
  }

  /// A ring a BLE device asked for ends: find_ended(reason) goes out when
  /// it stops (before the alert is silent and any notice is sent).
  private func findChanged(_ status: FindStatus) {
    if [.starting, .ringing].contains(status.state) {
      if status.requesters.contains(where: { $0.link == link.linkName }) { ringing = true }
      return
    }
    guard ringing, let end = status.lastEnd else { return }
    ringing = false
    guard link.ready else { return }
    let reason: LinkFindEndReason
    switch end {
    case .found: reason = .found
    case .deviceStop: reason = .deviceStop
    case .timeout: reason = .timeout
    case .alertFailed: reason = .alertFailed
    }
    server.notify(.findEnded(reason))
  }
}

/// A BLE device is `DeviceID(link: "ble", name: its address)`. The
/// phone-found notice goes out as a `phone_found` notification; the
/// device's `notice_ack` comes back as a `.noticeResult` request.
public final class BLEDeviceLink: DeviceLink {
  public let linkName = "ble"
  public let server: BLELinkServer
  /// Registered with bluetoothd: notices can go out.
  public internal(set) var ready = false
  /// Notices sent: the 16-bit number on the wire → the coordinator's id.
  private var notices: [UInt16: (id: NoticeID, device: DeviceID)] = [:]

  public init(server: BLELinkServer) {
    self.server = server
  }

  public static func device(_ address: BDAddress) -> DeviceID {
    DeviceID(link: "ble", name: address.description)
  }

  public func deliverNotice(_ id: NoticeID, to device: DeviceID) -> Bool {
    guard ready else { return false }
    let wire = UInt16(truncatingIfNeeded: id)
    notices[wire] = (id, device)
    server.notify(.phoneFound(notice: wire))
    return true
  }

  func notice(_ wire: UInt16) -> NoticeID? { notices[wire]?.id }
  func answered(_ wire: UInt16) { notices[wire] = nil }
  /// A device left: its notices can no longer be answered.
  func forgetNotices(of device: DeviceID) { notices = notices.filter { $0.value.device != device } }
}
