/// Earshot's MQTT entities, described once: each kind is one row below with
/// its Home Assistant discovery configs (component, object id, name,
/// fields in payload order) and its typed state → retained topics and
/// payloads. The bridge shows any kind with one call; adding an entity is a
/// row here and the place its state comes from (docs/architecture.md).
///
/// Patterns: in an object id, a topic (under `MQTTTopics.base`) or a name,
/// `%` stands for the subject: its topic slug, or in a name its name.
public struct MQTTEntityKind<State: Sendable>: Sendable {
  /// The entity a state's topics belong to (what a reload removes).
  public let entity: @Sendable (State) -> MQTTEntity
  /// The subject: its topic slug and its name in Home Assistant.
  public let subject: @Sendable (State) -> (slug: String, name: String)
  /// Discovery configs, in publication order.
  public let configs: [MQTTDiscoveryRow<State>]
  /// Retained topic patterns and payloads for a state, in publication order.
  public let state:
    @Sendable (State) -> [(topic: String, payload: String, layer: MQTTShownState.Layer)]
}

/// One thing Earshot shows on MQTT, owning its retained topics: what a
/// config reload removes is every topic of an entity, and nothing else.
public enum MQTTEntity: Hashable, Sendable {
  /// The ring and found buttons, the volume number and the mute switch.
  case controls
  /// Find-phone's state sensor.
  case findPhone
  /// The live scan's duty (a diagnostic sensor).
  case scanDuty
  case region(String)
  /// An identity region's device_tracker (its state is the region's).
  case tracker(String)
  case beacon(TrackedID)
  case tag(String)
  /// A retained record of another part (rooms' agent record).
  case record(String)
  /// The rooms aggregator's answer for one beacon or device.
  case room(RoomSubject)
  /// Trackers following now and the tracker-following event
  /// (`[trackers] mqtt`: strangers' trackers leave the machine only then).
  case trackers
}

/// One Home Assistant discovery config of an entity kind.
public struct MQTTDiscoveryRow<State: Sendable>: Sendable {
  public enum Value: Sendable {
    case text(String)
    case int(Int)
    /// Encoded JSON.
    case raw(String)
    /// One of the entity's topics (a pattern under the base).
    case topic(String)
    /// The agent's availability and these of the entity's topics.
    case availability([String])
  }
  public let component: String
  public let object: String
  public let name: String
  public let fields: [(key: String, value: Value)]
  /// Shown only for states where this holds (nil: always).
  public let when: (@Sendable (State) -> Bool)?
  /// The entity it belongs to when not the kind's own (a region's tracker).
  public let entity: (@Sendable (State) -> MQTTEntity)?

  public init(
    _ component: String, _ object: String, _ name: String, _ fields: [(String, Value)],
    when: (@Sendable (State) -> Bool)? = nil, entity: (@Sendable (State) -> MQTTEntity)? = nil
  ) {
    self.component = component
    self.object = object
    self.name = name
    self.fields = fields.map { (key: $0.0, value: $0.1) }
    self.when = when
    self.entity = entity
  }
}

/// A pattern with `%` replaced by `value`.
func fill(_ pattern: String, _ value: String) -> String {
  guard pattern.contains("%") else { return pattern }
  return pattern.split(separator: "%", omittingEmptySubsequences: false).joined(separator: value)
}

// MARK: The states

/// A region's occupancy; an identity region is also a device_tracker.
public struct RegionShown: Sendable {
  public var name: String
  public var state: RegionState
  public var tracksDevices: Bool
  public init(_ name: String, _ state: RegionState, tracksDevices: Bool = false) {
    self.name = name
    self.state = state
    self.tracksDevices = tracksDevices
  }
}

/// A ranged beacon, as decided.
public struct BeaconShown: Sendable {
  public var id: TrackedID
  public var distance: Double?
  public var proximity: Proximity
  public var rssi: Int?
  public init(_ id: TrackedID, distance: Double?, proximity: Proximity, rssi: Int?) {
    self.id = id
    self.distance = distance
    self.proximity = proximity
    self.rssi = rssi
  }
}

