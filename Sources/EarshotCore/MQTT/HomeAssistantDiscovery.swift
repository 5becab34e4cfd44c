/// Home Assistant MQTT discovery: one retained config message per entity
/// under `homeassistant/<component>/<node_id>/<object_id>/config`, all
/// grouped under one device (this laptop).
public struct HomeAssistantDiscovery: Sendable {
  public let topics: MQTTTopics
  /// Identifies this agent: the host name, slugged.
  public let nodeID: String
  public let deviceName: String
  public let version: String
  public let prefix: String

  public init(
    topics: MQTTTopics, hostname: String, version: String, prefix: String = "homeassistant"
  ) {
    self.topics = topics
    nodeID = "earshot_" + MQTTTopics.slug(hostname)
    deviceName = "Earshot on \(hostname)"
    self.version = version
    self.prefix = prefix
  }

  public struct Message: Equatable, Sendable {
    public let topic: String
    public let payload: String
  }

  func topic(_ component: String, _ object: String) -> String {
    "\(prefix)/\(component)/\(nodeID)/\(object)/config"
  }

  /// The entity id Home Assistant makes of an object id: its `slugify`
  /// (lower case, each run of characters other than `a-z0-9` one `_`, none
  /// at the ends). Object ids here are ASCII already (`MQTTTopics.slug`),
  /// so this is exactly the id HA 2024.3 generated from `object_id`.
  public static func entityID(_ component: String, _ objectID: String) -> String {
    var out = ""
    var gap = false
    for scalar in objectID.lowercased().unicodeScalars {
      switch scalar {
      case "a"..."z", "0"..."9":
        if gap && !out.isEmpty { out += "_" }
        gap = false
        out.unicodeScalars.append(scalar)
      default: gap = true
      }
    }
    return component + "." + (out.isEmpty ? "unknown" : out)
  }

  /// The entity's ids, the same on every HA (see docs/mqtt-home-assistant.md):
  /// `default_entity_id` for HA 2025.10 and later (2026.11 reads nothing
  /// else), `object_id` for the older ones, which drop the unknown key;
  /// both name the same entity id, and HA's registry keeps an existing one.
  static func addIDs(_ j: inout JSONLine, component: String, object: String) {
    j.add("unique_id", object)
    j.add("object_id", object)
    j.add("default_entity_id", entityID(component, object))
  }

  /// Fields every entity shares: ids, device block, origin, agent availability.
  func common(_ j: inout JSONLine, _ component: String, object: String, name: String) {
    j.add("name", name)
    Self.addIDs(&j, component: component, object: "\(nodeID)_\(object)")
    var device = JSONLine()
    device.addRaw("identifiers", "[\(JSONLine.quoted(nodeID))]")
    device.add("name", deviceName)
    device.add("manufacturer", "Earshot")
    device.add("model", "Earshot agent")
    device.add("sw_version", version)
    j.addRaw("device", device.line)
    var origin = JSONLine()
    origin.add("name", "earshot")
    origin.add("sw_version", version)
    j.addRaw("origin", origin.line)
  }

  func availability(_ extra: [String] = []) -> String {
    let entries = ([topics.availability] + extra).map { t in
      "{\"topic\":\(JSONLine.quoted(t)),\"payload_available\":\"online\",\"payload_not_available\":\"offline\"}"
    }
    return "[" + entries.joined(separator: ",") + "]"
  }

  /// A beacon's name in its entities' names.
  static func name(_ id: TrackedID) -> String {
    id.kind.row.label(id)
  }

  // The configs of each kind, one by one (the rows are in MQTTEntityKind.swift).

  /// A region's occupancy binary_sensor.
  public func region(_ name: String) -> Message {
    config(MQTTEntities.region.configs[0], slug: MQTTTopics.slug(name), name: name)
  }

  /// An identity region's device_tracker.
  public func deviceTracker(_ name: String) -> Message {
    config(MQTTEntities.region.configs[1], slug: MQTTTopics.slug(name), name: name)
  }

  /// A beacon's distance sensor.
  public func beacon(_ id: TrackedID) -> Message {
    config(MQTTEntities.beacon.configs[0], slug: MQTTTopics.slug(id), name: Self.name(id))
  }

  /// A beacon's battery sensor, and its temperature sensor when it has one.
  public func beaconTelemetry(_ id: TrackedID, temperature: Bool) -> [Message] {
    MQTTEntities.telemetry.configs.prefix(temperature ? 2 : 1).map {
      config($0, slug: MQTTTopics.slug(id), name: Self.name(id))
    }
  }

  /// A key-finder tag's ring button, battery and link.
  public func tag(_ name: String) -> [Message] {
    MQTTEntities.tag.configs.map { config($0, slug: MQTTTopics.slug(name), name: name) }
  }

  public func findPhone() -> Message {
    config(MQTTEntities.findPhone.configs[0], slug: "", name: "")
  }

  public func scanDuty() -> Message { config(MQTTEntities.scanDuty.configs[0], slug: "", name: "") }

  /// The fixed controls: ring and found buttons, volume number, mute switch.
  public func controls() -> [Message] {
    MQTTEntities.controls.configs.map { config($0, slug: "", name: "") }
  }
}

/// Limits per-beacon publications to one per `interval` seconds each, and
/// always lets a proximity change through (people automate on it). Counts
/// on the monitor's decision time, so a step of the wall clock (or when the
/// bridge runs) changes nothing.
public struct BeaconRateLimiter: Sendable {
  public let interval: Double
  private var last: [TrackedID: (time: DecisionTime, proximity: Proximity)] = [:]

  public init(interval: Double) { self.interval = interval }

  public mutating func shouldPublish(_ id: TrackedID, proximity: Proximity, at time: DecisionTime)
    -> Bool
  {
    if let prev = last[id], time.seconds - prev.time.seconds < interval,
      prev.proximity == proximity
    {
      return false
    }
    last[id] = (time, proximity)
    return true
  }

  /// The beacon is no longer shown: its next report publishes at once.
  public mutating func forget(_ id: TrackedID) { last[id] = nil }
}
