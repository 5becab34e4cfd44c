import EarshotCore

/// Publishes Earshot's state to MQTT and turns command topics into
/// commands. Every retained message is also kept here, so after a
/// reconnect (or a broker restart that lost its store) everything is
/// published again: nothing that is retained is lost.
public final class MQTTBridge {
  public struct Options: Sendable {
    public var client: MQTTClient.Options
    public var topics: MQTTTopics
    public var discovery: HomeAssistantDiscovery?
    public var qos: Int32 = 1
    public var retain = true
    /// Seconds between two publications of one beacon's distance.
    public var beaconInterval: Double = 10
    /// Seconds per window of the malformed-command log (`LogLimiter`).
    public var badInputLogInterval = 60.0

    public init(client: MQTTClient.Options, topics: MQTTTopics, discovery: HomeAssistantDiscovery?)
    {
      self.client = client
      self.topics = topics
      self.discovery = discovery
    }
  }

  public var onCommand: ((MQTTCommand) -> Void)?
  public var onLog: ((String) -> Void)?

  private let settings: Options
  private let loop: EventLoop
  private let client: MQTTClient
  private var deferredClears: EventLoop.TimerID?
  /// What the broker should hold; every publication comes from it.
  private var shown: MQTTShownState
  private var limiter: BeaconRateLimiter
  /// Malformed commands, said bounded per topic: the first line, then a
  /// summary a minute (anyone who may publish on the broker can send them).
  private var badInput: LimitedLog!
  static let malformedCommand = LogLimiter.Kind("malformed_command") { n, topic, window in
    "mqtt: ignored \(LogLimiter.Kind.count(n, "more malformed command")) on \(topic) \(window)"
  }

  public init(loop: EventLoop, settings: Options) throws {
    var options = settings.client
    options.will = (settings.topics.availability, "offline")
    self.settings = settings
    self.loop = loop
    limiter = BeaconRateLimiter(interval: settings.beaconInterval)
    shown = MQTTShownState(
      availabilityTopic: settings.topics.availability, eventsTopic: settings.topics.events,
      retain: settings.retain)
    client = try MQTTClient(loop: loop, options: options)
    badInput = LimitedLog(loop: loop, interval: settings.badInputLogInterval) { [unowned self] in
      self.onLog?($0)
    }
    client.onConnect = { [weak self] in self?.connected() }
    client.onDisconnect = { [weak self] in self?.shown.disconnected() }
    client.onMessage = { [weak self] topic, payload in self?.received(topic, payload) }
    client.onLog = { [weak self] line in self?.onLog?(line) }
    if let d = settings.discovery {
      send(shown.show(.controls, d.controls().map { .init($0.topic, $0.payload, .discovery) }))
      send(shown.show(.findPhone, [.init(d.findPhone().topic, d.findPhone().payload, .discovery)]))
    }
  }

  public var isConnected: Bool { client.isConnected }

  /// Malformed commands received since the start (each counted, few logged).
  public var malformedCommands: Int { badInput.totals[Self.malformedCommand.name] ?? 0 }

  /// A command that parsed but names nothing here (a tag no one has): said
  /// bounded, with the malformed ones of its topic.
  public func ignoredCommand(on topic: String, _ line: @autoclosure () -> String) {
    badInput.note(Self.malformedCommand, from: topic, line: line)
  }

  /// The entities shown now (tests; what a reload may remove).
  public var entities: Set<MQTTEntity> { shown.entities }

  public func start() {
    client.subscribe(settings.topics.commandPrefix + "+")
    client.subscribe(settings.topics.ringTagPrefix + "+")
    client.start()
  }

  /// Says `offline` and disconnects (a clean stop; kill -9 leaves it to the will).
  public func close() {
    send(shown.stopping())
    client.close()
    badInput.finish()
  }

  // MARK: What Earshot reports

  /// `tracksDevices`: an identity region, which is also a device_tracker.
  /// Unknown is said by the region's availability alone: its state topic
  /// keeps the last known state (Home Assistant has no payload for unknown).
  public func regionState(_ region: String, state: String, tracksDevices: Bool = false) {
    let t = settings.topics
    if let d = settings.discovery {
      let m = d.region(region)
      send(shown.show(.region(region), [.init(m.topic, m.payload, .discovery)]))
      if tracksDevices {
        let m = d.deviceTracker(region)
        send(shown.show(.tracker(region), [.init(m.topic, m.payload, .discovery)]))
      }
    }
    var items: [MQTTShownState.Item] = []
    if state != "unknown" { items.append(.init(t.regionState(region), state, .state)) }
    items.append(
      .init(t.regionAvailability(region), state == "unknown" ? "offline" : "online", .availability))
    send(shown.show(.region(region), items))
  }

  /// Takes a region off the broker and out of Home Assistant (a reload
  /// removed it): its discovery configs, state and availability are cleared.
  public func removeRegion(_ region: String) {
    send(shown.remove(.tracker(region)))
    send(shown.remove(.region(region)))
  }

  /// Takes a beacon's distance sensor away (no region tracks it any more).
  public func removeBeacon(_ id: TrackedID) {
    send(shown.remove(.beacon(id)))
    limiter.forget(id)
  }

  /// The beacons with a distance sensor now.
  public var shownBeacons: [TrackedID] {
    shown.entities.compactMap { if case .beacon(let id) = $0 { id } else { nil } }
  }

  /// A region event or find-phone state change, as a JSON line; kept
  /// while the broker is away and sent after the next `online`.
  public func event(_ json: String) {
    send(shown.event(json))
  }

