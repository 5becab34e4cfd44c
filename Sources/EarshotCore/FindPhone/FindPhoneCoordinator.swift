/// A device that can ask Earshot to ring: which link it came over and the
/// name it gave. The same name over another link is another device.
public struct DeviceID: Hashable, Comparable, Sendable, CustomStringConvertible {
  public let link: String
  public let name: String

  public init(link: String, name: String) {
    self.link = link
    self.name = name
  }

  public var description: String { "\(link):\(name)" }
  public static func < (a: DeviceID, b: DeviceID) -> Bool { a.description < b.description }
}

/// Which phone-found notice a result belongs to.
public typealias NoticeID = UInt64

/// Why a ring ended.
public enum FindEndReason: String, Equatable, Sendable {
  case found
  case deviceStop = "device_stop"
  case timeout
  case alertFailed = "alert_failed"
}

public enum NoticeResult: Equatable, Sendable {
  case accepted
  case failed(String)
}

/// What happens to the coordinator: requests from devices and the user, and
/// the shell's confirmations of the actions it carried out.
public enum FindEvent: Equatable, Sendable {
  /// At start-up: a saved volume was left behind (the agent died mid-alert).
  case recover(VolumeSetting)
  case deviceStart(DeviceID)
  /// A start that does not raise the volume: the alert plays at the user's
  /// own level, only unmuted (the Immediate Alert service's "mild alert").
  /// A later `deviceStart` from any device raises it.
  case deviceStartMild(DeviceID)
  case deviceStop(DeviceID)
  /// The user has the laptop (`earshot found`, the socket, MQTT...).
  case found
  /// The timer armed by `.timer(.arm)` went off (stale firings are ignored).
  case timerFired
  /// `.saveUserVolume` done: the user's setting is persisted; `headphones`
  /// says whether the output is headphones (caps the ring level).
  case volumeSaved(VolumeSetting, headphones: Bool)
  case volumeSaveFailed(String)
  /// The alert could not start, or died while playing.
  case alertFailed(String)
  /// `.stopAlert` done: the output is silent.
  case alertStopped
  /// `.restoreVolume` done.
  case volumeRestored
  case volumeRestoreFailed(String)
  /// The device accepted a notice, or it could not be delivered.
  case noticeResult(NoticeID, NoticeResult)
  /// A device's link went away: its outstanding notices have failed. Its
  /// open request stays (a device may reconnect; the user still looks).
  case deviceGone(DeviceID)
}

/// The find-phone coordinator's one timer.
public enum FindTimer: Hashable, Sendable {
  /// The ring has gone on for `timeout`: stop it.
  case timeout
}

/// What the shell must do, in order.
public enum FindAction: Equatable, Sendable {
  /// Read the mixer and persist it (state file, synced) before anything is
  /// raised; answer with `.volumeSaved` or `.volumeSaveFailed`.
  case saveUserVolume
  /// Set the level and unmute.
  case raiseVolume(Double)
  /// Loop the alert; report `.alertFailed` if it cannot play.
  case startAlert
  /// The ring's timeout (`TimerAction`); answer a firing with `.timerFired`.
  case timer(TimerAction<FindTimer>)
  /// Silence the output; answer with `.alertStopped` once silent.
  case stopAlert
  /// Set level and mute back; answer with `.volumeRestored` or `.volumeRestoreFailed`.
  case restoreVolume(VolumeSetting)
  /// Delete the persisted state: the mixer holds the user's setting again.
  case forgetSavedVolume
  /// Deliver the phone-found notice; answer with `.noticeResult`.
  case sendNotice(NoticeID, DeviceID)
  /// Log and publish what became of a notice. Never rings again.
  case reportNoticeResult(NoticeID, DeviceID, NoticeResult)
  case log(String)
  /// `status` changed (for subscribers). Always last in a step.
  case statusChanged
}