/// A key-finder tag's link state (`connected`, `connecting`, `waiting`…) and battery.
public struct TagShown: Sendable {
  public var name: String
  public var state: String
  public var battery: Int?
  public init(_ name: String, state: String, battery: Int?) {
    self.name = name
    self.state = state
    self.battery = battery
  }
}

/// Find-phone's state and who it rings for.
public struct FindShown: Sendable {
  public var state: FindStatus.State
  public var requesters: [String]
  public init(_ state: FindStatus.State, requesters: [String] = []) {
    self.state = state
    self.requesters = requesters
  }
}

/// The volume as a level in 0...1, and whether it is muted.
public struct VolumeShown: Sendable {
  public var level: Double
  public var muted: Bool
  public init(level: Double, muted: Bool) {
    self.level = level
    self.muted = muted
  }
}

/// A tracker that follows, as Home Assistant is told of it: no more than
/// a person needs to act (no address: a stranger's identifier stays here).
public struct TrackerShown: Sendable, Equatable {
  public var number: TrackerNumber
  /// The protocol family (`find_my`, `smarttag`…), as automations match it.
  public var family: TrackerProtocol.Family
  public var kind: TrackerKind
  public var firstSeen: WallTime
  public var lastSeen: WallTime
  public var places: Int
  public var sightings: Int

  public init(
    number: TrackerNumber, family: TrackerProtocol.Family, kind: TrackerKind, firstSeen: WallTime,
    lastSeen: WallTime, places: Int, sightings: Int
  ) {
    self.number = number
    self.family = family
    self.kind = kind
    self.firstSeen = firstSeen
    self.lastSeen = lastSeen
    self.places = places
    self.sightings = sightings
  }

  public init(_ row: TrackerRow, firstSeen: WallTime, lastSeen: WallTime) {
    number = row.number
    family = row.frame.family
    kind = row.frame.kind
    self.firstSeen = firstSeen
    self.lastSeen = lastSeen
    places = row.places
    sightings = row.sightings
  }

  /// Its fields, in the sensor's attributes and the event alike (wall
  /// times in UTC, ISO 8601).
  public func addFields(to j: inout JSONLine) {
    j.add("tracker", number.value)
    j.add("protocol", family.rawValue)
    j.add("kind", kind.rawValue)
    j.add("first_seen", LogTime.iso(firstSeen, offset: LogTime.utc))
    j.add("last_seen", LogTime.iso(lastSeen, offset: LogTime.utc))
    j.add("places", places)
    j.add("sightings", sightings)
  }

  /// The event's payload: Home Assistant's `event_type`, then the tracker.
  public var eventPayload: String {
    var j = JSONLine()
    j.add("event_type", MQTTEntities.trackerFollowingEventType)
    addFields(to: &j)
    return j.line
  }
}

// MARK: The table

/// The rows: one per entity kind.
public enum MQTTEntities {
  /// Occupancy per region. Unknown is unavailable (not off): the region's own
  /// availability topic goes offline while its state is unknown, and its
  /// state topic keeps the last known state (HA has no payload for unknown).
  /// An identity region's devices (a person's phone and watch) are also a
  /// device_tracker reading the same topics: home inside, not_home outside.
  public static let region = MQTTEntityKind<RegionShown>(
    entity: { .region($0.name) },
    subject: { (MQTTTopics.slug($0.name), $0.name) },
    configs: [
      .init(
        "binary_sensor", "region_%", "% occupancy",
        [
          ("device_class", .text("occupancy")), ("state_topic", .topic("region/%/state")),
          ("payload_on", .text("inside")), ("payload_off", .text("outside")),
          ("availability", .availability(["region/%/available"])),
          ("availability_mode", .text("all")),
        ]),
      .init(
        "device_tracker", "tracker_%", "%",
        [
          ("state_topic", .topic("region/%/state")), ("payload_home", .text("inside")),
          ("payload_not_home", .text("outside")), ("source_type", .text("bluetooth_le")),
          ("availability", .availability(["region/%/available"])),
          ("availability_mode", .text("all")),
        ], when: { $0.tracksDevices }, entity: { .tracker($0.name) }),
    ],
    state: { s in
      var out: [(topic: String, payload: String, layer: MQTTShownState.Layer)] = []
      if s.state != .unknown { out.append(("region/%/state", s.state.rawValue, .state)) }
      out.append(("region/%/available", s.state == .unknown ? "offline" : "online", .availability))
      return out
    })

