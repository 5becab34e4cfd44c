import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// The optional parts of the agent. Attaching one stores it and gives it
/// its status section; nothing here depends on what else is attached, or
/// in which order: the parts meet only at `perform` and `dispatch`.
extension Daemon {
  /// Region monitoring: its events go to every transport, it shows its
  /// sections in `status`, and it stops (restoring the scan, saving the
  /// states) when the daemon does.
  public func attach(monitor: AgentMonitor) {
    precondition(self.monitor == nil, "one region monitor per agent")
    self.monitor = monitor
    for (section, value) in monitor.statusSections { statusSections[section] = value }
    monitor.observe { [unowned self] e in self.dispatch(.monitor(e)) }
    monitor.observeTelemetry { [unowned self] id, reading in
      self.dispatch(.telemetry(id, reading))
    }
  }

  /// The remote shutter: `shutter` requests go to this driver; each is
  /// answered with the state the camera reached.
  public func attach(shutter driver: ShutterDriver) {
    precondition(shutter == nil, "one shutter per agent")
    shutter = driver
    driver.onLog = { [unowned self] in self.log("shutter: \($0)") }
    driver.onReply = { [unowned self] in self.shutterReplied($0) }
    statusSections[.shutter] = {
      .object([
        ("photo_mode", .bool(driver.inPhotoMode)),
        (
          "device",
          .string(
            driver.settings.captureCommand == nil ? driver.settings.device : "capture_command")
        ),
      ])
    }
  }

  /// The Home Assistant Bluetooth proxy: shown in `status` (clients, what
  /// it forwarded and dropped); stopped with the loop by its owner.
  public func attach(esphome proxy: ESPHomeProxy) {
    statusSections[.esphome] = { proxy.statusJSON }
  }

  /// The tracker watch: shown in `status` (the trackers it keeps).
  public func attach(trackers driver: TrackerWatchDriver) {
    trackers = driver
    statusSections[.trackers] = { driver.statusJSON }
  }

  /// Media: play requests go to this driver, each answered by its one
  /// completion; pause, resume and stop act on what plays; find-phone
  /// pauses it while ringing.
  /// `libraryProblems`: what scanning the library met (shown in `status`).
  public func attach(media driver: MediaDriver, libraryProblems: [String] = []) {
    precondition(media == nil, "one media player per agent")
    media = driver
    driver.onLog = { [unowned self] in self.log("media: \($0)") }
    driver.onCompletion = { [unowned self] id, response, item in
      guard let reply = self.pending.takeMediaReply(id) else {
        self.log("media: request \(id) completed (\(response.name)) with nobody waiting")
        return
      }
      reply(.mediaCompleted(id, response, item))
    }
    statusSections[.media] = {
      var fields = ControlProtocol.json(driver.phase).objectFields ?? []
      fields.append(
        (
          "library",
          .object([
            ("path", .string(driver.settings.library)),
            ("titles", .int(driver.library.items.count)),
            ("problems", .array(libraryProblems.map { .string($0) })),
          ])
        ))
      return .object(fields)
    }
    preemptMedia(find.status)
  }

  /// Key-finder tags and `ring`: a transport (presses, events) that also
  /// serves `ring` requests; its section in `status` when tags are set up.
  public func attach(tags transport: TagTransport, showStatus: Bool) {
    precondition(tags == nil, "one tag part per agent")
    tags = transport
    add(transport)
    if showStatus { statusSections[.tags] = { transport.statusJSON } }
  }

  /// The proximity log: find-phone, notices and volume changes (the
  /// monitor records its own); closed last when the daemon stops.
  public func attach(log writer: ProximityLogWriter) {
    precondition(proximityLog == nil, "one proximity log per agent")
    proximityLog = writer
  }

  /// Every section of `status`, in `StatusSection` order.
  func statusJSON() -> JSONValue {
    var fields: [(String, JSONValue)] = []
    for section in StatusSection.allCases {
      let value: JSONValue?
      switch section {
      case .agent:
        value = .object([
          ("version", .string(version)), ("pid", .int(getpid())),
          ("uptime_s", .number(Double((Clock.monotonicNanos() - startedAt) / 1_000_000) / 1000)),
          ("clients", .int(control.clientCount)),
          ("subscribers", .int(control.subscriberCount)),
        ])
      case .find: value = ControlProtocol.json(find.status, now: Clock.now())
      case .volume: value = currentVolume().map(ControlProtocol.json) ?? section.absent
      default: value = statusSections[section]?() ?? section.absent
      }
      if let value { fields.append((section.rawValue, value)) }
    }
    return .object(fields)
  }

  /// Find-phone preempts media: paused when the ring starts, resumed once
  /// the alert is silent and the volume restored.
  func preemptMedia(_ status: FindStatus) {
    guard let media else { return }
    let active = [.starting, .ringing, .stopping].contains(status.state)
    guard active != mediaPausedForFind else { return }
    mediaPausedForFind = active
    if active { media.findPhoneStarted() } else { media.findPhoneEnded() }
  }

  /// Find-phone's course in the proximity log: started, then found or
  /// stopped (with why).
  func recordFind(_ status: FindStatus) {
    defer { lastFindState = status.state }
    guard let proximityLog, status.state != lastFindState else { return }
    let t = Clock.wallNow()
    let device = status.requesters.map(\.description).joined(separator: " ")
    if status.state == .ringing {
      proximityLog.record(.findPhone(FindPhoneLogEvent(t: t, kind: .started, device: device)))
    } else if status.state == .idle, lastFindState != .recovering {
      let found = status.lastEnd == .found
      proximityLog.record(
        .findPhone(
          FindPhoneLogEvent(
            t: t, kind: found ? .found : .stopped, device: device,
            detail: status.lastEnd?.rawValue)))
    }
  }

  func recordNotice(_ id: NoticeID, _ device: DeviceID, _ result: NoticeResult) {
    let detail: String
    switch result {
    case .accepted: detail = "accepted"
    case .failed(let why): detail = "failed: \(why)"
    }
    proximityLog?.record(
      .findPhone(
        FindPhoneLogEvent(
          t: Clock.wallNow(), kind: .notice, device: device.description, detail: detail)))
  }
}
