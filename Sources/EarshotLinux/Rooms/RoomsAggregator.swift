import EarshotCore

/// `earshot rooms`: subscribes to the sightings of the shards it serves
/// and to every agent's status, runs the room rule, and publishes each
/// beacon's room retained (with Home Assistant discovery). It keeps no
/// state of its own: on start it reads the rooms the broker retains, and
/// after a broker restart it publishes them again.
///
/// Time is the aggregator's own (`RoomClock`): each sighting counts from
/// when it arrives, whatever its agent's clock says, so agents whose
/// clocks are off or drift place beacons as agents in step do. Sightings
/// the broker hands over as retained (from before the subscription) are
/// old whatever their `t` and are ignored.
public final class RoomsAggregator {
  public struct Options: Sendable {
    public var client: MQTTClient.Options
    public var topics: RoomTopics
    public var settings: RoomRule.Settings
    public var track: [TrackedMatch]
    /// `[rooms] track`'s devices; with `track`, both empty = every subject.
    public var trackDevices: [TrackedDevice] = []
    public var serves: @Sendable (Int) -> Bool
    public var shards: [Int]
    public var discovery: RoomsDiscovery?
    public var aggregatorStatus: String
    /// Also run the naive baseline and print its changes (not published).
    public var naive = false
    /// Axis seconds per clock second (`--pace`, replays at N x real time).
    public var pace = 1.0
    /// Date the axis by the first sighting's `t` (a replay's capture
    /// time) instead of this machine's wall clock.
    public var replay = false
    /// ESPresense nodes are agents too (`[rooms] espresense_nodes`).
    public var espresenseNodes = false