/// The answer to a request event, for the one who asked.
public enum FindReply: Equatable, Sendable {
  /// start: a ring begins for this device.
  case ringing
  /// start: already ringing for another device; this one joins (nothing restarts).
  case joined
  /// start: this device already has an open request (nothing stacks).
  case alreadyRequested
  /// start: the previous ring is still stopping; this one rings right after.
  case queued
  /// stop: this was the last open request; the alert stops (no notice).
  case stopped
  /// stop: this device's request is withdrawn; it still rings for others.
  case withdrawn
  /// stop: this device had no open request; nothing changes.
  case notRequested
  /// found: the alert stops; each of these devices gets a notice once silent.
  case stopping(notify: [DeviceID])
  /// found: already stopping for an earlier found; no new notices.
  case alreadyStopping
  /// found: nothing is ringing and nobody asked.
  case notRinging
  case noticeRecorded
  case unknownNotice
}

/// What subscribers and `find status` see.
public struct FindStatus: Equatable, Sendable {
  public enum State: String, Sendable, CaseIterable {
    case idle
    /// Restoring a volume left behind by a crash.
    case recovering
    /// Saving the user's volume before raising it.
    case starting
    case ringing
    /// Silencing and restoring; notices go out when done.
    case stopping
  }
  public var state: State
  /// Devices with an open request (during `stopping`: queued for the next ring).
  public var requesters: [DeviceID]
  /// Devices that get a notice as soon as the output is silent and restored.
  public var notifying: [DeviceID]
  /// Monotonic deadline of the ring timeout.
  public var deadline: MonotonicTime?
  /// The level rung at, when raised.
  public var level: Double?
  public var headphones: Bool
  public var lastEnd: FindEndReason?
  public var outstandingNotices: Int
}

/// Find-phone as a pure state machine: events and the time in, actions out.
///
/// Ordering it guarantees (tested over random event sequences):
/// - the user's volume is persisted before it is raised;
/// - a notice goes out only after the alert is silent (`.alertStopped`) and
///   the volume restored (`.volumeRestored`, or its failure reported);
/// - nothing starts the alert but a device's request: after `found`, only a
///   new start request can ring again; a failed notice never does;
/// - each found gives every device with an open request exactly one notice;
///   a device's stop gives none.
///
/// Mild starts (`deviceStartMild`) ring at the user's own level, unmuted and
/// never above the find-phone level; the ring is raised as soon as one open
/// request is not mild, and stays raised until it ends.
///
/// Several devices: one alert for all of them. Each request is open until
/// its device stops it, the user finds the laptop (every open requester gets
/// its own notice), or the ring times out or fails (no notices). One device's
/// stop withdraws only its own request.
public struct FindPhoneCoordinator: Sendable {
  /// Replaceable (a config reload); a ring in progress keeps its timer.
  public var settings: FindPhoneConfig

  private enum Phase: Sendable { case idle, recovering, saving, ringing, stopping }
  private var phase = Phase.idle
  private var requesters: [DeviceID] = []
  /// Open requests that asked for a mild alert (a subset of `requesters`).
  private var mild: Set<DeviceID> = []
  private var notify: [DeviceID] = []
  /// The user's setting, persisted by the shell, to restore at the end.
  private var saved: VolumeSetting?
  /// A restore failed: the state file still holds the user's true setting,
  /// so the next ring must not save the raised level over it.
  private var unrestored: VolumeSetting?
  private var saveInFlight = false
  private var raised = false
  private var raisedLevel: Double?
  private var alertPlaying = false
  private var stopRequested = false
  private var restoring = false
  private var deadline: MonotonicTime?
  private var headphones = false
  private var lastEnd: FindEndReason?
  private var outstanding: [NoticeID: DeviceID] = [:]
  private var nextNotice: NoticeID = 1

  public init(settings: FindPhoneConfig = FindPhoneConfig()) {
    self.settings = settings
  }

  public var status: FindStatus {
    let state: FindStatus.State
    switch phase {
    case .idle: state = .idle
    case .recovering: state = .recovering
    case .saving: state = .starting
    case .ringing: state = .ringing
    case .stopping: state = .stopping
    }
    return FindStatus(
      state: state, requesters: requesters, notifying: notify, deadline: deadline,
      level: raised ? raisedLevel : nil, headphones: headphones, lastEnd: lastEnd,
      outstandingNotices: outstanding.count)
  }