  /// Distance per tracked beacon, its JSON state also its attributes.
  public static let beacon = MQTTEntityKind<BeaconShown>(
    entity: { .beacon($0.id) },
    subject: { (MQTTTopics.slug($0.id), HomeAssistantDiscovery.name($0.id)) },
    configs: [
      .init(
        "sensor", "beacon_%", "% distance",
        [
          ("device_class", .text("distance")), ("unit_of_measurement", .text("m")),
          ("state_class", .text("measurement")), ("state_topic", .topic("beacon/%/state")),
          ("value_template", .text("{{ value_json.distance }}")),
          ("json_attributes_topic", .topic("beacon/%/state")), ("availability", .availability([])),
        ])
    ],
    state: { b in
      var j = JSONLine()
      if let d = b.distance { j.add("distance", d, decimals: 2) } else { j.addNull("distance") }
      j.add("proximity", b.proximity.rawValue)
      if let rssi = b.rssi { j.add("rssi", rssi) }
      b.id.addFields(to: &j)
      return [("beacon/%/state", j.line, .state)]
    })

  /// A beacon's telemetry: its battery voltage (diagnostic, mV), and its
  /// temperature when it has a sensor. Eddystone-TLM gives volts, not a charge
  /// level, so the sensor is a voltage: a percentage would be a guess about
  /// the cell. It belongs to the beacon: removing the beacon removes it.
  public static let telemetry = MQTTEntityKind<(id: TrackedID, reading: BeaconTelemetry)>(
    entity: { .beacon($0.id) },
    subject: { (MQTTTopics.slug($0.id), HomeAssistantDiscovery.name($0.id)) },
    configs: [
      .init(
        "sensor", "beacon_%_battery", "% battery",
        [
          ("device_class", .text("voltage")), ("unit_of_measurement", .text("mV")),
          ("state_class", .text("measurement")), ("entity_category", .text("diagnostic")),
          ("state_topic", .topic("beacon/%/telemetry")),
          ("value_template", .text("{{ value_json.battery_mv }}")),
          ("json_attributes_topic", .topic("beacon/%/telemetry")),
          ("availability", .availability([])),
        ]),
      .init(
        "sensor", "beacon_%_temperature", "% temperature",
        [
          ("device_class", .text("temperature")), ("unit_of_measurement", .text("°C")),
          ("state_class", .text("measurement")), ("state_topic", .topic("beacon/%/telemetry")),
          ("value_template", .text("{{ value_json.temperature }}")),
          ("availability", .availability([])),
        ], when: { $0.reading.temperature != nil }),
    ],
    state: { s in
      var j = JSONLine()
      s.reading.addFields(to: &j)
      j.add("t", s.reading.shown.seconds, decimals: 3)
      return [("beacon/%/telemetry", j.line, .state)]
    })

