/// One agent's view of one tracked beacon or device over its last
/// `[rooms] interval`: what `earshot run` publishes and `earshot rooms`
/// decides from.
public struct RoomSighting: Sendable, Equatable {
  /// A wall time: what crosses machines. As sent, the agent's wall clock
  /// when it sent the sighting (capture time in a replay); stamped by
  /// `RoomClock.stamp`, its arrival on the aggregator's axis, the time the
  /// rule decides on. The agent decides when to send on its own decision
  /// time (`SightingPublisher.Due`, a `DecisionTime`), so the two cannot
  /// be mixed up: a `Due` becomes a sighting only given the wall time to
  /// send (`Due.sent(at:)`).
  public var t: WallTime
  public var subject: RoomSubject
  public var room: String
  /// Filtered RSSI in dBm, after this receiver's `rssi_offset`.
  public var rssi: Double?
  /// Calibrated distance in metres; `nil` when none can be trusted.
  public var distance: Double?
  /// Reports heard since the previous sighting.
  public var count: Int
  /// A device's name from the agent's `track` (`phone=device:…`).
  public var name: String?

  public init(
    t: WallTime, subject: RoomSubject, room: String, rssi: Double?, distance: Double?, count: Int,
    name: String? = nil
  ) {
    self.t = t
    self.subject = subject
    self.room = room
    self.rssi = rssi
    self.distance = distance
    self.count = count
    self.name = name
  }

  public init(
    t: WallTime, beacon: TrackedID, room: String, rssi: Double?, distance: Double?, count: Int
  ) {
    self.init(
      t: t, subject: .beacon(beacon), room: room, rssi: rssi, distance: distance, count: count)
  }

  public var beacon: TrackedID? { subject.beacon }

  /// `{"t":…,"room":"kitchen","rssi":-71.2,"distance":2.31,"n":7}` (plus
  /// `"name"` for a named device): the subject is in the topic. Times to
  /// the millisecond.
  public var payload: String {
    var j = JSONLine()
    j.add("t", t.seconds, decimals: 3)
    j.add("room", room)
    if let rssi { j.add("rssi", rssi, decimals: 1) } else { j.addNull("rssi") }
    if let distance { j.add("distance", distance, decimals: 2) } else { j.addNull("distance") }
    j.add("n", count)
    if let name { j.add("name", name) }
    return j.line
  }

  /// A sighting from its topic and payload; `nil` for anything malformed
  /// (the aggregator counts and logs those, and goes on).
  public static func parse(topic: String, payload: [UInt8], topics: RoomTopics) -> RoomSighting? {
    guard let subject = topics.subject(inSightingTopic: topic),
      let json = try? JSONParser.parse(payload),
      let t = json["t"]?.number, t.isFinite, abs(t) < 1e11,
      let room = json["room"]?.string, !room.isEmpty, room.utf8.count <= 128
    else { return nil }
    let distance = json["distance"]?.number.flatMap { $0.isFinite && $0 > 0 ? $0 : nil }
    let rssi = json["rssi"]?.number.flatMap { $0.isFinite ? $0 : nil }
    let n = json["n"]?.number.map { Int(clamping: Int64(max(0, min($0, 1e9)))) } ?? 1
    // Names only for devices, and short: they end up in Home Assistant.
    let name =
      subject.device == nil
      ? nil
      : json["name"]?.string.flatMap {
        $0.isEmpty || $0.utf8.count > 64 ? nil : $0
      }
    return RoomSighting(
      t: WallTime(seconds: t), subject: subject, room: room, rssi: rssi,
      distance: distance, count: n, name: name)
  }
}

/// A room decision: the beacon or device is in `room`, or away (`nil`).
public struct RoomChange: Sendable, Equatable {
  /// When the rule decided it, on its axis (`RoomClock`: a wall date that
  /// moves with the aggregator's monotonic clock; message time in `rooms
  /// evaluate --message-time`): what outputs and retained states show.
  public var t: WallTime
  public var subject: RoomSubject
  public var room: String?
  /// A device's name (its `track` name), for the outputs.
  public var name: String?

  public init(t: WallTime, subject: RoomSubject, room: String?, name: String? = nil) {
    self.t = t
    self.subject = subject
    self.room = room
    self.name = name
  }

  public init(t: WallTime, beacon: TrackedID, room: String?) {
    self.init(t: t, subject: .beacon(beacon), room: room)
  }

  public var beacon: TrackedID? { subject.beacon }

  /// `{"t":T,"event":"room","beacon":"UUID:MAJOR:MINOR","room":"kitchen"}`,
  /// or for a device `…,"device":"AA:BB:CC:DD:EE:FF","name":"phone",…`.
  public var json: String {
    var j = JSONLine()
    j.add("t", t.seconds, decimals: 3)
    j.add("event", "room")
    addSubject(to: &j)
    if let room { j.add("room", room) } else { j.addNull("room") }
    return j.line
  }

  /// `"beacon":…`, or `"device":…` and its name when it has one.
  func addSubject(to j: inout JSONLine) {
    switch subject {
    case .beacon(let b): j.add("beacon", b.description)
    case .device(let d):
      j.add("device", d.description)
      if let name { j.add("name", name) }
    }
  }

