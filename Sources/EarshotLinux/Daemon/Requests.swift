import EarshotCore

/// One answer to one request; called exactly once, now or later.
public typealias ReplyHandler = (RequestOutcome) -> Void

/// Requests whose answer comes later: shutter events (the driver answers
/// them in the order sent) and play requests (by their request id).
struct PendingReplies {
  var shutter: [(event: Int, reply: ReplyHandler)] = []
  var media: [MediaRequestID: ReplyHandler] = [:]
  /// The reply of the play request being submitted: its completion may
  /// come before `MediaDriver.request` returns its id.
  var mediaSubmitting: ReplyHandler?

  /// Who waits for play request `id`, taken out of the waiting list (the
  /// caller answers after this returns, so the answer may submit again).
  mutating func takeMediaReply(_ id: MediaRequestID) -> ReplyHandler? {
    if let reply = media.removeValue(forKey: id) { return reply }
    defer { mediaSubmitting = nil }
    return mediaSubmitting
  }
}

extension Daemon {
  /// Performs one request from any transport. `reply` gets exactly one
  /// outcome: at once, or when the part has done it (shutter, play).
  public func perform(
    _ request: DeviceRequest, from requester: Requester, reply: @escaping ReplyHandler
  ) {
    do {
      try perform(request, requester, reply)
    } catch let e as RequestError {
      reply(.refused(e))
    } catch {
      reply(.refused(RequestError(.failed, "\(error)")))
    }
  }

  private func perform(
    _ request: DeviceRequest, _ requester: Requester, _ reply: @escaping ReplyHandler
  ) throws {
    switch request {
    case .status:
      reply(.status(statusJSON()))
    case .findStatus:
      reply(.findStatus(find.status))
    case .findStart, .findStartMild, .findStop:
      let device = try self.device(requester)
      let event: FindEvent
      switch request {
      case .findStart: event = .deviceStart(device)
      case .findStartMild: event = .deviceStartMild(device)
      default: event = .deviceStop(device)
      }
      let r = find.submit(event)
      reply(.find(r, find.status))
    case .found:
      let r = find.submit(.found)
      if r == .notRinging {
        throw RequestError(.notRinging, "nothing is ringing and no device is asking")
      }
      reply(.found(r, find.status))
    case .noticeResult(let id, let result):
      let device = try self.device(requester)
      guard find.owner(of: id) == device else {
        throw RequestError(
          .unknownNotice, "notice \(id) is not waiting for an answer from \(device)")
      }
      find.submit(.noticeResult(id, result))
      reply(.noticeRecorded(id))
    case .volumeGet:
      reply(.volume(try mixer().currentVolume()))
    case .volumeSet(let level):
      reply(
        .volume(
          try changeVolume {
            $0.level = level
            $0.muted = false
          }))
    case .volumeMute(let muted):
      reply(.volume(try changeVolume { $0.muted = muted }))
    case .shutter(let event):
      guard let shutter else {
        throw RequestError(.unavailable, "the remote shutter is not set up in this agent")
      }
      pending.shutter.append((event, reply))
      shutter.send(event)
    case .mediaPlay(let title):
      let media = try self.mediaDriver()
      pending.mediaSubmitting = reply
      let id = media.request(title: title)
      if let still = pending.mediaSubmitting {
        pending.media[id] = still
        pending.mediaSubmitting = nil
      }
    case .mediaPause, .mediaResume, .mediaStop:
      let media = try self.mediaDriver()
      switch request {
      case .mediaPause: media.pause()
      case .mediaResume: media.resume()
      default: media.stop()
      }
      reply(.media(media.phase))
    case .ring(let target, let level):
      guard let tags else {
        throw RequestError(.unavailable, "ringing devices is not set up in this agent")
      }
      tags.ring(target, level, reply: reply)
    case .trackerEvidence(let number):
      guard let trackers else {
        throw RequestError(
          .unavailable, "the agent does not watch for trackers: set [trackers] enabled = true")
      }
      let list = trackers.evidence(of: number)
      if let number, list.isEmpty {
        throw RequestError(.failed, "no \(number) is kept (earshot trackers lists them)")
      }
      reply(.trackers(.array(list.map(\.json))))
    case .trackerTrust(let number, _), .trackerClear(let number):
      guard let trackers else {
        throw RequestError(
          .unavailable, "the agent does not watch for trackers: set [trackers] enabled = true")
      }
      let event: TrackerWatch.Event =
        if case .trackerTrust(_, let span) = request { .trust(number, for: span) } else {
          .clear(number)
        }
      guard trackers.handle(event) else {
        throw RequestError(.failed, "no \(number) is kept (earshot trackers lists them)")
      }
      dispatch(.trackersChanged)
      reply(.trackers(trackers.statusJSON))
    case .trackerSound(let number, let mode):
      try soundTracker(number, mode, reply)
    }
  }

