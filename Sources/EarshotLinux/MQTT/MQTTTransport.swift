import EarshotCore

/// MQTT as a transport: region states, events, beacons, find-phone state
/// and volume go out through the bridge; ring, found, volume and mute come
/// in on command topics and become device requests. Outcomes have no one
/// to answer on a broker: refusals are logged.
public final class MQTTTransport: AgentTransport {
  public let name = "mqtt"
  public let bridge: MQTTBridge
  public let link = MQTTDeviceLink()
  public var deviceLink: DeviceLink? { link }
  private unowned let agent: Daemon

  public init(bridge: MQTTBridge, agent: Daemon) {
    self.bridge = bridge
    self.agent = agent
    bridge.onLog = { [unowned agent] in agent.log($0) }
    bridge.onCommand = { [unowned self] in self.command($0) }
    link.onNotice = { [unowned self] id, device in
      // Home Assistant has no one to answer: the link takes the notice.
      bridge.event(ControlProtocol.noticeEvent(id, to: device))
      self.agent.perform(.noticeResult(id, .accepted), from: Requester(device: device)) { _ in }
    }
  }

  /// Publishes what is known now, then connects (in the background, with backoff).
  public func start() {
    findChanged(agent.find.status)
    if let v = agent.currentVolume() {
      bridge.show(MQTTEntities.controls, VolumeShown(level: v.level, muted: v.muted))
    }
    for t in agent.tags?.snapshots ?? [] {
      bridge.show(MQTTEntities.tag, TagShown(t.name, state: t.state, battery: t.battery))
    }
    for r in agent.monitor?.regionStates ?? [] {
      bridge.show(
        MQTTEntities.region,
        RegionShown(
          r.region, r.state, tracksDevices: agent.monitor?.tracksDevices(region: r.region) ?? false
        ))
    }
    showTrackers()
    bridge.start()
    publishScanDuty(after: 1)
  }

  /// The trackers following now, when `[trackers] mqtt` says so: at the
  /// start, when one starts to follow, when one is trusted or cleared, and
  /// every `trackersSeconds` (last seen moves; a timed trust runs out).
  public static let trackersSeconds = 60.0
  private var trackersTimer: EventLoop.TimerID?

  private func showTrackers() {
    guard let trackers = agent.trackers, trackers.publishesMQTT else { return }
    bridge.show(MQTTEntities.trackers, trackers.followingShown)
    if trackersTimer == nil {
      trackersTimer = agent.loop.after(seconds: Self.trackersSeconds) { [weak self] in
        self?.trackersTimer = nil
        self?.showTrackers()
      }
    }
  }

  /// The scan duty sensor, while the agent scans live: every
  /// `scanDutySeconds` (the duty moves with every decision; the sensor
  /// shows it as sampled, the mean duties are in its attributes).
  public static let scanDutySeconds = 30.0
  private var scanTimer: EventLoop.TimerID?

  private func publishScanDuty(after seconds: Double) {
    scanTimer = agent.loop.after(seconds: seconds) { [weak self] in
      guard let self else { return }
      if let report = self.agent.monitor?.scanReport {
        self.bridge.show(MQTTEntities.scanDuty, report)
      }
      self.publishScanDuty(after: Self.scanDutySeconds)
    }
  }

  /// Says `offline` and disconnects.
  public func stop() {
    if let scanTimer { agent.loop.cancel(scanTimer) }
    scanTimer = nil
    if let trackersTimer { agent.loop.cancel(trackersTimer) }
    trackersTimer = nil
    bridge.close()
  }

  private func command(_ command: MQTTCommand) {
    let request: DeviceRequest
    let what: String
    switch command {
    case .ring: (request, what) = (.findStart, "ring")
    case .found: (request, what) = (.found, "found")
    case .setVolume(let level):
      (request, what) = (.volumeSet(level), "volume \(Int((level * 100).rounded()))")
    case .setMute(let muted): (request, what) = (.volumeMute(muted), muted ? "mute" : "unmute")
    case .ringTag(let slug, let level):
      guard let tag = agent.tags?.tagName(slug: slug) else {
        bridge.ignoredCommand(
          on: bridge.topics.ringTagPrefix + slug,
          "mqtt: ring_tag/\(slug) ignored: no [tag] has that name")
        return
      }
      (request, what) = (.ring(target: tag, level: level), "ring_tag \(tag) \(level)")
    }
    agent.perform(request, from: Requester(device: link.device, name: "mqtt")) {
      [unowned agent, bridge] outcome in
      switch outcome {
      case .refused(let e) where e.code == .notRinging: agent.log("mqtt: \(what): \(e.message)")
      case .refused(let e):
        agent.log("mqtt: \(what) ignored: \(e.message)")
        // Home Assistant's number and switch go back to what is true.
        if case .setVolume = command { bridge.resendVolume() }
        if case .setMute = command { bridge.resendVolume() }
      case .rang(_, let device, _): agent.log("mqtt: \(what): written to \(device)")
      case .find(let reply, _):
        agent.log("mqtt: \(what): \(reply.map { ControlProtocol.json($0).encoded } ?? "queued")")
      default: break
      }
    }
  }

