import EarshotCore

/// Carries out the find-phone coordinator's actions on the real parts (the
/// alert, the mixer, the saved-volume file, the device links, a loop timer)
/// and feeds their results back as events. Every link (socket, BLE, MQTT)
/// and the user's "found" go through `submit`.
public final class FindPhoneDriver {
  private var coordinator: FindPhoneCoordinator
  private let loop: EventLoop
  private let alert: AlertOutput?
  private let volume: VolumeControl?
  private let savedVolume: SavedVolumeFile
  private var savedNotDurable = false
  private var links: [String: DeviceLink] = [:]
  private let timers: LoopTimers<FindTimer>
  private var queue: [FindEvent] = []
  private var draining = false
  private var warnedSilent = false

  public var onLog: ((String) -> Void)?
  /// The status changed (for `find` subscribers).
  public var onStatusChanged: ((FindStatus) -> Void)?
  /// What became of a notice (for `find` subscribers and the log).
  public var onNoticeResult: ((NoticeID, DeviceID, NoticeResult) -> Void)?
  /// Find-phone set the volume (raise or restore).
  public var onVolumeSet: ((VolumeSetting) -> Void)?

  public init(
    loop: EventLoop, settings: FindPhoneConfig, alert: AlertOutput?, volume: VolumeControl?,
    savedVolume: SavedVolumeFile
  ) {
    self.loop = loop
    coordinator = FindPhoneCoordinator(settings: settings)
    self.alert = alert
    self.volume = volume
    self.savedVolume = savedVolume
    timers = LoopTimers(loop: loop)
    timers.onFire = { [weak self] _ in self?.submit(.timerFired) }
    alert?.onFailure = { [weak self] why in self?.submit(.alertFailed(why)) }
  }

  public func add(_ link: DeviceLink) { links[link.linkName] = link }

  public var status: FindStatus { coordinator.status }

  /// `[find-phone]` volume, headphone volume and timeout from a reloaded
  /// config: from the next ring on.
  public var settings: FindPhoneConfig {
    get { coordinator.settings }
    set { coordinator.settings = newValue }
  }
  public func owner(of notice: NoticeID) -> DeviceID? { coordinator.outstandingNotices[notice] }

  /// At start-up: a saved volume left behind means an alert was interrupted.
  public func recoverLeftover() {
    do {
      if let leftover = try savedVolume.load() { submit(.recover(leftover)) }
    } catch {
      onLog?("\(error)")
    }
  }

  /// Runs an event through the coordinator now, with the actions it causes
  /// and their results. Returns the reply; nil when called from inside an
  /// action (the event is then queued and handled right after).
  @discardableResult
  public func submit(_ event: FindEvent) -> FindReply? {
    queue.append(event)
    guard !draining else { return nil }
    draining = true
    defer { draining = false }
    var first: FindReply? = nil
    var isFirst = true
    while !queue.isEmpty {
      let e = queue.removeFirst()
      let step = coordinator.handle(e, now: Clock.now())
      if isFirst {
        first = step.reply
        isFirst = false
      }
      for action in step.actions { perform(action) }
    }
    // The saved volume goes to disk once the alert sounds, not before: an
    // fsync on a busy disk would delay the first sample by tens of ms.
    if savedNotDurable {
      savedNotDurable = false
      if !savedVolume.makeDurable() { onLog?("find-phone: cannot sync \(savedVolume.path)") }
    }
    return first
  }

  private func feedback(_ e: FindEvent) { queue.append(e) }

  private func perform(_ action: FindAction) {
    switch action {
    case .saveUserVolume:
      guard let volume else {
        feedback(.volumeSaveFailed("no mixer is available"))
        return
      }
      do {
        let v = try volume.currentVolume()
        try savedVolume.save(v)
        savedNotDurable = true
        feedback(.volumeSaved(v, headphones: volume.outputIsHeadphones()))
      } catch {
        feedback(.volumeSaveFailed("\(error)"))
      }
    case .raiseVolume(let level):
      let v = VolumeSetting(level: level, muted: false)
      do {
        try volume?.setVolume(v)
        onVolumeSet?(v)
      } catch {
        onLog?("find-phone: cannot raise the volume: \(error)")
      }
    case .startAlert:
      guard let alert else {
        if !warnedSilent {
          onLog?("find-phone: no alert output is configured in this build; ringing silently")
          warnedSilent = true
        }
        return
      }
      do { try alert.startAlert() } catch { feedback(.alertFailed("\(error)")) }
    case .stopAlert:
      alert?.stopAlert()
      feedback(.alertStopped)
    case .restoreVolume(let v):
      guard let volume else {
        feedback(.volumeRestoreFailed("no mixer is available"))
        return
      }
      do {
        try volume.setVolume(v)
        onVolumeSet?(v)
        feedback(.volumeRestored)
      } catch {
        feedback(.volumeRestoreFailed("\(error)"))
      }
    case .forgetSavedVolume:
      savedVolume.remove()
      savedNotDurable = false
    case .timer(let action): timers.apply(action)
    case .sendNotice(let id, let device):
      onLog?("find-phone: sending the phone-found notice \(id) to \(device)")
      if links[device.link]?.deliverNotice(id, to: device) != true {
        feedback(.noticeResult(id, .failed("\(device) is not connected")))
      }
    case .reportNoticeResult(let id, let device, let result):
      switch result {
      case .accepted: onLog?("find-phone: \(device) accepted notice \(id)")
      case .failed(let why): onLog?("find-phone: notice \(id) to \(device) failed: \(why)")
      }
      onNoticeResult?(id, device, result)
    case .log(let message):
      onLog?("find-phone: \(message)")
    case .statusChanged:
      onStatusChanged?(coordinator.status)
    }
  }
}