  /// A ranged beacon; rate-limited per beacon except on proximity changes.
  public func beacon(
    _ id: TrackedID, distance: Double?, proximity: String, rssi: Int?, at time: Double
  ) {
    guard limiter.shouldPublish(id, proximity: proximity, at: time) else { return }
    var items: [MQTTShownState.Item] = []
    if let d = settings.discovery {
      let m = d.beacon(id)
      items.append(.init(m.topic, m.payload, .discovery))
    }
    var j = JSONLine()
    if let distance { j.add("distance", distance, decimals: 2) } else { j.addNull("distance") }
    j.add("proximity", proximity)
    if let rssi { j.add("rssi", rssi) }
    id.addFields(to: &j)
    items.append(.init(settings.topics.beaconState(id), j.line, .state))
    send(shown.show(.beacon(id), items))
  }

  /// A beacon's telemetry (retained), with its battery and temperature
  /// sensors the first time; it belongs to the beacon, so removing the
  /// beacon removes them too.
  public func telemetry(_ id: TrackedID, _ reading: BeaconTelemetry) {
    var items: [MQTTShownState.Item] = []
    if let d = settings.discovery {
      items += d.beaconTelemetry(id, temperature: reading.temperature != nil).map {
        .init($0.topic, $0.payload, .discovery)
      }
    }
    var j = JSONLine()
    reading.addFields(to: &j)
    j.add("t", reading.shown.seconds, decimals: 3)
    items.append(.init(settings.topics.beaconTelemetry(id), j.line, .state))
    send(shown.show(.beacon(id), items))
  }

  /// A message of a stream (rooms' sightings): QoS 0, never retained,
  /// dropped while the broker is away.
  public func stream(_ topic: String, _ payload: String) {
    client.publish(topic, payload, qos: 0, retain: false)
  }

  /// A retained status message of another part (rooms' agent record),
  /// retained whatever `[mqtt] retain` says and published again after
  /// every reconnect.
  public func status(_ topic: String, _ payload: String) {
    send(shown.show(.record(topic), [.init(topic, payload, .state)]))
  }

  /// This agent's `online`/`offline` topic (its last will says `offline`).
  public var availabilityTopic: String { settings.topics.availability }
  /// The topics this bridge publishes and listens on.
  public var topics: MQTTTopics { settings.topics }

  public func volume(_ level: Double, muted: Bool) {
    send(
      shown.show(
        .controls,
        [
          .init(settings.topics.volumeState, String(Int((level * 100).rounded())), .state),
          .init(settings.topics.muteState, muted ? "ON" : "OFF", .state),
        ]))
  }

  /// Sends the volume and mute states again: a refused command leaves
  /// Home Assistant's number and switch where the agent really is.
  public func resendVolume() {
    send(shown.resend(settings.topics.volumeState))
    send(shown.resend(settings.topics.muteState))
  }

  /// A tag's link state and battery; its Home Assistant entities the first time.
  public func tag(_ name: String, state: String, battery: Int?) {
    var items: [MQTTShownState.Item] = []
    if let d = settings.discovery {
      items += d.tag(name).map { .init($0.topic, $0.payload, .discovery) }
    }
    items.append(.init(settings.topics.tagState(name), state, .state))
    if let battery {
      items.append(.init(settings.topics.tagBattery(name), String(battery), .state))
    }
    send(shown.show(.tag(name), items))
  }

  /// The live scan's duty now and its attributes (`status`'s `scan`); the
  /// sensor's discovery config goes with the first.
  public func scanDuty(_ report: ScanDutyReport) {
    var items: [MQTTShownState.Item] = []
    if let d = settings.discovery {
      items.append(.init(d.scanDuty().topic, d.scanDuty().payload, .discovery))
    }
    items.append(.init(settings.topics.scanDuty, report.percent, .state))
    items.append(.init(settings.topics.scanAttributes, report.json.encoded, .state))
    send(shown.show(.scanDuty, items))
  }

  /// Find-phone's state, and who asked (the sensor's attributes).
  public func findState(_ state: String, requesters: [String] = []) {
    var j = JSONLine()
    j.addRaw("requesters", "[" + requesters.map(JSONLine.quoted).joined(separator: ",") + "]")
    send(
      shown.show(
        .findPhone,
        [
          .init(settings.topics.findState, state, .state),
          .init(settings.topics.findAttributes, j.line, .state),
        ]))
  }

  // MARK: Internals

  private func send(_ messages: [MQTTShownState.Message]) {
    for m in messages {
      client.publish(m.topic, m.payload, qos: settings.qos, retain: m.retain)
    }
    scheduleDeferredClears()
  }

  /// A removed entity's state topics are cleared a second after its
  /// discovery config (MQTTShownState says why).
  private func scheduleDeferredClears() {
    guard shown.hasDeferredClears, shown.isConnected, deferredClears == nil else { return }
    deferredClears = loop.after(seconds: 1) { [weak self] in
      guard let self else { return }
      self.deferredClears = nil
      self.send(self.shown.takeDeferredClears())
    }
  }

  private func connected() {
    let dropped = shown.takeDroppedEvents()
    send(shown.connected())
    if dropped > 0 {
      onLog?(
        "mqtt: \(dropped) event(s) raised while the broker was away were dropped "
          + "(the oldest; \(shown.eventCapacity) are kept)")
    }
  }

  private func received(_ topic: String, _ payload: [UInt8]) {
    switch MQTTCommand.parse(topic: topic, payload: payload, topics: settings.topics) {
    case .success(let command): onCommand?(command)
    case .failure(let error):
      // The topic is the source (MQTT does not say who published); the
      // limiter bounds how many it tracks (ring_tag/+ takes any name).
      badInput.note(Self.malformedCommand, from: topic) { "mqtt: \(error)" }
    }
  }
}
