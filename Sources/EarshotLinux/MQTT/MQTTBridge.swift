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

  /// Shows a state of an entity kind (a row of `MQTTEntities`): its Home
  /// Assistant discovery configs the first time, then its retained topics.
  public func show<State>(_ kind: MQTTEntityKind<State>, _ state: State) {
    for group in kind.items(state, topics: settings.topics, discovery: settings.discovery) {
      send(shown.show(group.entity, group.items))
    }
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

  /// An event of an entity on its own topic (a pattern under the base, as
  /// the entity rows give them): not retained, kept while the broker is away.
  public func event(_ json: String, onEntityTopic pattern: String) {
    send(shown.event(json, on: settings.topics.entityTopic(pattern, slug: "")))
  }

  /// A ranged beacon; rate-limited per beacon except on proximity changes,
  /// on the time the monitor decided it.
  public func beacon(_ beacon: BeaconShown, at time: DecisionTime) {
    guard limiter.shouldPublish(beacon.id, proximity: beacon.proximity, at: time) else { return }
    show(MQTTEntities.beacon, beacon)
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

  /// Sends the volume and mute states again: a refused command leaves
  /// Home Assistant's number and switch where the agent really is.
  public func resendVolume() {
    send(shown.resend(settings.topics.volumeState))
    send(shown.resend(settings.topics.muteState))
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
