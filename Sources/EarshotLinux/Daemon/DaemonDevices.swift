import EarshotCore

/// Who waits for an answer that comes later (a shutter state, a media
/// completion): a control-socket request or a BLE request.
enum DeferredRequester {
  case socket(ControlServer.ClientID, id: JSONValue)
  case ble(LinkRequestFrame)
}

/// The daemon's device-facing parts besides find-phone: the remote
/// shutter, the media player and the BLE link, with the requests waiting
/// for their answers. Each part keeps its own API; the daemon routes.
public final class DeviceParts {
  var shutter: ShutterDriver?
  var media: MediaDriver?
  var ble: BLEDeviceLink?
  /// Shutter events in the order sent; the driver answers them in order.
  var shutterWaiting: [(who: DeferredRequester, raw: Int)] = []
  var mediaWaiting: [MediaRequestID: DeferredRequester] = [:]
  /// The requester of the play request being submitted: its completion may
  /// come before `MediaDriver.request` returns its id.
  var mediaSubmitting: DeferredRequester?
  /// Find-phone is ringing (or about to), so media stays paused.
  var findActive = false
  /// A BLE device asked for the ring now under way: it hears how it ends.
  var bleRinging = false

  init() {}
}

/// A BLE device is `DeviceID(link: "ble", name: its address)`. The
/// phone-found notice goes out as a `phone_found` notification; the
/// device's `notice_ack` comes back through the daemon.
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

extension Daemon {
  // MARK: Attaching

  /// The remote shutter: `shutter` requests (socket, BLE) go to this
  /// driver; each is answered with the state the camera reached.
  public func attach(shutter driver: ShutterDriver) {
    deviceParts.shutter = driver
    driver.onLog = { [unowned self] in self.log("shutter: \($0)") }
    driver.onReply = { [unowned self] in self.shutterReplied($0) }
    statusSections.append(
      (
        "shutter",
        {
          .object([
            ("photo_mode", .bool(driver.inPhotoMode)),
            (
              "device",
              .string(
                driver.settings.captureCommand == nil ? driver.settings.device : "capture_command")
            ),
          ])
        }
      ))
  }

  /// Media: `media.play` (socket) and play_media (BLE) requests go to this
  /// driver, each answered by its one completion; pause, resume and stop
  /// act on what plays; find-phone pauses it while ringing.
  public func attach(media driver: MediaDriver) {
    deviceParts.media = driver
    driver.onLog = { [unowned self] in self.log("media: \($0)") }
    driver.onCompletion = { [unowned self] id, response, item in
      self.mediaCompleted(id, response, item)
    }
    findObservers.append { [unowned self] status in self.preemptMedia(status) }
    statusSections.append(("media", { [unowned self] in self.mediaJSON() }))
    stopActions.append { driver.stop() }
  }

  /// The BLE link: registers with bluetoothd (in the background; a failure
  /// is logged and the agent serves on), routes device requests through
  /// the same coordinator, mixer, shutter and media as the socket's.
  public func attach(ble link: BLEDeviceLink) {
    deviceParts.ble = link
    find.add(link)
    let server = link.server
    server.onLog = { [unowned self] in self.log($0) }
    // Down while bluetoothd is away; up again once it re-registers.
    server.onReady = { link.ready = (try? $0.get()) != nil }
    server.onEvent = { [unowned self] in self.bleEvent($0, link) }
    findObservers.append { [unowned self] in self.bleFindChanged($0, link) }
    volumeObservers.append { v in
      guard link.ready else { return }
      server.notify(.volumeChanged(LinkVolume(level: v.level, muted: v.muted)))
      server.sendLegacyVolume(v.level)
    }
    stopActions.append { server.stop() }
    server.start()
  }

  // MARK: Control-socket requests

  /// Starts a request whose answer comes later; true if it was one.
  func startDeferred(_ request: ControlRequest, from client: ControlServer.ClientID) -> Bool {
    let who = DeferredRequester.socket(client, id: request.id)
    switch request.command {
    case .shutter(let raw):
      guard let shutter = deviceParts.shutter else {
        answer(who, unavailable: "the remote shutter is not set up in this agent")
        return true
      }
      deviceParts.shutterWaiting.append((who, raw))
      shutter.send(raw)
      return true
    case .mediaPlay(let title):
      guard deviceParts.media != nil else {
        answer(
          who,
          unavailable: "media playback is not set up in this agent (it runs with --no-audio)")
        return true
      }
      submitMedia(title, who)
      return true
    default:
      return false
    }
  }

  /// media.pause, media.resume, media.stop: at once, with the media state.
  func executeMedia(_ command: ControlCommand) throws -> [(String, JSONValue)] {
    guard let media = deviceParts.media else {
      throw ControlError(
        .unavailable, "media playback is not set up in this agent (it runs with --no-audio)")
    }
    switch command {
    case .mediaPause: media.pause()
    case .mediaResume: media.resume()
    case .mediaStop: media.stop()
    default: throw ControlError(.failed, "\(command.name) is answered elsewhere")
    }
    return [("media", mediaJSON())]
  }

