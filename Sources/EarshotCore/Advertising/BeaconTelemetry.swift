/// What a beacon says about itself (an Eddystone-TLM frame), as shown in
/// `status`, the proximity log and Home Assistant.
public struct BeaconTelemetry: Equatable, Sendable {
  /// When the frame was heard: the monitor's decision time (what joins
  /// and throttles count on) and the wall time shown for it (`status`, the
  /// log, MQTT), both taken once, so nothing downstream reads a clock.
  public var decided: DecisionTime
  public var shown: WallTime
  /// Battery voltage in mV; `nil` when the beacon reports none (0 in the frame).
  public var batteryMillivolts: Int?
  /// Degrees Celsius; `nil` when the beacon has no sensor (0x8000).
  public var temperature: Double?
  /// Advertising PDUs sent since the beacon powered on.
  public var advertisingCount: UInt32
  /// Seconds since the beacon powered on.
  public var uptimeSeconds: Double

  public init(
    decided: DecisionTime, shown: WallTime, batteryMillivolts: Int?, temperature: Double?,
    advertisingCount: UInt32, uptimeSeconds: Double
  ) {
    self.decided = decided
    self.shown = shown
    self.batteryMillivolts = batteryMillivolts
    self.temperature = temperature
    self.advertisingCount = advertisingCount
    self.uptimeSeconds = uptimeSeconds
  }

  public init(_ tlm: EddystoneTLM, decided: DecisionTime, shown: WallTime) {
    self.init(
      decided: decided, shown: shown,
      batteryMillivolts: tlm.batteryMillivolts == 0 ? nil : Int(tlm.batteryMillivolts),
      temperature: tlm.temperature, advertisingCount: tlm.advertisingCount,
      uptimeSeconds: tlm.uptimeSeconds)
  }

  /// The fields as `status` and MQTT show them (`battery_mv`,
  /// `temperature`, `adv_count`, `uptime` in seconds; the names
  /// `earshot scan --all` gives the frame's fields); what the beacon does
  /// not report is left out.
  public func addFields(to j: inout JSONLine) {
    if let batteryMillivolts { j.add("battery_mv", batteryMillivolts) }
    if let temperature { j.add("temperature", temperature, decimals: 2) }
    j.add("adv_count", Int(advertisingCount))
    j.add("uptime", uptimeSeconds, decimals: 1)
  }
}

/// Joins telemetry to beacons by address. An Eddystone beacon interleaves
/// its TLM frames with its UID frames, from one address; the TLM frame
/// names no beacon, so it belongs to whichever beacon that address last
/// advertised.
///
/// Guarantees:
/// - A reading is joined only to the beacon the same address last named;
///   a TLM heard before any identity frame from its address waits (the
///   newest one per address) and joins when that frame comes.
/// - An address that names another beacon moves its later readings there.
/// - Memory is bounded: at most `capacity` addresses and `capacity`
///   beacons' latest readings; the least recently heard go first.
public struct TelemetryJoiner: Sendable {
  public let capacity: Int
  private struct Source: Sendable {
    var beacon: TrackedID?
    var waiting: BeaconTelemetry?
    var heard: DecisionTime
  }
  private var sources: [BDAddress: Source] = [:]
  private var latest: [TrackedID: BeaconTelemetry] = [:]

  public init(capacity: Int = 1024) {
    precondition(capacity > 0)
    self.capacity = capacity
  }

  /// An identity frame (a tracked beacon) from `address`. Returns a
  /// reading that was waiting for it, now joined.
  public mutating func beacon(_ id: TrackedID, address: BDAddress, at t: DecisionTime)
    -> BeaconTelemetry?
  {
    guard let k = sources.index(forKey: address) else {
      store(address, Source(beacon: id, heard: t))
      return nil
    }
    // In place, one hash: this runs at every beacon report.
    sources.values[k].beacon = id
    sources.values[k].heard = max(sources.values[k].heard, t)
    guard let waiting = sources.values[k].waiting else { return nil }
    sources.values[k].waiting = nil
    keep(waiting, for: id)
    return waiting
  }

  /// A TLM frame from `address`, heard at `t` and shown as `shown`: the
  /// beacon it belongs to and its reading, or `nil` while no identity
  /// frame from that address has been heard.
  public mutating func telemetry(
    _ tlm: EddystoneTLM, address: BDAddress, at t: DecisionTime, shown: WallTime
  ) -> (TrackedID, BeaconTelemetry)? {
    let reading = BeaconTelemetry(tlm, decided: t, shown: shown)
    var s = sources[address] ?? Source(heard: t)
    s.heard = max(s.heard, t)
    guard let id = s.beacon else {
      s.waiting = reading
      store(address, s)
      return nil
    }
    store(address, s)
    keep(reading, for: id)
    return (id, reading)
  }

  /// The beacon's newest reading.
  public func telemetry(of id: TrackedID) -> BeaconTelemetry? { latest[id] }

  /// How many addresses and readings are held (tests: the bound).
  public var counts: (addresses: Int, readings: Int) { (sources.count, latest.count) }

  private mutating func store(_ address: BDAddress, _ s: Source) {
    if sources[address] == nil && sources.count >= capacity,
      let oldest = sources.min(by: { $0.value.heard < $1.value.heard })?.key
    {
      sources[oldest] = nil
    }
    sources[address] = s
  }

  private mutating func keep(_ reading: BeaconTelemetry, for id: TrackedID) {
    if latest[id] == nil && latest.count >= capacity,
      let oldest = latest.min(by: { $0.value.decided < $1.value.decided })?.key
    {
      latest[oldest] = nil
    }
    latest[id] = reading
  }
}

/// How often a beacon's telemetry is passed on (to MQTT, to the proximity
/// log): its first reading, then one per `interval`, or sooner when the
/// battery moved by `batteryStep` mV or more since the last one passed. A
/// beacon sends TLM every few seconds; its battery changes over weeks.
/// Times are the monitor's decision times (a reading's `decided`). Holds at most
/// `capacity` beacons, the least recently passed forgotten first.
public struct TelemetryThrottle: Sendable {
  public let interval: Duration
  public let batteryStep: Int
  public let capacity: Int
  private var last: [TrackedID: BeaconTelemetry] = [:]

  /// `interval` in seconds.
  public init(interval: Double, batteryStep: Int = 50, capacity: Int = 1024) {
    self.interval = .microseconds(Int64(interval * 1e6))
    self.batteryStep = batteryStep
    self.capacity = max(1, capacity)
  }

  public mutating func shouldPass(_ id: TrackedID, _ reading: BeaconTelemetry) -> Bool {
    if let previous = last[id] {
      let due =
        reading.decided.micros - previous.decided.micros >= interval.wholeMicros
        || reading.decided < previous.decided
      let moved =
        switch (previous.batteryMillivolts, reading.batteryMillivolts) {
        case (let a?, let b?): abs(a - b) >= batteryStep
        case (nil, nil): false
        default: true
        }
      guard due || moved else { return false }
    } else if last.count >= capacity,
      let oldest = last.min(by: { $0.value.decided < $1.value.decided })?.key
    {
      last[oldest] = nil
    }
    last[id] = reading
    return true
  }

  public mutating func forget(_ id: TrackedID) { last[id] = nil }
}
