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
  private let client: MQTTClient
  /// Retained topics in first-publication order, with their latest payload.
  private var retained: [String: String] = [:]
  private var retainedOrder: [String] = []
  private var limiter: BeaconRateLimiter
  private var announcedBeacons: Set<BeaconID> = []
  private var announcedRegions: Set<String> = []
  private var announcedTrackers: Set<String> = []

  public init(loop: EventLoop, settings: Options) throws {
    var options = settings.client
    options.will = (settings.topics.availability, "offline")
    self.settings = settings
    limiter = BeaconRateLimiter(interval: settings.beaconInterval)
    client = try MQTTClient(loop: loop, options: options)
    client.onConnect = { [weak self] in self?.republish() }
    client.onMessage = { [weak self] topic, payload in self?.received(topic, payload) }
    client.onLog = { [weak self] line in self?.onLog?(line) }
    if let d = settings.discovery {
      for m in d.controls() { keep(m.topic, m.payload) }
    }
  }

  public var isConnected: Bool { client.isConnected }

  public func start() {
    client.subscribe(settings.topics.commandPrefix + "+")
    client.start()
  }

  /// Says `offline` and disconnects (a clean stop; kill -9 leaves it to the will).
  public func close() {
    client.publish(settings.topics.availability, "offline", qos: settings.qos, retain: true)
    client.close()
  }

  // MARK: What Earshot reports

  /// `tracksDevices`: an identity region, which is also a device_tracker.
  public func regionState(_ region: String, state: String, tracksDevices: Bool = false) {
    if let d = settings.discovery, announcedRegions.insert(region).inserted {
      let m = d.region(region)
      keep(m.topic, m.payload)
    }
    if tracksDevices, let d = settings.discovery, announcedTrackers.insert(region).inserted {
      let m = d.deviceTracker(region)
      keep(m.topic, m.payload)
    }
    keep(settings.topics.regionState(region), state)
    keep(settings.topics.regionAvailability(region), state == "unknown" ? "offline" : "online")
  }

  /// A region event or find-phone state change, as a JSON line.
  public func event(_ json: String) {
    client.publish(settings.topics.events, json, qos: settings.qos, retain: false)
  }

  /// A ranged beacon; rate-limited per beacon except on proximity changes.
  public func beacon(
    _ id: BeaconID, distance: Double?, proximity: String, rssi: Int?, at time: Double
  ) {
    guard limiter.shouldPublish(id, proximity: proximity, at: time) else { return }
    if let d = settings.discovery, announcedBeacons.insert(id).inserted {
      let m = d.beacon(id)
      keep(m.topic, m.payload)
    }
    var j = JSONLine()
    if let distance { j.add("distance", distance, decimals: 2) } else { j.addNull("distance") }
    j.add("proximity", proximity)
    if let rssi { j.add("rssi", rssi) }
    j.add("uuid", id.uuid.description)
    j.add("major", Int(id.major))
    j.add("minor", Int(id.minor))
    keep(settings.topics.beaconState(id), j.line)
  }

  public func volume(_ level: Double, muted: Bool) {
    keep(settings.topics.volumeState, String(Int((level * 100).rounded())))
    keep(settings.topics.muteState, muted ? "ON" : "OFF")
  }

  public func findState(_ state: String) {
    keep(settings.topics.findState, state)
  }

  // MARK: Internals

  private func keep(_ topic: String, _ payload: String) {
    if retained.updateValue(payload, forKey: topic) == nil { retainedOrder.append(topic) }
    client.publish(topic, payload, qos: settings.qos, retain: settings.retain)
  }

  private func republish() {
    client.publish(settings.topics.availability, "online", qos: settings.qos, retain: true)
    for topic in retainedOrder {
      if let payload = retained[topic] {
        client.publish(topic, payload, qos: settings.qos, retain: settings.retain)
      }
    }
  }

  private func received(_ topic: String, _ payload: [UInt8]) {
    switch MQTTCommand.parse(topic: topic, payload: payload, topics: settings.topics) {
    case .success(let command): onCommand?(command)
    case .failure(let error): onLog?("mqtt: \(error)")
    }
  }
}
