/// Home Assistant discovery for rooms: per beacon or device, a `sensor`
/// "Room" showing its room (`away` when no agent hears it), read from the
/// retained JSON state, and a `device_tracker` named as its device, whose
/// state is the room's name or `not_home`, read from the plain `location`
/// topic; both grouped under one device per beacon. Home Assistant prefixes
/// the device's name, so the entities are "Beacon 1/10 Room" and
/// "Beacon 1/10". Available while the aggregator that decides them is
/// online.
public struct RoomsDiscovery: Sendable {
  public let topics: RoomTopics
  public let aggregatorStatus: String
  public let version: String
  public let prefix: String

  public init(topics: RoomTopics, aggregatorStatus: String, version: String, prefix: String) {
    self.topics = topics
    self.aggregatorStatus = aggregatorStatus
    self.version = version
    self.prefix = prefix
  }

  /// The room as the retained state says it (`beacon`, or `device` and
  /// its `name`).
  public static func state(_ change: RoomChange) -> String {
    var j = JSONLine()
    j.add("t", change.t.seconds, decimals: 3)
    change.addSubject(to: &j)
    if let room = change.room { j.add("room", room) } else { j.addNull("room") }
    return j.line
  }

  /// The room as the tracker's plain `location` topic says it.
  public static func location(_ change: RoomChange) -> String { change.room ?? "not_home" }

  public func messages(for beacon: TrackedID) -> [HomeAssistantDiscovery.Message] {
    messages(for: .beacon(beacon))
  }

  /// A device is labelled by its `track` name when it has one, else by
  /// its id; its object id comes from the id, so renaming keeps the entity.
  public func messages(for subject: RoomSubject, name: String? = nil)
    -> [HomeAssistantDiscovery.Message]
  {
    let object = "earshot_room_" + subject.slug
    let label: String
    let model: String
    switch subject {
    case .beacon(let beacon):
      label = "Beacon \(beacon.major)/\(beacon.minor)"
      model = "iBeacon \(beacon)"
    case .device(let d):
      label = name ?? "Device \(d)"
      model = "Bluetooth device \(d)"
    }
    // `name` nil: the entity is the device itself (JSON null).
    func common(
      _ j: inout JSONLine, _ component: String, _ suffix: String, _ name: String?, state: String
    ) {
      if let name { j.add("name", name) } else { j.addNull("name") }
      HomeAssistantDiscovery.addIDs(&j, component: component, object: object + suffix)
      j.add("state_topic", state)
      j.addRaw("json_attributes_topic", JSONLine.quoted(topics.state(subject)))
      var device = JSONLine()
      device.addRaw("identifiers", "[\(JSONLine.quoted(object))]")
      device.add("name", label)
      device.add("manufacturer", "Earshot")
      device.add("model", model)
      device.add("sw_version", version)
      j.addRaw("device", device.line)
      j.add("availability_topic", aggregatorStatus)
      j.add("payload_available", "online")
      j.add("payload_not_available", "offline")
    }
    var sensor = JSONLine()
    common(&sensor, "sensor", "", "Room", state: topics.state(subject))
    sensor.add("icon", "mdi:home-map-marker")
    sensor.add("value_template", "{{ value_json.room if value_json.room else 'away' }}")
    var tracker = JSONLine()
    common(&tracker, "device_tracker", "_tracker", nil, state: topics.location(subject))
    tracker.add("source_type", "bluetooth_le")
    tracker.add("payload_home", "home")
    tracker.add("payload_not_home", "not_home")
    return [
      .init(topic: "\(prefix)/sensor/earshot_rooms/\(object)/config", payload: sensor.line),
      .init(
        topic: "\(prefix)/device_tracker/earshot_rooms/\(object)/config", payload: tracker.line),
    ]
  }
}
