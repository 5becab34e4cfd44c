#if canImport(Glibc)
  import Glibc
#endif

/// What an ESPresense node would publish for the advertisements its radio
/// heard: a model of the firmware's report path (ESPresense at commit
/// a6f1105e, `BleFingerprint::seen`, `report` and `fill`, and
/// `AdaptivePercentileRSSI`), with its defaults. It lets `earshot rooms`
/// be tested with ESPresense nodes beside Earshot agents, from the same
/// simulated house, without ESP32s. Messages are byte for byte what the
/// firmware sends; times are the node's wall clock in milliseconds.
///
/// What the firmware does, and so this model:
/// - RSSI (less `rx_adj_rssi`) goes into a window of 15 s that also holds
///   at most 20 readings at first; every 10 s the cap is set to 1.5 × the
///   readings a window holds at the present rate (10…200), when that
///   differs from it by more than a quarter.
/// - `rssi` is the mean of the readings inside the Tukey fences (1.5 IQR);
///   `distance` is 10^((rssi@1m − rssi) / (10 × absorption)), absorption
///   2.7; `rssiVar` and `var` are the window's variances of RSSI and of
///   each reading's distance.
/// - A report follows a sighting, once per sighting at most. The first is
///   due at the device's time slot (djb2 of the id, mod 64, × 78 ms into
///   the current 5 s interval), later ones at the next 5 s boundary; a
///   move of 0.5 m or more since the last report makes one due earlier.
///   Nothing is reported beyond 16 m.
/// - Fields in the firmware's order; floats with two decimals; `int` is
///   the mean interval in whole ms since the first sighting.
///
/// Left out, as nodes hearing only beacons would not send them: `name`,
/// `mV`, `batt`, `temp`, `rh`, `irk`.
public struct ESPresenseNodeModel: Sendable {
  public struct Settings: Sendable {
    public var absorption: Float = 2.7
    public var skipMs: UInt64 = 5000
    public var skipDistance: Float = 0.5
    public var maxDivisor: Int64 = 10
    public var rxAdjRssi = 0
    public var maxDistance: Float = 16
    public init() {}
  }

  /// The node's room id as it names it in topics (`ESPresenseFormat.room`).
  public let room: String
  public let settings: Settings
  private var devices: [String: Device] = [:]

  public init(room: String, settings: Settings = Settings()) {
    self.room = ESPresenseFormat.room(room)
    self.settings = settings
  }

  struct Reading: Sendable {
    var rssi: Float
    var ms: UInt64
  }

  struct Device: Sendable {
    var mac: String
    var power: Int
    var readings: [Reading] = []
    var maxReadings = 20
    var lastRateCheck: UInt64 = 0
    var seenCount: UInt64 = 1
    var firstSeenMs: UInt64
    var nextReportMs: UInt64
    var lastReported: Float = 0
    var rssi: Float = 0
    var rssiVar: Float = 0
    var dist: Float = 0
    var distVar: Float = 0
    var close = false
  }

  static let windowMs: UInt64 = 15000
  static let timeSlots: UInt64 = 64

  /// The firmware's time slot of an id (djb2, mod 64).
  static func timeSlot(_ id: String) -> UInt64 {
    var hash: UInt32 = 5381
    for b in id.utf8 { hash = (hash << 5) &+ hash &+ UInt32(b) }
    return UInt64(hash % UInt32(timeSlots))
  }

  /// One advertisement: the device's ESPresense id and mac, its 1 m power
  /// and the raw RSSI, at `now` ms. Returns the report it triggers, if any.
  public mutating func heard(id: String, mac: String, power: Int, rssi raw: Int, at now: UInt64)
    -> (topic: String, payload: String)?
  {
    var d =
      devices[id]
      ?? Device(
        mac: mac, power: power, firstSeenMs: now,
        nextReportMs: (now / settings.skipMs) * settings.skipMs + Self.timeSlot(id)
          * (settings.skipMs / Self.timeSlots))
    d.seenCount += 1
    d.power = power
    add(Float(raw - settings.rxAdjRssi), at: now, to: &d)
    d.rssi = Self.medianIQR(d.readings.map(\.rssi))
    d.rssiVar = Self.variance(d.readings.map(\.rssi))
    let absorption = settings.absorption
    func distance(_ r: Float) -> Float {
      powf(10, (Float(power) - r) / (10 * absorption))
    }
    d.dist = distance(d.rssi)
    d.distVar = Self.variance(d.readings.map { distance($0.rssi) })
    // shouldCount, run by the report loop before reporting.
    if !d.close && d.rssi > Float(-40 + settings.rxAdjRssi) {
      d.close = true
    } else if d.close && d.rssi < Float(-50 + settings.rxAdjRssi) {
      d.close = false
    }
    defer { devices[id] = d }
    guard due(&d, now: now) else { return nil }
    return (
      ESPresenseFormat.prefix + "/devices/" + id + "/" + room,
      Self.fill(d, id: id, now: now, rxAdj: settings.rxAdjRssi)
    )
  }