  /// A key-finder tag: a "Ring NAME" button, its battery level and whether
  /// it is in reach.
  public static let tag = MQTTEntityKind<TagShown>(
    entity: { .tag($0.name) },
    subject: { (MQTTTopics.slug($0.name), $0.name) },
    configs: [
      .init(
        "button", "tag_%_ring", "Ring %",
        [
          ("command_topic", .topic("command/ring_tag/%")), ("payload_press", .text("PRESS")),
          ("availability", .availability([])),
        ]),
      .init(
        "sensor", "tag_%_battery", "% battery",
        [
          ("device_class", .text("battery")), ("unit_of_measurement", .text("%")),
          ("state_class", .text("measurement")), ("state_topic", .topic("tag/%/battery")),
          ("availability", .availability([])),
        ]),
      .init(
        "binary_sensor", "tag_%_connected", "% in reach",
        [
          ("device_class", .text("connectivity")), ("state_topic", .topic("tag/%/state")),
          ("payload_on", .text("connected")),
          ("value_template", .text("{{ 'connected' if value == 'connected' else 'off' }}")),
          ("payload_off", .text("off")), ("availability", .availability([])),
        ]),
    ],
    state: { t in
      var out: [(topic: String, payload: String, layer: MQTTShownState.Layer)] = [
        ("tag/%/state", t.state, .state)
      ]
      if let battery = t.battery { out.append(("tag/%/battery", String(battery), .state)) }
      return out
    })

  /// Find-phone's state (idle, starting, ringing, stopping, recovering), with
  /// the devices it rings for as attributes.
  public static let findPhone = MQTTEntityKind<FindShown>(
    entity: { _ in .findPhone },
    subject: { _ in ("", "") },
    configs: [
      .init(
        "sensor", "find_phone", "Find phone",
        [
          ("device_class", .text("enum")),
          (
            "options",
            .raw(
              "["
                + FindStatus.State.allCases.map { JSONLine.quoted($0.rawValue) }.joined(
                  separator: ",") + "]")
          ),
          ("icon", .text("mdi:cellphone-sound")), ("state_topic", .topic("find/state")),
          ("json_attributes_topic", .topic("find/attributes")), ("availability", .availability([])),
        ])
    ],
    state: { f in
      var j = JSONLine()
      j.addRaw("requesters", "[" + f.requesters.map(JSONLine.quoted).joined(separator: ",") + "]")
      return [("find/state", f.state.rawValue, .state), ("find/attributes", j.line, .state)]
    })

  /// The radio time the scan takes now (a diagnostic sensor, in percent),
  /// with the policy, power source, timing and mean duties as attributes.
  public static let scanDuty = MQTTEntityKind<ScanDutyReport>(
    entity: { _ in .scanDuty },
    subject: { _ in ("", "") },
    configs: [
      .init(
        "sensor", "scan_duty", "Scan duty",
        [
          ("entity_category", .text("diagnostic")), ("unit_of_measurement", .text("%")),
          ("state_class", .text("measurement")), ("icon", .text("mdi:radar")),
          ("state_topic", .topic("scan/duty")),
          ("json_attributes_topic", .topic("scan/attributes")),
          ("availability", .availability([])),
        ])
    ],
    state: { r in [("scan/duty", r.percent, .state), ("scan/attributes", r.json.encoded, .state)] })

  /// The fixed controls: ring and found buttons, volume number, mute switch.
  public static let controls = MQTTEntityKind<VolumeShown>(
    entity: { _ in .controls },
    subject: { _ in ("", "") },
    configs: [
      .init(
        "button", "ring", "Ring this laptop",
        [
          ("command_topic", .topic("command/ring")), ("payload_press", .text("PRESS")),
          ("availability", .availability([])),
        ]),
      .init(
        "button", "found", "Found",
        [
          ("command_topic", .topic("command/found")), ("payload_press", .text("PRESS")),
          ("availability", .availability([])),
        ]),
      .init(
        "number", "volume", "Volume",
        [
          ("command_topic", .topic("command/volume")), ("state_topic", .topic("volume/state")),
          ("min", .int(0)), ("max", .int(100)), ("step", .int(1)),
          ("unit_of_measurement", .text("%")), ("mode", .text("slider")),
          ("availability", .availability([])),
        ]),
      .init(
        "switch", "mute", "Mute",
        [
          ("command_topic", .topic("command/mute")), ("state_topic", .topic("mute/state")),
          ("payload_on", .text("ON")), ("payload_off", .text("OFF")),
          ("availability", .availability([])),
        ]),
    ],
    state: { v in
      [
        ("volume/state", String(Int((v.level * 100).rounded())), .state),
        ("mute/state", v.muted ? "ON" : "OFF", .state),
      ]
    })