  public func agentEvent(_ event: AgentEvent) {
    switch event {
    case .find(let status):
      findChanged(status)
      bridge.event(
        ControlProtocol.event(
          "find", [("find", ControlProtocol.json(status, now: Clock.now()))]))
    case .noticeResult(let id, let device, let result):
      bridge.event(ControlProtocol.noticeResultEvent(id, device, result))
    case .volume(let v):
      bridge.show(MQTTEntities.controls, VolumeShown(level: v.level, muted: v.muted))
    case .tag(let e):
      bridge.event(ControlProtocol.tagEvent(e))
      if let t = agent.tags?.snapshots.first(where: { $0.name == e.tag }) {
        bridge.show(MQTTEntities.tag, TagShown(t.name, state: t.state, battery: t.battery))
      }
    case .monitor(let e):
      switch e.kind {
      case .range:
        // beacon_interval counts on the monitor's decision clock (live: the
        // monotonic clock, which no step of the wall clock moves; a replay:
        // capture time), as the event was decided, whenever this runs.
        // Devices have their region's device_tracker, not a sensor of their own.
        for b in e.beacons {
          guard let id = b.id.beacon else { continue }
          bridge.beacon(
            BeaconShown(
              id, distance: b.accuracy, proximity: b.proximity,
              rssi: b.rssi.map { Int($0.rounded()) }), at: e.decided)
        }
      case .state, .enter, .exit:
        bridge.show(
          MQTTEntities.region,
          RegionShown(
            e.region, e.state,
            tracksDevices: agent.monitor?.tracksDevices(region: e.region) ?? false))
        bridge.event(MonitorEventFormatter.json(e))
      }
    case .reloaded(let regions):
      reloaded(regions)
    case .telemetry(let id, let reading):
      bridge.show(MQTTEntities.telemetry, (id, reading))
    case .trackerFollowing(let row):
      // Strangers' trackers leave the machine only when configured.
      guard let trackers = agent.trackers, trackers.publishesMQTT else { break }
      let shown = TrackerShown(
        row, firstSeen: trackers.wall(row.firstSeen), lastSeen: trackers.wall(row.lastSeen))
      showTrackers()
      bridge.event(shown.eventPayload, onEntityTopic: MQTTEntities.trackerEventTopic)
    case .trackersChanged:
      showTrackers()
    }
  }

  private func findChanged(_ status: FindStatus) {
    bridge.show(
      MQTTEntities.findPhone,
      FindShown(status.state, requesters: status.requesters.map(\.description)))
  }

  /// Regions a reload removed leave the broker and Home Assistant, and so
  /// do beacons no remaining region tracks.
  private func reloaded(_ regions: [RegionConfig]) {
    let names = Set(regions.map(\.name))
    for entity in bridge.entities {
      switch entity {
      case .region(let name) where !names.contains(name):
        bridge.removeRegion(name)
        agent.log("mqtt: region \(name) removed from the broker and Home Assistant")
      case .beacon(let id) where !regions.contains(where: { $0.matches(id) }):
        bridge.removeBeacon(id)
      default: break
      }
    }
  }
}

/// The device behind MQTT's "Ring this laptop" button (`mqtt:button`):
/// a ring starts find-phone as this device, and its phone-found notice is
/// handed to `onNotice`, which publishes and accepts it.
public final class MQTTDeviceLink: DeviceLink {
  public let linkName = "mqtt"
  public let device = DeviceID(link: "mqtt", name: "button")
  var onNotice: ((NoticeID, DeviceID) -> Void)?

  public init() {}

  public func deliverNotice(_ id: NoticeID, to device: DeviceID) -> Bool {
    guard let onNotice else { return false }
    onNotice(id, device)
    return true
  }
}
