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

  private func topic(_ component: String, _ object: String) -> String {
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
  private func common(_ j: inout JSONLine, _ component: String, object: String, name: String) {
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

  private func availability(_ extra: [String] = []) -> String {
    let entries = ([topics.availability] + extra).map { t in
      "{\"topic\":\(JSONLine.quoted(t)),\"payload_available\":\"online\",\"payload_not_available\":\"offline\"}"
    }
    return "[" + entries.joined(separator: ",") + "]"
  }

  /// A beacon's name in its entities' names.
  static func name(_ id: TrackedID) -> String {
    id.kind.row.label(id)
  }

  /// Occupancy per region. Unknown is unavailable (not off): the region's
  /// own availability topic goes offline while its state is unknown.
  public func region(_ name: String) -> Message {
    let object = "region_" + MQTTTopics.slug(name)
    var j = JSONLine()
    common(&j, "binary_sensor", object: object, name: "\(name) occupancy")
    j.add("device_class", "occupancy")
    j.add("state_topic", topics.regionState(name))
    j.add("payload_on", "inside")
    j.add("payload_off", "outside")
    j.addRaw("availability", availability([topics.regionAvailability(name)]))
    j.add("availability_mode", "all")
    return Message(topic: topic("binary_sensor", object), payload: j.line)
  }

  /// Presence of an identity region's devices (a person's phone and
  /// watch) as a tracker: home while inside, not_home while outside,
  /// unavailable while unknown. It reads the region's own state topic.
  public func deviceTracker(_ name: String) -> Message {
    let object = "tracker_" + MQTTTopics.slug(name)
    var j = JSONLine()
    common(&j, "device_tracker", object: object, name: name)
    j.add("state_topic", topics.regionState(name))
    j.add("payload_home", "inside")
    j.add("payload_not_home", "outside")
    j.add("source_type", "bluetooth_le")
    j.addRaw("availability", availability([topics.regionAvailability(name)]))
    j.add("availability_mode", "all")
    return Message(topic: topic("device_tracker", object), payload: j.line)
  }

  /// Distance per tracked beacon, from its JSON state.
  public func beacon(_ id: TrackedID, label: String? = nil) -> Message {
    let object = "beacon_" + MQTTTopics.slug(id)
    var j = JSONLine()
    common(&j, "sensor", object: object, name: "\(label ?? Self.name(id)) distance")
    j.add("device_class", "distance")
    j.add("unit_of_measurement", "m")
    j.add("state_class", "measurement")
    j.add("state_topic", topics.beaconState(id))
    j.add("value_template", "{{ value_json.distance }}")
    j.addRaw("json_attributes_topic", JSONLine.quoted(topics.beaconState(id)))
    j.addRaw("availability", availability())
    return Message(topic: topic("sensor", object), payload: j.line)
  }

  /// A beacon's telemetry: its battery voltage (diagnostic, mV), and its
  /// temperature when it has a sensor. Eddystone-TLM gives volts, not a
  /// charge level, so the sensor is a voltage: a percentage would be a
  /// guess about the cell.
  public func beaconTelemetry(_ id: TrackedID, label: String? = nil, temperature: Bool)
    -> [Message]
  {
    let object = "beacon_" + MQTTTopics.slug(id)
    let name = label ?? Self.name(id)
    var battery = JSONLine()
    common(&battery, "sensor", object: object + "_battery", name: "\(name) battery")
    battery.add("device_class", "voltage")
    battery.add("unit_of_measurement", "mV")
    battery.add("state_class", "measurement")
    battery.add("entity_category", "diagnostic")
    battery.add("state_topic", topics.beaconTelemetry(id))
    battery.add("value_template", "{{ value_json.battery_mv }}")
    battery.addRaw("json_attributes_topic", JSONLine.quoted(topics.beaconTelemetry(id)))
    battery.addRaw("availability", availability())
    var out = [Message(topic: topic("sensor", object + "_battery"), payload: battery.line)]
    if temperature {
      var t = JSONLine()
      common(&t, "sensor", object: object + "_temperature", name: "\(name) temperature")
      t.add("device_class", "temperature")
      t.add("unit_of_measurement", "°C")
      t.add("state_class", "measurement")
      t.add("state_topic", topics.beaconTelemetry(id))
      t.add("value_template", "{{ value_json.temperature }}")
      t.addRaw("availability", availability())
      out.append(Message(topic: topic("sensor", object + "_temperature"), payload: t.line))
    }
    return out
  }

  /// A key-finder tag: a "Ring NAME" button and its battery level.
  public func tag(_ name: String) -> [Message] {
    let object = "tag_" + MQTTTopics.slug(name)
    var ring = JSONLine()
    common(&ring, "button", object: object + "_ring", name: "Ring \(name)")
    ring.add("command_topic", topics.ringTagCommand(name))
    ring.add("payload_press", "PRESS")
    ring.addRaw("availability", availability())
    var battery = JSONLine()
    common(&battery, "sensor", object: object + "_battery", name: "\(name) battery")
    battery.add("device_class", "battery")
    battery.add("unit_of_measurement", "%")
    battery.add("state_class", "measurement")
    battery.add("state_topic", topics.tagBattery(name))
    battery.addRaw("availability", availability())
    var link = JSONLine()
    common(&link, "binary_sensor", object: object + "_connected", name: "\(name) in reach")
    link.add("device_class", "connectivity")
    link.add("state_topic", topics.tagState(name))
    link.add("payload_on", "connected")
    link.add("value_template", "{{ 'connected' if value == 'connected' else 'off' }}")
    link.add("payload_off", "off")
    link.addRaw("availability", availability())
    return [
      Message(topic: topic("button", object + "_ring"), payload: ring.line),
      Message(topic: topic("sensor", object + "_battery"), payload: battery.line),
      Message(topic: topic("binary_sensor", object + "_connected"), payload: link.line),
    ]
  }

  /// Find-phone's state (idle, starting, ringing, stopping, recovering),
  /// with the devices it rings for as attributes.
  public func findPhone() -> Message {
    var j = JSONLine()
    common(&j, "sensor", object: "find_phone", name: "Find phone")
    j.add("device_class", "enum")
    j.addRaw(
      "options",
      "[" + FindStatus.State.allCases.map { JSONLine.quoted($0.rawValue) }.joined(separator: ",")
        + "]")
    j.add("icon", "mdi:cellphone-sound")
    j.add("state_topic", topics.findState)
    j.add("json_attributes_topic", topics.findAttributes)
    j.addRaw("availability", availability())
    return Message(topic: topic("sensor", "find_phone"), payload: j.line)
  }

  /// The radio time the scan takes now (a diagnostic sensor, in percent),
  /// with the policy, power source, timing and mean duties as attributes.
  public func scanDuty() -> Message {
    var j = JSONLine()
    common(&j, "sensor", object: "scan_duty", name: "Scan duty")
    j.add("entity_category", "diagnostic")
    j.add("unit_of_measurement", "%")
    j.add("state_class", "measurement")
    j.add("icon", "mdi:radar")
    j.add("state_topic", topics.scanDuty)
    j.add("json_attributes_topic", topics.scanAttributes)
    j.addRaw("availability", availability())
    return Message(topic: topic("sensor", "scan_duty"), payload: j.line)
  }

  /// The fixed entities: ring and found buttons, volume number, mute switch.
  public func controls() -> [Message] {
    var ring = JSONLine()
    common(&ring, "button", object: "ring", name: "Ring this laptop")
    ring.add("command_topic", topics.ringCommand)
    ring.add("payload_press", "PRESS")
    ring.addRaw("availability", availability())

    var found = JSONLine()
    common(&found, "button", object: "found", name: "Found")
    found.add("command_topic", topics.foundCommand)
    found.add("payload_press", "PRESS")
    found.addRaw("availability", availability())

    var volume = JSONLine()
    common(&volume, "number", object: "volume", name: "Volume")
    volume.add("command_topic", topics.volumeCommand)
    volume.add("state_topic", topics.volumeState)
    volume.add("min", 0)
    volume.add("max", 100)
    volume.add("step", 1)
    volume.add("unit_of_measurement", "%")
    volume.add("mode", "slider")
    volume.addRaw("availability", availability())

    var mute = JSONLine()
    common(&mute, "switch", object: "mute", name: "Mute")
    mute.add("command_topic", topics.muteCommand)
    mute.add("state_topic", topics.muteState)
    mute.add("payload_on", "ON")
    mute.add("payload_off", "OFF")
    mute.addRaw("availability", availability())

    return [
      Message(topic: topic("button", "ring"), payload: ring.line),
      Message(topic: topic("button", "found"), payload: found.line),
      Message(topic: topic("number", "volume"), payload: volume.line),
      Message(topic: topic("switch", "mute"), payload: mute.line),
    ]
  }
}

/// Limits per-beacon publications to one per `interval` seconds each, and
/// always lets a proximity change through (people automate on it).
public struct BeaconRateLimiter: Sendable {
  public let interval: Double
  private var last: [TrackedID: (time: Double, proximity: String)] = [:]

  public init(interval: Double) { self.interval = interval }

  public mutating func shouldPublish(_ id: TrackedID, proximity: String, at time: Double) -> Bool {
    if let prev = last[id], time - prev.time < interval, prev.proximity == proximity {
      return false
    }
    last[id] = (time, proximity)
    return true
  }

  /// The beacon is no longer shown: its next report publishes at once.
  public mutating func forget(_ id: TrackedID) { last[id] = nil }
}
