import EarshotCore

/// `earshot rooms`: subscribes to the sightings of the shards it serves
/// and to every agent's status, runs the room rule, and publishes each
/// beacon's room retained (with Home Assistant discovery). It keeps no
/// state of its own: on start it reads the rooms the broker retains, and
/// after a broker restart it publishes them again.
///
/// Time is message time: the newest sighting's `t`, moved on by the
/// clock (times `pace`) while no sighting arrives, so that away is
/// decided even when every agent falls silent.
public final class RoomsAggregator {
  public struct Options: Sendable {
    public var client: MQTTClient.Options
    public var topics: RoomTopics
    public var settings: RoomRule.Settings
    public var track: [BeaconMatch]
    public var serves: @Sendable (Int) -> Bool
    public var shards: [Int]
    public var discovery: RoomsDiscovery?
    public var aggregatorStatus: String
    /// Also run the naive baseline and print its changes (not published).
    public var naive = false
    public var pace = 1.0

    public init(
      client: MQTTClient.Options, topics: RoomTopics, settings: RoomRule.Settings,
      track: [BeaconMatch], serves: @escaping @Sendable (Int) -> Bool, shards: [Int],
      discovery: RoomsDiscovery?, aggregatorStatus: String
    ) {
      self.client = client
      self.topics = topics
      self.settings = settings
      self.track = track
      self.serves = serves
      self.shards = shards
      self.discovery = discovery
      self.aggregatorStatus = aggregatorStatus
    }
  }

  /// Each change as a JSON line (the naive rule's carry `"rule":"naive"`).
  public var onChange: ((String) -> Void)?
  public var onLog: ((String) -> Void)?

  public let options: Options
  private let loop: EventLoop
  private let client: MQTTClient
  public private(set) var rule: RoomRule
  private var naive: RoomRule?
  /// Agent status topic -> its room.
  private var statusRooms: [String: String] = [:]
  private var retained: [String: String] = [:]
  private var announced: Set<BeaconID> = []
  private var lastMessageTime: Int64? = nil
  private var lastMessageClock: UInt64 = 0
  private var tick: EventLoop.TimerID?
  public private(set) var sightings = 0
  public private(set) var malformed = 0

  public init(loop: EventLoop, options: Options) throws {
    self.loop = loop
    self.options = options
    rule = RoomRule(settings: options.settings)
    naive = options.naive ? RoomRule(settings: options.settings.naive()) : nil
    var c = options.client
    c.will = (options.aggregatorStatus, "offline")
    client = try MQTTClient(loop: loop, options: c)
    client.onConnect = { [unowned self] in self.connected() }
    client.onMessage = { [unowned self] topic, payload in self.received(topic, payload) }
    client.onLog = { [unowned self] in self.onLog?($0) }
  }

  public var isConnected: Bool { client.isConnected }

  /// Subscribes (retained rooms first, so a restart knows them before
  /// any sighting), connects, and starts the clock.
  public func start() {
    client.subscribe(options.topics.stateFilter)
    client.subscribe(options.topics.agentFilter)
    for shard in options.shards {
      client.subscribe(options.topics.sightingFilter(shard: shard), qos: 0)
    }
    client.start()
    scheduleTick()
  }

  public func close() {
    if let tick { loop.cancel(tick) }
    client.publish(options.aggregatorStatus, "offline", qos: 1, retain: true)
    client.close()
  }

  // MARK: Messages

  private func connected() {
    client.publish(options.aggregatorStatus, "online", qos: 1, retain: true)
    for (topic, payload) in retained { client.publish(topic, payload, qos: 1, retain: true) }
  }

  private func received(_ topic: String, _ payload: [UInt8]) {
    let t = options.topics
    if topic.hasPrefix(t.prefix + "/sighting/") {
      guard let s = RoomSighting.parse(topic: topic, payload: payload, topics: t) else {
        malformed += 1
        if malformed & (malformed - 1) == 0 {
          onLog?("ignored a malformed sighting on \(topic) (\(malformed) so far)")
        }
        return
      }
      guard tracked(s.beacon) else { return }
      sightings += 1
      noteTime(s.t)
      apply(rule.sighting(s))
      if naive != nil { report(naive!.sighting(s), naive: true) }
    } else if let beacon = t.beacon(inStateTopic: topic) {
      restore(beacon, payload)
    } else if topic.hasPrefix(t.prefix + "/agent/") {
      guard let j = try? JSONParser.parse(payload), let room = j["room"]?.string,
        let status = j["status"]?.string, !status.contains("#"), !status.contains("+")
      else { return }
      if statusRooms.updateValue(room, forKey: status) == nil { client.subscribe(status) }
    } else if let room = statusRooms[topic] {
      let text = String(decoding: payload, as: UTF8.self)
      guard text == "online" || text == "offline" else { return }
      let online = text == "online"
      if !online { onLog?("agent \(room) is offline") }
      apply(rule.agent(room, online: online, at: now()))
      if naive != nil { report(naive!.agent(room, online: online, at: now()), naive: true) }
    }
  }

  private func tracked(_ beacon: BeaconID) -> Bool {
    guard options.serves(options.topics.shard(of: beacon)) else { return false }
    return options.track.isEmpty || options.track.contains { $0.matches(beacon) }
  }

  /// A retained room from before a restart (ours or a predecessor's).
  private func restore(_ beacon: BeaconID, _ payload: [UInt8]) {
    guard tracked(beacon), rule.room(of: beacon) == nil,
      let j = try? JSONParser.parse(payload), j["beacon"] != nil
    else { return }
    let room = j["room"]?.string
    let topic = options.topics.state(beacon)
    if retained[topic] == nil { retained[topic] = String(decoding: payload, as: UTF8.self) }
    rule.restore(beacon, room: room)
    naive?.restore(beacon, room: room)
    announce(beacon)
  }

  private func apply(_ changes: [RoomChange]) {
    for c in changes {
      announce(c.beacon)
      let topic = options.topics.state(c.beacon)
      let payload = RoomsDiscovery.state(c)
      retained[topic] = payload
      client.publish(topic, payload, qos: 1, retain: true)
    }
    report(changes, naive: false)
  }

  private func report(_ changes: [RoomChange], naive: Bool) {
    for c in changes {
      onChange?(naive ? String(c.json.dropLast()) + ",\"rule\":\"naive\"}" : c.json)
    }
  }

  private func announce(_ beacon: BeaconID) {
    guard let d = options.discovery, announced.insert(beacon).inserted else { return }
    for m in d.messages(for: beacon) {
      retained[m.topic] = m.payload
      client.publish(m.topic, m.payload, qos: 1, retain: true)
    }
  }

  // MARK: Time

  private func noteTime(_ t: Int64) {
    if lastMessageTime == nil || t > lastMessageTime! {
      lastMessageTime = t
      lastMessageClock = Clock.monotonicNanos()
    }
  }

  /// Message time now: the newest `t`, plus the clock since it came.
  private func now() -> Int64? {
    guard let last = lastMessageTime else { return nil }
    let elapsed = Double(Clock.monotonicNanos() - lastMessageClock) / 1e3 * options.pace
    return last + Int64(elapsed)
  }

  private func scheduleTick() {
    tick = loop.after(seconds: 0.25) { [weak self] in
      guard let self else { return }
      if let t = self.now() {
        self.apply(self.rule.advance(to: t))
        if self.naive != nil { self.report(self.naive!.advance(to: t), naive: true) }
      }
      self.scheduleTick()
    }
  }
}