  /// The event type of `trackers/event` (Home Assistant's event entity).
  public static let trackerFollowingEventType = "following"
  /// Where each tracker that starts to follow is told, once, not retained
  /// (an event replayed from a retained message would fire again).
  public static let trackerEventTopic = "trackers/event"

  /// Trackers following now (`[trackers] mqtt`): a sensor counting them,
  /// the trackers as its attributes, and an event entity that fires once
  /// per tracker that starts to follow (`trackerEventTopic`), for
  /// automations. Shown only when configured: nothing about strangers'
  /// trackers leaves the machine otherwise.
  public static let trackers = MQTTEntityKind<[TrackerShown]>(
    entity: { _ in .trackers },
    subject: { _ in ("", "") },
    configs: [
      .init(
        "sensor", "trackers_following", "Trackers following",
        [
          ("icon", .text("mdi:map-marker-alert")), ("state_class", .text("measurement")),
          ("state_topic", .topic("trackers/following")),
          ("json_attributes_topic", .topic("trackers/attributes")),
          ("availability", .availability([])),
        ]),
      .init(
        "event", "tracker_following", "Tracker following",
        [
          ("icon", .text("mdi:map-marker-alert")),
          ("event_types", .raw("[" + JSONLine.quoted(trackerFollowingEventType) + "]")),
          ("state_topic", .topic(trackerEventTopic)), ("availability", .availability([])),
        ]),
    ],
    state: { list in
      let rows = list.map { t -> String in
        var j = JSONLine()
        t.addFields(to: &j)
        return j.line
      }
      // The attributes first: an automation triggered by the count reads them.
      return [
        ("trackers/attributes", "{\"trackers\":[" + rows.joined(separator: ",") + "]}", .state),
        ("trackers/following", String(list.count), .state),
      ]
    })
}

// MARK: Rendering

extension MQTTTopics {
  /// A topic pattern of an entity under the base, `%` its slug.
  public func entityTopic(_ pattern: String, slug: String) -> String {
    base + "/" + fill(pattern, slug)
  }
}

extension HomeAssistantDiscovery {
  /// A discovery config of a subject.
  public func config<State>(
    _ row: MQTTDiscoveryRow<State>, slug: String, name: String
  ) -> Message {
    let object = fill(row.object, slug)
    var j = JSONLine()
    common(&j, row.component, object: object, name: fill(row.name, name))
    for (key, value) in row.fields {
      switch value {
      case .text(let s): j.add(key, s)
      case .int(let n): j.add(key, n)
      case .raw(let json): j.addRaw(key, json)
      case .topic(let p): j.add(key, topics.entityTopic(p, slug: slug))
      case .availability(let ps):
        j.addRaw(key, availability(ps.map { topics.entityTopic($0, slug: slug) }))
      }
    }
    return Message(topic: topic(row.component, object), payload: j.line)
  }
}

extension MQTTEntityKind {
  /// What showing `state` sets, grouped by entity in publication order:
  /// the discovery configs (when `discovery` is set), then the states.
  public func items(_ state: State, topics: MQTTTopics, discovery: HomeAssistantDiscovery?)
    -> [(entity: MQTTEntity, items: [MQTTShownState.Item])]
  {
    let own = entity(state)
    let slug = subject(state).slug
    var out: [(entity: MQTTEntity, items: [MQTTShownState.Item])] = []
    func append(_ e: MQTTEntity, _ item: MQTTShownState.Item) {
      if let last = out.last, last.entity == e {
        out[out.count - 1].items.append(item)
      } else {
        out.append((e, [item]))
      }
    }
    if let discovery {
      let (_, name) = subject(state)
      for row in configs where row.when?(state) ?? true {
        let m = discovery.config(row, slug: slug, name: name)
        append(row.entity?(state) ?? own, .init(m.topic, m.payload, .discovery))
      }
    }
    for s in self.state(state) {
      append(own, .init(topics.entityTopic(s.topic, slug: slug), s.payload, s.layer))
    }
    return out
  }
}