  /// Notices sent and not yet answered, by device.
  public var outstandingNotices: [NoticeID: DeviceID] { outstanding }

  public struct Step: Equatable, Sendable {
    public var actions: [FindAction] = []
    public var reply: FindReply?
  }

  public mutating func handle(_ event: FindEvent, now: MonotonicTime) -> Step {
    let before = status
    var step = Step()
    switch event {
    case .recover(let leftover):
      recover(leftover, now: now, &step)
    case .deviceStart(let device):
      step.reply = start(device, mild: false, now: now, &step)
    case .deviceStartMild(let device):
      step.reply = start(device, mild: true, now: now, &step)
    case .deviceStop(let device):
      step.reply = stopRequest(device, now: now, &step)
    case .found:
      step.reply = found(now: now, &step)
    case .timerFired:
      if let deadline, now >= deadline, phase == .saving || phase == .ringing {
        step.actions.append(.log("no one found the laptop in \(settings.timeout) s"))
        end(.timeout, now: now, &step)
      }
    case .volumeSaved(let setting, let hp):
      guard saveInFlight else { break }
      saveInFlight = false
      saved = setting
      headphones = hp
      if phase == .saving {
        ring(&step)
      } else {
        advanceStop(now: now, &step)
      }
    case .volumeSaveFailed(let why):
      guard saveInFlight else { break }
      saveInFlight = false
      saved = nil
      if phase == .saving {
        step.actions.append(
          .log("cannot save the volume (\(why)): ringing at the current volume"))
        ring(&step)
      } else {
        advanceStop(now: now, &step)
      }
    case .alertFailed(let why):
      if alertPlaying {
        alertPlaying = false
        step.actions.append(.log("the alert failed: \(why)"))
        if phase == .ringing { end(.alertFailed, now: now, &step) }
      } else if stopRequested {
        stopRequested = false
        advanceStop(now: now, &step)
      }
    case .alertStopped:
      guard stopRequested else { break }
      stopRequested = false
      advanceStop(now: now, &step)
    case .volumeRestored:
      guard restoring else { break }
      restoring = false
      advanceStop(now: now, &step)
    case .volumeRestoreFailed(let why):
      guard restoring else { break }
      restoring = false
      unrestored = saved
      saved = nil
      step.actions.append(
        .log("cannot restore the volume (\(why)); it stays saved and is restored at the next start")
      )
      advanceStop(now: now, &step)
    case .noticeResult(let id, let result):
      if let device = outstanding.removeValue(forKey: id) {
        step.actions.append(.reportNoticeResult(id, device, result))
        step.reply = .noticeRecorded
      } else {
        step.reply = .unknownNotice
      }
    case .deviceGone(let device):
      for (id, d) in outstanding.sorted(by: { $0.key < $1.key }) where d == device {
        outstanding[id] = nil
        step.actions.append(.reportNoticeResult(id, d, .failed("the device disconnected")))
      }
    }
    if status != before { step.actions.append(.statusChanged) }
    return step
  }

  // MARK: Requests

  private mutating func start(
    _ device: DeviceID, mild isMild: Bool, now: MonotonicTime, _ step: inout Step
  ) -> FindReply {
    if requesters.contains(device) {
      // A mild request that becomes a high one raises; never the reverse.
      if !isMild, mild.remove(device) != nil, phase == .ringing { raiseIfWanted(&step) }
      return .alreadyRequested
    }
    requesters.append(device)
    if isMild { mild.insert(device) }
    switch phase {
    case .idle:
      begin(now: now, &step)
      return .ringing
    case .saving:
      return .joined
    case .ringing:
      raiseIfWanted(&step)
      return .joined
    case .recovering, .stopping:
      return .queued
    }
  }

  private mutating func stopRequest(_ device: DeviceID, now: MonotonicTime, _ step: inout Step)
    -> FindReply
  {
    guard let index = requesters.firstIndex(of: device) else { return .notRequested }
    requesters.remove(at: index)
    mild.remove(device)
    if (phase == .saving || phase == .ringing) && requesters.isEmpty {
      end(.deviceStop, now: now, &step)
      return .stopped
    }
    return .withdrawn
  }