  private func answer(_ who: DeferredRequester, unavailable message: String) {
    switch who {
    case .socket(let client, let id):
      server.send(client, ControlProtocol.failure(id: id, ControlError(.unavailable, message)))
    case .ble(let frame):
      deviceParts.ble?.server.send(.error(.unavailable, to: frame))
    }
  }

  // MARK: Shutter

  private func shutterReplied(_ reply: ShutterReply) {
    guard !deviceParts.shutterWaiting.isEmpty else {
      log("shutter: an answer nobody waits for: \(reply)")
      return
    }
    let (who, raw) = deviceParts.shutterWaiting.removeFirst()
    switch (who, reply) {
    case (.socket(let client, let id), .state(let state, let photo)):
      var fields: [(String, JSONValue)] = [
        ("event", ShutterCommand(rawValue: raw).map { .string($0.name) } ?? .int(raw)),
        ("value", .int(raw)), ("state", .string(state.name)), ("code", .int(state.rawValue)),
      ]
      if let photo { fields.append(("photo", .string(photo))) }
      server.send(client, ControlProtocol.success(id: id, fields))
    case (.socket(let client, let id), .error(let value)):
      server.send(
        client,
        ControlProtocol.failure(
          id: id,
          ControlError(
            .unknownEvent,
            "unknown shutter event \(value): the events are enter (1), capture (2) and exit (0); nothing changed"
          )))
    case (.ble(let frame), .state(let state, _)):
      let s = LinkShutterState(rawValue: UInt8(state.rawValue)) ?? .photoFailed
      deviceParts.ble?.server.send(.ok(.shutter(s), to: frame))
    case (.ble(let frame), .error):
      deviceParts.ble?.server.send(.error(.unknownEvent, to: frame))
    }
  }

  // MARK: Media

  private func submitMedia(_ title: String, _ who: DeferredRequester) {
    guard let media = deviceParts.media else { return }
    deviceParts.mediaSubmitting = who
    let id = media.request(title: title)
    if let still = deviceParts.mediaSubmitting {
      deviceParts.mediaWaiting[id] = still
      deviceParts.mediaSubmitting = nil
    }
  }