  /// Rings, silences or identifies a kept tracker through the tags'
  /// bluetoothd client; every outcome but success is refused with its line.
  private func soundTracker(
    _ number: TrackerNumber, _ mode: TrackerSoundMode, _ reply: @escaping ReplyHandler
  ) throws {
    guard let trackers else {
      throw RequestError(
        .unavailable, "the agent does not watch for trackers: set [trackers] enabled = true")
    }
    guard let row = trackers.caughtUp().rows.first(where: { $0.number == number }) else {
      throw RequestError(.failed, "no \(number) is kept (earshot trackers lists them)")
    }
    guard let tags else {
      throw RequestError(.unavailable, "ringing devices is not set up in this agent")
    }
    let what = "tracker \(number.value) (\(row.frame.row.name) at \(row.address))"
    let started = tags.soundTracker(
      row.address, family: row.frame.family, mode: mode, what: what
    ) { outcome in
      let line = outcome.line(what)
      switch outcome {
      case .rang, .silenced, .identified: reply(.trackerSound(number, outcome, line: line))
      case .refused, .failed: reply(.refused(RequestError(.failed, line)))
      default: reply(.refused(RequestError(.unavailable, line)))
      }
    }
    if !started {
      throw RequestError(.busy, "\(what): a request to it is under way")
    }
  }

  private func device(_ requester: Requester) throws -> DeviceID {
    guard let device = requester.device else {
      throw RequestError(.notADevice, "only a device can do this")
    }
    return device
  }

  private func mediaDriver() throws -> MediaDriver {
    guard let media else {
      throw RequestError(
        .unavailable, "media playback is not set up in this agent (it runs with --no-audio)")
    }
    return media
  }

  private func mixer() throws -> VolumeControl {
    guard let volume else {
      throw RequestError(
        .unavailable,
        "no mixer is available to this agent: check [audio] mixer_card and mixer_control (the agent log says why it could not open them), or it runs with --no-audio"
      )
    }
    return volume
  }

  /// A volume change a user or device asked for: refused while find-phone
  /// owns the volume. Returns the volume now.
  private func changeVolume(_ change: (inout VolumeSetting) -> Void) throws -> VolumeSetting {
    let mixer = try mixer()
    guard find.status.state == .idle else {
      throw RequestError(
        .busy,
        "find-phone is \(find.status.state.rawValue) and owns the volume; say 'earshot found' first"
      )
    }
    var v = try mixer.currentVolume()
    change(&v)
    try mixer.setVolume(v)
    let now = try mixer.currentVolume()
    volumeChanged(now)
    return now
  }

  func shutterReplied(_ reply: ShutterReply) {
    guard !pending.shutter.isEmpty else {
      log("shutter: an answer nobody waits for: \(reply)")
      return
    }
    let (event, answer) = pending.shutter.removeFirst()  // out before answering
    switch reply {
    case .state(let state, let photo):
      answer(.shutter(event: event, state: state, photo: photo))
    case .error(let value):
      answer(
        .refused(
          RequestError(
            .unknownEvent,
            "unknown shutter event \(value): the events are enter (1), capture (2) and exit (0); nothing changed"
          )))
    }
  }
}