  /// A change line; `requireEvent: false` also takes truth.jsonl's lines
  /// (the same fields without `event`).
  public static func parse(_ line: String, requireEvent: Bool = true) -> RoomChange? {
    guard let j = try? JSONParser.parse(line),
      requireEvent
        ? j["event"]?.string == "room" : (j["event"] == nil || j["event"]?.string == "room"),
      let t = j["t"]?.number, t.isFinite, abs(t) < 1e11,
      let subject = j["beacon"]?.string.flatMap(TrackedID.parse).map(RoomSubject.beacon)
        ?? j["device"]?.string.flatMap(TrackedDeviceID.init).map(RoomSubject.device)
    else { return nil }
    return RoomChange(
      t: WallTime(seconds: t), subject: subject, room: j["room"]?.string,
      name: j["name"]?.string)
  }
}

/// The rooms topic layout, under one prefix (`[rooms] topic`, default
/// `earshot/rooms`) shared by a site's agents and aggregators:
///
/// - `PREFIX/sighting/SHARD/BEACON/ROOM`: sightings, QoS 0, not retained.
///   BEACON is the subject's slug (`RoomSubject.slug`: a beacon, or a
///   device by identity). SHARD = FNV-1a(BEACON) mod `shards`, so an
///   aggregator subscribes to
///   `PREFIX/sighting/SHARD/#` for each shard it serves and gets every
///   sighting of its beacons and of no others. (MQTT 5 shared
///   subscriptions spread messages, not beacons: one beacon's sightings
///   would be split between aggregators, and none could decide its room.)
/// - `PREFIX/agent/ROOM`: retained, which status topic tells whether the
///   room's agent is online (its MQTT bridge's `…/status`, whose last
///   will says `offline`).
/// - `PREFIX/beacon/BEACON/state`: the decided room, retained (devices
///   too: one layout for every subject).
/// - `PREFIX/aggregator/ID/status`: an aggregator's online/offline.
public struct RoomTopics: Sendable, Equatable {
  public let prefix: String
  public let shards: Int

  public init(prefix: String, shards: Int) {
    self.prefix = prefix.hasSuffix("/") ? String(prefix.dropLast()) : prefix
    self.shards = max(1, shards)
  }

  public init(_ config: RoomsConfig) { self.init(prefix: config.topic, shards: config.shards) }

  /// A beacon's shard: FNV-1a (32 bits) of its topic segment, stable
  /// across machines and versions so agents and aggregators agree.
  public func shard(of subject: RoomSubject) -> Int {
    var h: UInt32 = 2_166_136_261
    for b in subject.slug.utf8 {
      h = (h ^ UInt32(b)) &* 16_777_619
    }
    return Int(h % UInt32(shards))
  }

  public func shard(of beacon: TrackedID) -> Int { shard(of: .beacon(beacon)) }

  public func sighting(_ subject: RoomSubject, room: String) -> String {
    "\(prefix)/sighting/\(shard(of: subject))/\(subject.slug)/\(MQTTTopics.slug(room))"
  }

  public func sighting(_ beacon: TrackedID, room: String) -> String {
    sighting(.beacon(beacon), room: room)
  }

  public func sightingFilter(shard: Int) -> String { "\(prefix)/sighting/\(shard)/#" }

  public func agent(_ room: String) -> String { "\(prefix)/agent/\(MQTTTopics.slug(room))" }
  public var agentFilter: String { "\(prefix)/agent/+" }

  public func state(_ subject: RoomSubject) -> String {
    "\(prefix)/beacon/\(subject.slug)/state"
  }

  public func state(_ beacon: TrackedID) -> String { state(.beacon(beacon)) }

  /// The room as plain text, `not_home` when away: what every Home
  /// Assistant's MQTT device_tracker takes as its state (2024.3 uses a
  /// value_template only to compare with payload_home/payload_not_home, so
  /// it cannot read the room out of the JSON state).
  public func location(_ subject: RoomSubject) -> String {
    "\(prefix)/beacon/\(subject.slug)/location"
  }
  public var stateFilter: String { "\(prefix)/beacon/+/state" }

  public func aggregatorStatus(_ id: String) -> String {
    "\(prefix)/aggregator/\(MQTTTopics.slug(id))/status"
  }

  /// The subject named by a sighting topic's BEACON segment
  /// (`uuid-major-minor`, `device-…` or `irk-…`, lower case).
  public func subject(inSightingTopic topic: String) -> RoomSubject? {
    let head = prefix + "/sighting/"
    guard topic.hasPrefix(head) else { return nil }
    let parts = topic.dropFirst(head.count).split(separator: "/", omittingEmptySubsequences: false)
    guard parts.count == 3 else { return nil }
    return RoomSubject(slug: parts[1])
  }

  /// The subject of a `PREFIX/beacon/BEACON/state` topic.
  public func subject(inStateTopic topic: String) -> RoomSubject? {
    let head = prefix + "/beacon/"
    guard topic.hasPrefix(head), topic.hasSuffix("/state") else { return nil }
    let mid = topic.dropFirst(head.count).dropLast("/state".count)
    return RoomSubject(slug: mid)
  }

  /// The beacon of a slug `MQTTTopics.slug(_:)` wrote: `uuid-major-minor`,
  /// `altbeacon-uuid-id2-id3` or `eddystone-namespace-instance`.
  static func beacon(slug: Substring) -> TrackedID? { TrackedID(slug: slug) }

}