  private func add(_ rssi: Float, at now: UInt64, to d: inout Device) {
    d.readings.append(Reading(rssi: rssi, ms: now))
    if d.readings.count > d.maxReadings { d.readings.removeFirst(d.readings.count - d.maxReadings) }
    while let first = d.readings.first, now - first.ms > Self.windowMs { d.readings.removeFirst() }
    if now - d.lastRateCheck > 10000 {
      adjustCap(&d, now: now)
      d.lastRateCheck = now
    }
  }

  private func adjustCap(_ d: inout Device, now: UInt64) {
    guard let oldest = d.readings.first else { return }
    let elapsed = Float(now - oldest.ms) / 1000
    guard elapsed > 0 else { return }
    let rate = Float(d.readings.count) / elapsed
    let ideal = min(200, max(10, Int((rate * Float(Self.windowMs) / 1000).rounded(.up) * 1.5)))
    if abs(ideal - d.maxReadings) > d.maxReadings / 4 {
      d.maxReadings = ideal
      if d.readings.count > ideal { d.readings.removeFirst(d.readings.count - ideal) }
    }
  }

  /// `BleFingerprint::report`'s timing: whether a report is due now.
  private func due(_ d: inout Device, now: UInt64) -> Bool {
    if settings.maxDistance > 0 && d.dist > settings.maxDistance { return false }
    if now < d.nextReportMs {
      let movement = abs(d.dist - d.lastReported)
      guard settings.skipDistance > 0, movement >= settings.skipDistance else { return false }
      // log2f(roundf(powf(2, x))), where a float 2^x overflows past 128.
      let x = movement / settings.skipDistance
      let log2 = x < 64 ? Int64(log2f(roundf(powf(2, x)))) : 64
      let divisor = max(2, min(settings.maxDivisor, settings.maxDivisor - log2))
      let early = settings.skipMs / UInt64(divisor)
      if now + early < d.nextReportMs { return false }
    }
    let skip = settings.skipMs
    d.nextReportMs = now + (skip - now % skip) % skip
    d.lastReported = d.dist
    return true
  }

  static func fill(_ d: Device, id: String, now: UInt64, rxAdj: Int) -> String {
    var j = JSONLine()
    j.add("mac", d.mac)
    j.add("id", id)
    j.add("rssi@1m", d.power)
    if d.rssi > -128 && (d.rssi.isNormal || d.rssi == 0) {
      j.addRaw("rssi", two(d.rssi))
    }
    j.add("rxAdj", rxAdj)
    if d.rssiVar.isNormal { j.addRaw("rssiVar", two(d.rssiVar)) }
    if d.dist.isNormal || d.dist == 0 { j.addRaw("distance", two(d.dist)) }
    if d.distVar.isNormal || d.distVar == 0 { j.addRaw("var", two(d.distVar)) }
    if d.close { j.add("close", true) }
    j.add("int", Int((now - d.firstSeenMs) / d.seenCount))
    return j.line
  }

  /// Arduino's `String(float, 2)`.
  static func two(_ v: Float) -> String { JSONLine.format(Double(v), decimals: 2) }

  /// The mean of the values inside the Tukey fences (k = 1.5), with the
  /// firmware's interpolated quartiles; the median if none survive.
  static func medianIQR(_ values: [Float]) -> Float {
    guard !values.isEmpty else { return 0 }
    let v = values.sorted()
    func quantile(_ p: Float) -> Float {
      let pos = p * Float(v.count - 1)
      let lo = Int(pos)
      let frac = pos - Float(lo)
      return lo + 1 < v.count ? v[lo] * (1 - frac) + v[lo + 1] * frac : v[lo]
    }
    let q1 = quantile(0.25)
    let q3 = quantile(0.75)
    let iqr = q3 - q1
    let inside = v.filter { $0 >= q1 - 1.5 * iqr && $0 <= q3 + 1.5 * iqr }
    return inside.isEmpty ? quantile(0.5) : inside.reduce(0, +) / Float(inside.count)
  }

  /// E(x²) − E(x)², not below 0; 0 for fewer than two values.
  static func variance(_ values: [Float]) -> Float {
    guard values.count >= 2 else { return 0 }
    var sum: Float = 0
    var squares: Float = 0
    for x in values {
      sum += x
      squares += x * x
    }
    let mean = sum / Float(values.count)
    return max(0, squares / Float(values.count) - mean * mean)
  }
}