    public init(
      client: MQTTClient.Options, topics: RoomTopics, settings: RoomRule.Settings,
      track: [TrackedMatch], serves: @escaping @Sendable (Int) -> Bool, shards: [Int],
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
  private var judge: RoomJudge
  public var rule: RoomRule { judge.rule }
  /// Agent status topic -> its room.
  private var statusRooms: [String: String] = [:]
  /// What the broker should hold: rooms and their discovery configs,
  /// published discovery first and `online` last on every connect.
  private var shown: MQTTShownState
  private var announced: Set<RoomSubject> = []
  /// Devices' names from the sightings, for those `track` does not name
  /// (bounded like the rule: subjects it refuses get no name).
  private var sightedNames: [TrackedDeviceID: String] = [:]
  /// Per agent's room, the skew last logged (seconds its clock is ahead).
  private var loggedSkew: [String: Double] = [:]
  private var tick: EventLoop.TimerID?
  public private(set) var sightings = 0
  public private(set) var malformed = 0
  /// Sightings the broker held retained: old, never counted.
  public private(set) var retainedSightings = 0

  public init(loop: EventLoop, options: Options) throws {
    self.loop = loop
    self.options = options
    let origin: RoomClock.Origin =
      options.replay ? .firstSighting : .wall(Clock.wallNow(), at: Clock.now())
    judge = RoomJudge(
      settings: options.settings, clock: RoomClock(origin: origin, pace: options.pace),
      naive: options.naive)
    var c = options.client
    c.will = (options.aggregatorStatus, "offline")
    client = try MQTTClient(loop: loop, options: c)
    shown = MQTTShownState(
      availabilityTopic: options.aggregatorStatus, eventsTopic: options.topics.prefix + "/events")
    client.onConnect = { [unowned self] in self.send(self.shown.connected()) }
    client.onDisconnect = { [unowned self] in self.shown.disconnected() }
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
    if options.espresenseNodes {
      client.subscribe(ESPresenseFormat.statusFilter)
      client.subscribe(ESPresenseFormat.sightingFilter, qos: 0)
    }
    client.start()
    scheduleTick()
  }

  public func close() {
    if let tick { loop.cancel(tick) }
    send(shown.stopping())
    client.close()
  }

  // MARK: Messages

  private func send(_ messages: [MQTTShownState.Message]) {
    for m in messages { client.publish(m.topic, m.payload, qos: 1, retain: m.retain) }
  }

  private func received(_ topic: String, _ payload: [UInt8]) {
    let t = options.topics
    let fromNode = options.espresenseNodes && topic.hasPrefix(ESPresenseFormat.prefix + "/devices/")
    if topic.hasPrefix(t.prefix + "/sighting/") || fromNode {
      // A node's sighting carries no time: it is dated on the axis, so it
      // cannot start a replay's axis (dated by wall time, it would move
      // the replay months ahead). Live, the axis runs from the start.
      let axisNow = judge.clock.time(at: Clock.now())
      if fromNode && axisNow == nil { return }
      let parsed =
        fromNode
        ? ESPresenseFormat.sighting(
          topic: topic, payload: payload, trackDevices: options.trackDevices, now: axisNow!)
        : RoomSighting.parse(topic: topic, payload: payload, topics: t)
      guard let s = parsed else {
        // A node reports every device it hears: ids that are not tracked
        // beacons or devices are not errors.
        if fromNode { return }
        malformed += 1
        if malformed & (malformed - 1) == 0 {
          onLog?("ignored a malformed sighting on \(topic) (\(malformed) so far)")
        }
        return
      }
      guard tracked(s.subject) else { return }
      guard !client.messageIsRetained else {
        retainedSightings += 1
        if retainedSightings & (retainedSightings - 1) == 0 {
          onLog?(
            "ignored a retained sighting on \(topic) (\(retainedSightings) so far): sightings are a stream, one held by the broker is old"
          )
        }
        return
      }
      sightings += 1
      let arrival = Clock.now()
      noteSkew(s, arrival: arrival)
      if let d = s.subject.device, let name = s.name, sightedNames[d] != name,
        sightedNames[d] != nil || sightedNames.count < rule.capacity
      {
        sightedNames[d] = name
      }
      apply(judge.sighting(s, arrival: arrival))
    } else if let subject = t.subject(inStateTopic: topic) {
      restore(subject, payload)
    } else if topic.hasPrefix(t.prefix + "/agent/") {
      guard let j = try? JSONParser.parse(payload), let room = j["room"]?.string,
        let status = j["status"]?.string, !status.contains("#"), !status.contains("+")
      else { return }
      if statusRooms.updateValue(room, forKey: status) == nil { client.subscribe(status) }
    } else if options.espresenseNodes, let room = ESPresenseFormat.room(inStatusTopic: topic) {
      let text = String(decoding: payload, as: UTF8.self)
      guard text == "online" || text == "offline" else { return }
      if text == "offline" { onLog?("ESPresense node \(room) is offline") }
      apply(judge.agent(room, online: text == "online", at: Clock.now()))
    } else if let room = statusRooms[topic] {
      let text = String(decoding: payload, as: UTF8.self)
      guard text == "online" || text == "offline" else { return }
      let online = text == "online"
      if !online { onLog?("agent \(room) is offline") }
      apply(judge.agent(room, online: online, at: Clock.now()))
    }
  }

  private func tracked(_ subject: RoomSubject) -> Bool {
    guard options.serves(options.topics.shard(of: subject)) else { return false }
    if options.track.isEmpty && options.trackDevices.isEmpty { return true }
    switch subject {
    case .beacon(let b): return options.track.contains { $0.matches(b) }
    case .device(let d): return options.trackDevices.contains { $0.id == d }
    }
  }

  /// A device's name: `track`'s, else the one its sightings carry.
  private func name(of subject: RoomSubject) -> String? {
    guard let d = subject.device else { return nil }
    return options.trackDevices.first { $0.id == d }?.name ?? sightedNames[d]
  }

  /// A retained room from before a restart (ours or a predecessor's).
  private func restore(_ subject: RoomSubject, _ payload: [UInt8]) {
    guard tracked(subject), rule.room(of: subject) == nil,
      let j = try? JSONParser.parse(payload), j["beacon"] != nil || j["device"] != nil
    else { return }
    let room = j["room"]?.string
    if let d = subject.device, let n = j["name"]?.string, !n.isEmpty, n.utf8.count <= 64,
      sightedNames[d] == nil, sightedNames.count < rule.capacity
    {
      sightedNames[d] = n
    }
    announce(subject)
    let topic = options.topics.state(subject)
    if shown.payload(of: topic) == nil {
      // The location topic too: a room retained by an older version has none.
      send(
        shown.show(
          .room(subject),
          [
            .init(topic, String(decoding: payload, as: UTF8.self), .state),
            .init(options.topics.location(subject), room ?? "not_home", .state),
          ]))
    }
    judge.restore(subject, room: room)
  }

  private func apply(_ changes: RoomJudge.Changes) {
    apply(changes.rule)
    report(changes.naive, naive: true)
  }

  private func apply(_ changes: [RoomChange]) {
    let changes = named(changes)
    for c in changes {
      announce(c.subject)
      send(
        shown.show(
          .room(c.subject),
          [
            .init(options.topics.state(c.subject), RoomsDiscovery.state(c), .state),
            .init(options.topics.location(c.subject), RoomsDiscovery.location(c), .state),
          ]))
    }
    report(changes, naive: false)
  }

  /// The rule knows subjects, not names: devices get theirs here.
  private func named(_ changes: [RoomChange]) -> [RoomChange] {
    changes.map { c in
      var c = c
      c.name = name(of: c.subject)
      return c
    }
  }

  private func report(_ changes: [RoomChange], naive: Bool) {
    let changes = naive ? named(changes) : changes
    for c in changes {
      onChange?(naive ? String(c.json.dropLast()) + ",\"rule\":\"naive\"}" : c.json)
    }
  }

  private func announce(_ subject: RoomSubject) {
    guard let d = options.discovery, announced.insert(subject).inserted else { return }
    send(
      shown.show(
        .room(subject),
        d.messages(for: subject, name: name(of: subject)).map {
          .init($0.topic, $0.payload, .discovery)
        }))
  }

  // MARK: Time

  /// Logs an agent whose clock reads far from this one's (shown only:
  /// decisions never use a sighting's `t`), again when it moves on.
  private func noteSkew(_ s: RoomSighting, arrival: MonotonicTime) {
    guard let skew = judge.clock.skew(of: s, arrival: arrival) else { return }
    let last = loggedSkew[s.room] ?? 0
    guard abs(skew - last) >= 60 || (abs(skew) >= 5 && loggedSkew[s.room] == nil),
      loggedSkew.count < 1024 || loggedSkew[s.room] != nil
    else { return }
    loggedSkew[s.room] = skew
    let side = skew >= 0 ? "ahead of" : "behind"
    onLog?(
      "agent \(s.room)'s clock reads \(JSONLine.format(abs(skew), decimals: 1)) s \(side) this aggregator's; its sightings count from their arrival"
    )
  }

  private func scheduleTick() {
    tick = loop.after(seconds: 0.25) { [weak self] in
      guard let self else { return }
      self.apply(self.judge.advance(to: Clock.now()))
      self.scheduleTick()
    }
  }
}
