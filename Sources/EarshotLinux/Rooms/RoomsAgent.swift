import EarshotCore

/// The agent's part in rooms: the tracked beacons' and devices' sightings,
/// one per subject per `[rooms] interval`, published through the agent's MQTT
/// bridge (QoS 0, not retained), and a retained record naming this room's
/// status topic, whose last will tells the aggregators when it is gone.
/// With `[rooms] espresense`, each sighting also goes out as the ESPresense
/// firmware sends one (`ESPresenseFormat`).
public final class RoomsAgent {
  public let room: String
  private var publisher: SightingPublisher
  private let bridge: MQTTBridge
  private let topics: RoomTopics
  private let espresense: Bool
  private let trackedDevices: [TrackedDevice]
  public private(set) var published = 0
  public private(set) var publishedESPresense = 0

  public init(config: Config, hostname: String, bridge: MQTTBridge) {
    room = config.rooms.room ?? hostname
    publisher = SightingPublisher(room: room, config: config)
    self.bridge = bridge
    topics = RoomTopics(config.rooms)
    espresense = config.rooms.espresense
    trackedDevices = config.rooms.trackDevices
    var j = JSONLine()
    j.add("room", room)
    j.add("status", bridge.availabilityTopic)
    j.add("interval", config.rooms.interval, decimals: 3)
    bridge.status(topics.agent(room), j.line)
  }

  /// Takes the monitor's iBeacon reports and its resolved device reports
  /// (live or replayed).
  public func attach(to driver: MonitorDriver) {
    // The publisher's intervals run on the monitor's decision time (live:
    // monotonic, so a step of the wall clock neither floods nor silences
    // the sightings); each sighting leaves stamped with the wall time.
    shown = { [unowned driver] in driver.timeline.shown($0) }
    driver.onBeacon = { t, beacon, report in  // the driver keeps this part alive
      self.report(
        at: DecisionTime(micros: t), beacon: beacon, address: report.address, rssi: report.rssi)
    }
    guard !publisher.trackDevices.isEmpty else { return }
    driver.onDevice = { t, device, report, tx in
      self.report(
        at: DecisionTime(micros: t), device: device, address: report.address, rssi: report.rssi,
        txPower: tx)
    }
  }

  public func report(
    at t: DecisionTime, device: DeviceIdentity?, address: BDAddress, rssi: Int8?, txPower: Int8?
  ) {
    guard
      let s = publisher.report(
        at: t, device: device, address: address, rssi: rssi, txPower: txPower)
    else { return }
    publish(s, address: address, power: txPower.map { Int8(clamping: Int($0) - 41) })
  }

  public func report(at t: DecisionTime, beacon: TrackedBeacon, address: BDAddress, rssi: Int8?) {
    guard let s = publisher.report(at: t, beacon: beacon, address: address, rssi: rssi) else {
      return
    }
    publish(s, address: address, power: beacon.measuredPower)
  }

  /// The wall time of a decision time (see `attach`; before it, a
  /// replay's: its decision time is the capture's clock).
  private var shown: (DecisionTime) -> WallTime = { WallTime(micros: $0.micros) }

  private func publish(_ due: SightingPublisher.Due, address: BDAddress, power: Int8?) {
    let s = due.sent(at: shown(due.t))
    bridge.stream(topics.sighting(s.subject, room: s.room), s.payload)
    published += 1
    guard espresense else { return }
    let irk = s.subject.device.flatMap { d in trackedDevices.first { $0.id == d }?.irk }
    guard let id = ESPresenseFormat.id(s.subject, irk: irk),
      let m = ESPresenseFormat.message(s, id: id, address: address, power: power)
    else { return }
    bridge.stream(m.topic, m.payload)
    publishedESPresense += 1
  }
}