  private func mediaCompleted(_ id: MediaRequestID, _ response: MediaResponse, _ item: MediaItem?) {
    let who: DeferredRequester
    if let w = deviceParts.mediaWaiting.removeValue(forKey: id) {
      who = w
    } else if let w = deviceParts.mediaSubmitting {
      deviceParts.mediaSubmitting = nil
      who = w
    } else {
      log("media: request \(id) completed (\(response.name)) with nobody waiting")
      return
    }
    switch who {
    case .socket(let client, let reqID):
      var fields: [(String, JSONValue)] = [
        ("request", .int(id.value)), ("result", .string(response.name)),
        ("code", .int(response.rawValue)),
      ]
      if let item {
        fields.append(("title", .string(item.title)))
        if let a = item.artist { fields.append(("artist", .string(a))) }
        fields.append(("path", .string(item.path)))
      }
      server.send(client, ControlProtocol.success(id: reqID, fields))
    case .ble(let frame):
      deviceParts.ble?.server.send(
        LinkResponse(opcode: .playMedia, seq: frame.seq, status: Self.linkStatus(response)))
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

  /// Find-phone preempts media: paused when the ring starts, resumed once
  /// the alert is silent and the volume restored.
  private func preemptMedia(_ status: FindStatus) {
    guard let media = deviceParts.media else { return }
    let active = [.starting, .ringing, .stopping].contains(status.state)
    guard active != deviceParts.findActive else { return }
    deviceParts.findActive = active
    if active { media.findPhoneStarted() } else { media.findPhoneEnded() }
  }

  func mediaJSON() -> JSONValue {
    guard let media = deviceParts.media else { return .null }
    func item(_ state: String, _ id: MediaRequestID, _ i: MediaItem) -> [(String, JSONValue)] {
      [
        ("state", .string(state)), ("request", .int(id.value)), ("title", .string(i.title)),
        ("path", .string(i.path)),
      ]
    }
    switch media.phase {
    case .idle: return .object([("state", .string("idle"))])
    case .starting(let id, let i, _, _): return .object(item("starting", id, i))
    case .playing(let id, let i): return .object(item("playing", id, i))
    case .paused(let id, let i, let byRing):
      return .object(item("paused", id, i) + [("by_ring", .bool(byRing))])
    }
  }

  // MARK: BLE

  private func bleEvent(_ event: BLELinkServer.Event, _ link: BLEDeviceLink) {
    let server = link.server
    switch event {
    case .notifying(let on):
      log("link: a device \(on ? "enabled" : "disabled") notifications")
    case .disconnected(let address):
      // Its unacknowledged notices have failed; its ring request stays.
      log("link: \(address) disconnected")
      link.forgetNotices(of: BLEDeviceLink.device(address))
      find.submit(.deviceGone(BLEDeviceLink.device(address)))
    case .legacy(.name, _):
      break  // answered by the server
    case .legacy(.volume, let from):
      guard let v = try? volume?.currentVolume() else {
        log("link: REQ_VOLUME from \(from) unanswered: no mixer")
        return
      }
      server.sendLegacyVolume(v.level)
    case .legacy(.setVolume(let level), let from):
      do {
        _ = try changeVolume {
          $0.level = level
          $0.muted = false
        }
      } catch let e as ControlError {
        log("link: volume \(level) from \(from) ignored: \(e.message)")
      } catch {
        log("link: volume \(level) from \(from): \(error)")
      }
    case .request(let frame, let from):
      log("link: \(from): \(frame.request.opcode.name) (seq \(frame.seq))")
      if let response = bleRequest(frame, from: from, link) { server.send(response) }
    }
  }

  /// The answer to a BLE request, or nil when it comes later (shutter, media).
  private func bleRequest(_ frame: LinkRequestFrame, from: BDAddress, _ link: BLEDeviceLink)
    -> LinkResponse?
  {
    let device = BLEDeviceLink.device(from)
    switch frame.request {
    case .info:
      return .ok(.info(version: LinkCodec.version, features: link.server.features), to: frame)
    case .findStart:
      let result: LinkFindStartResult
      switch find.submit(.deviceStart(device)) {
      case .ringing?: result = .ringing
      case .joined?: result = .joined
      case .alreadyRequested?: result = .alreadyRequested
      case .queued?: result = .queued
      default: return .error(.failure, to: frame)
      }
      if [.starting, .ringing].contains(find.status.state) { deviceParts.bleRinging = true }
      return .ok(.findStart(result), to: frame)
    case .findStop:
      let result: LinkFindStopResult
      switch find.submit(.deviceStop(device)) {
      case .stopped?: result = .stopped
      case .withdrawn?: result = .withdrawn
      case .notRequested?: result = .notRequested
      default: return .error(.failure, to: frame)
      }
      return .ok(.findStop(result), to: frame)
    case .noticeAck(let wire, let code):
      guard let id = link.notice(wire), find.owner(of: id) == device else {
        return .error(.unknownNotice, to: frame)
      }
      link.answered(wire)
      find.submit(
        .noticeResult(id, code == 0 ? .accepted : .failed("\(device) answered with code \(code)")))
      return .ok(to: frame)
    case .volumeGet:
      guard let volume else { return .error(.unavailable, to: frame) }
      do {
        let v = try volume.currentVolume()
        return .ok(.volume(LinkVolume(level: v.level, muted: v.muted)), to: frame)
      } catch {
        log("link: volume: \(error)")
        return .error(.failure, to: frame)
      }
    case .volumeSet(let permille):
      return bleVolume(frame) {
        $0.level = Double(permille) / 1000
        $0.muted = false
      }
    case .volumeMute(let muted):
      return bleVolume(frame) { $0.muted = muted }
    case .shutter(let event):
      guard let shutter = deviceParts.shutter else { return .error(.unavailable, to: frame) }
      deviceParts.shutterWaiting.append((.ble(frame), Int(event.wire)))
      shutter.send(Int(event.wire))
      return nil
    case .playMedia(let title):
      guard deviceParts.media != nil else { return .error(.unavailable, to: frame) }
      submitMedia(title, .ble(frame))
      return nil
    }
  }

  private func bleVolume(_ frame: LinkRequestFrame, _ change: (inout VolumeSetting) -> Void)
    -> LinkResponse
  {
    do {
      let v = try changeVolume(change)
      return .ok(.volume(LinkVolume(level: v.level, muted: v.muted)), to: frame)
    } catch let e as ControlError {
      log("link: \(frame.request.opcode.name) refused: \(e.message)")
      return .error(
        e.code == .busy ? .busy : e.code == .unavailable ? .unavailable : .failure, to: frame)
    } catch {
      log("link: \(frame.request.opcode.name): \(error)")
      return .error(.failure, to: frame)
    }
  }

  /// A ring a BLE device asked for ends: find_ended(reason) goes out when
  /// it stops (before the alert is silent and any notice is sent).
  private func bleFindChanged(_ status: FindStatus, _ link: BLEDeviceLink) {
    if [.starting, .ringing].contains(status.state) {
      if status.requesters.contains(where: { $0.link == link.linkName }) {
        deviceParts.bleRinging = true
      }
      return
    }
    guard deviceParts.bleRinging, let end = status.lastEnd else { return }
    deviceParts.bleRinging = false
    guard link.ready else { return }
    let reason: LinkFindEndReason
    switch end {
    case .found: reason = .found
    case .deviceStop: reason = .deviceStop
    case .timeout: reason = .timeout
    case .alertFailed: reason = .alertFailed
    }
    link.server.notify(.findEnded(reason))
  }
}