  private mutating func found(now: MonotonicTime, _ step: inout Step) -> FindReply {
    switch phase {
    case .saving, .ringing:
      let devices = requesters
      end(.found, now: now, &step)
      return .stopping(notify: devices)
    case .idle, .recovering, .stopping:
      // Queued requests are answered too: the user has the laptop.
      if !requesters.isEmpty {
        let devices = requesters
        notify += devices
        requesters = []
        mild = []
        lastEnd = .found
        if phase == .idle { advanceStop(now: now, &step) }
        return .stopping(notify: devices)
      }
      return notify.isEmpty ? .notRinging : .alreadyStopping
    }
  }

  // MARK: Ringing

  private mutating func recover(_ leftover: VolumeSetting, now: MonotonicTime, _ step: inout Step) {
    guard phase == .idle, saved == nil else { return }
    step.actions.append(.log("restoring the volume saved before an interrupted alert: \(leftover)"))
    phase = .recovering
    saved = leftover
    raised = true
    advanceStop(now: now, &step)
  }

  private mutating func begin(now: MonotonicTime, _ step: inout Step) {
    phase = .saving
    lastEnd = nil
    let d = now.adding(seconds: settings.timeout)
    deadline = d
    step.actions.append(.timer(.arm(.timeout, at: d)))
    if let carried = unrestored {
      // The state file still holds the user's setting from before.
      unrestored = nil
      saved = carried
      ring(&step)
    } else {
      saveInFlight = true
      step.actions.append(.saveUserVolume)
    }
  }

  private mutating func ring(_ step: inout Step) {
    phase = .ringing
    if let saved {
      let full = settings.ringLevel(headphones: headphones)
      if wantsRaise {
        raised = true
        raisedLevel = full
        step.actions.append(.raiseVolume(full))
      } else if saved.muted || saved.level > full {
        // Mild: the user's own level, made audible, never louder than high.
        let level = min(saved.level, full)
        raised = true
        raisedLevel = level
        step.actions.append(.raiseVolume(level))
      }
    }
    alertPlaying = true
    step.actions.append(.startAlert)
  }

  /// Some open request is not mild.
  private var wantsRaise: Bool { requesters.contains { !mild.contains($0) } }

  /// While ringing mildly: a request that wants the raise has arrived.
  private mutating func raiseIfWanted(_ step: inout Step) {
    guard saved != nil, wantsRaise else { return }
    let full = settings.ringLevel(headphones: headphones)
    guard raisedLevel != full else { return }
    raised = true
    raisedLevel = full
    step.actions.append(.raiseVolume(full))
  }

  /// Ends the ring: silence, then restore, then notices (`advanceStop`).
  private mutating func end(_ reason: FindEndReason, now: MonotonicTime, _ step: inout Step) {
    phase = .stopping
    lastEnd = reason
    if deadline != nil {
      deadline = nil
      step.actions.append(.timer(.cancel(.timeout)))
    }
    if reason == .found { notify += requesters }
    requesters = []
    mild = []
    if alertPlaying {
      alertPlaying = false
      stopRequested = true
      step.actions.append(.stopAlert)
    }
    advanceStop(now: now, &step)
  }

  /// Moves the stop along one confirmed step at a time.
  private mutating func advanceStop(now: MonotonicTime, _ step: inout Step) {
    guard phase == .stopping || phase == .recovering || phase == .idle else { return }
    if stopRequested || saveInFlight || restoring { return }
    if raised, let saved {
      raised = false
      raisedLevel = nil
      restoring = true
      step.actions.append(.restoreVolume(saved))
      return
    }
    raised = false
    raisedLevel = nil
    if saved != nil {
      saved = nil
      step.actions.append(.forgetSavedVolume)
    }
    // Silent and restored: only now do notices go out.
    for device in notify {
      let id = nextNotice
      nextNotice += 1
      outstanding[id] = device
      step.actions.append(.sendNotice(id, device))
    }
    notify = []
    phase = .idle
    if !requesters.isEmpty { begin(now: now, &step) }
  }
}
