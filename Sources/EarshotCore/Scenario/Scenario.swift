#if canImport(Glibc)
  import Glibc
#endif

/// A scripted situation with ground truth, turned into the reports a
/// scanner would see: beacons with their advertising interval, loss,
/// distance over time and presence intervals, advertiser address changes,
/// and adapter downtime. Deterministic for a given seed. Used by
/// `earshot simulate scenario` and the monitor's tests.
public struct Scenario: Sendable {
  public var start: Int64 = 1_767_225_600_000_000
  public var duration = 600.0
  public var seed: UInt64 = 1
  /// Standard deviation of RSSI noise in dB.
  public var noise = 3.0
  /// Fraction of reports whose RSSI is a wild outlier (-20 dB).
  public var outliers = 0.0
  public var model = PathLossModel()
  public var beacons: [ScenarioBeacon] = []
  /// Devices advertising from their own addresses (phones, watches).
  public var devices: [ScenarioDevice] = []
  /// Seconds from `start` during which the adapter is down.
  public var adapterDown: [Range<Double>] = []

  public init() {}

  public enum Event: Sendable, Equatable {
    case report(t: WallTime, beacon: TrackedBeacon, address: BDAddress, rssi: Int8?)
    /// An advertisement of a device (not an iBeacon).
    case deviceReport(
      t: WallTime, address: BDAddress, type: AddressType, rssi: Int8?, txPower: Int8?)
    /// An Eddystone-TLM frame of a beacon with `telemetry`.
    case telemetry(t: WallTime, tlm: EddystoneTLM, address: BDAddress, rssi: Int8?)
    case adapterDown(t: WallTime)
    case adapterUp(t: WallTime)

    /// On the scenario's capture clock.
    public var t: WallTime {
      switch self {
      case .report(let t, _, _, _), .deviceReport(let t, _, _, _, _), .telemetry(let t, _, _, _),
        .adapterDown(let t), .adapterUp(let t):
        t
      }
    }
  }

  public func micros(_ seconds: Double) -> Int64 { start + Int64((seconds * 1e6).rounded()) }

  /// `seconds` from `start`, on the capture clock the scenario is written in.
  public func time(_ seconds: Double) -> WallTime { WallTime(micros: micros(seconds)) }

  /// Every report and adapter change, in time order. `cipher` makes the
  /// resolvable private addresses of devices with a key (required then).
  public func events(cipher: (any BlockCipher)? = nil) -> [Event] {
    var rng = SplitMix(seed: seed)
    var out: [Event] = []
    for down in adapterDown {
      out.append(.adapterDown(t: time(down.lowerBound)))
      out.append(.adapterUp(t: time(down.upperBound)))
    }
    for b in beacons {
      var s = b.phase
      var sent: UInt32 = 0
      while s < duration {
        defer { s += b.interval }
        // Advertising events carry a 0-10 ms random delay (Core spec advDelay).
        let t = s + Double(rng.next() % 10_000) / 1e6
        guard b.isPresent(at: t), !adapterDown.contains(where: { $0.contains(t) }) else {
          continue
        }
        if rng.unit() < b.loss { continue }
        let d = max(0.05, b.distance(at: t))
        var rssi = model.rssi(distance: d, measuredPower: Double(b.calibratedPower ?? b.power))
        rssi += noise * rng.gaussian()
        if rng.unit() < outliers { rssi -= 20 }
        let clamped = Int8(max(-127, min(20, rssi.rounded())))
        out.append(
          .report(
            t: time(t), beacon: TrackedBeacon(id: b.id, measuredPower: b.power),
            address: b.address(at: t), rssi: clamped))
        // Every tenth heard event is followed, half an interval later, by a
        // TLM frame from the same address (as Eddystone beacons interleave
        // them); no draw of the generator, so other beacons' reports stay.
        sent += 1
        if let telemetry = b.telemetry, sent % 10 == 0 {
          let tlmAt = t + b.interval / 2
          let tlm = EddystoneTLM(
            batteryMillivolts: telemetry.millivolts,
            temperatureRaw: Int16((telemetry.temperature * 256).rounded()),
            advertisingCount: sent, uptimeTenths: UInt32((tlmAt * 10).rounded()))
          out.append(
            .telemetry(t: time(tlmAt), tlm: tlm, address: b.address(at: t), rssi: clamped))
        }
      }
    }
    for (n, d) in devices.enumerated() {
      var s = d.phase
      while s < duration {
        defer { s += d.interval }
        let t = s + Double(rng.next() % 10_000) / 1e6
        guard d.isPresent(at: t), !adapterDown.contains(where: { $0.contains(t) }) else {
          continue
        }
        if rng.unit() < d.loss { continue }
        let metres = max(0.05, d.distance(at: t))
        let atOneMetre = d.txPower.map { Double($0) - 41 } ?? Double(d.power)
        var rssi = model.rssi(distance: metres, measuredPower: atOneMetre)
        rssi += noise * rng.gaussian()
        if rng.unit() < outliers { rssi -= 20 }
        let clamped = Int8(max(-127, min(20, rssi.rounded())))
        let (address, type) = d.address(at: t, seed: seed &+ UInt64(n), cipher: cipher)
        out.append(
          .deviceReport(
            t: time(t), address: address, type: type, rssi: clamped, txPower: d.txPower))
      }
    }
    return out.enumerated().sorted { ($0.element.t, $0.offset) < ($1.element.t, $1.offset) }
      .map(\.element)
  }

  /// The reports as a btsnoop capture (adapter changes cannot be written).
  public func capture(extended: Bool = false, cipher: (any BlockCipher)? = nil) -> SyntheticCapture
  {
    var c = SyntheticCapture()
    for e in events(cipher: cipher) {
      switch e {
      case .report(let t, let beacon, let address, let rssi):
        c.appendBeacon(
          micros: t.micros, beacon: beacon, address: address, rssi: rssi, extended: extended)
      case .telemetry(let t, let tlm, let address, let rssi):
        HCIEventEncoder.eddystoneTLMAdvertisingData(tlm).withUnsafeBytes { d in
          c.append(
            micros: t.micros,
            report: AdvertisingReport(
              pdu: .advNonconnInd, address: address, addressType: .random, rssi: rssi, data: d),
            extended: extended)
        }
      case .deviceReport(let t, let address, let type, let rssi, let txPower):
        c.appendDevice(
          micros: t.micros, address: address, type: type, rssi: rssi, txPower: txPower,
          extended: extended)
      case .adapterDown, .adapterUp:
        break
      }
    }
    return c
  }

  /// Metres at `t` from (seconds, metres) points: linear in between,
  /// constant outside.
  static func interpolate(_ points: [(t: Double, metres: Double)], at t: Double) -> Double {
    guard let first = points.first else { return 1 }
    if t <= first.t { return first.metres }
    for (a, b) in zip(points, points.dropFirst()) where t <= b.t {
      return a.metres + (b.metres - a.metres) * (t - a.t) / (b.t - a.t)
    }
    return points.last!.metres
  }

  /// Ground truth for a region: the union of its beacons' presence, in
  /// seconds from `start`.
  public func presence(matching region: RegionConfig) -> [Range<Double>] {
    let all =
      (beacons.filter { region.matches($0.id) }.flatMap(\.present)
      + devices.filter { $0.counts(for: region) }.flatMap(\.present))
      .sorted { $0.lowerBound < $1.lowerBound }
    var merged: [Range<Double>] = []
    for r in all {
      if let last = merged.last, r.lowerBound <= last.upperBound {
        merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, r.upperBound)
      } else {
        merged.append(r)
      }
    }
    return merged
  }
}

public struct ScenarioBeacon: Sendable {
  public var name: String
  public var id: TrackedID
  /// Measured power the beacon advertises.
  public var power: Int8 = -59
  /// Its real RSSI at 1 m when `power` is nonsense (+116); default `power`.
  public var calibratedPower: Int8? = nil
  public var interval = 1.0
  /// First advertising event, seconds from the start.
  public var phase = 0.0
  public var loss = 0.0
  public var present: [Range<Double>] = []
  /// (seconds, metres), linear in between; constant outside.
  public var distance: [(t: Double, metres: Double)] = [(0, 1)]
  /// Addresses with the second each takes over.
  public var addresses: [(from: Double, address: BDAddress)] = []
  /// What its Eddystone-TLM frames say (battery mV, °C); `nil`: it sends none.
  public var telemetry: (millivolts: UInt16, temperature: Double)? = nil

  public init(name: String, id: TrackedID) {
    self.name = name
    self.id = id
    addresses = [(0, BDAddress(raw: 0xC000_0000_0000 | UInt64(id.minor) << 8 | UInt64(id.major)))]
  }

  public func isPresent(at t: Double) -> Bool { present.contains { $0.contains(t) } }

  public func distance(at t: Double) -> Double { Scenario.interpolate(distance, at: t) }

  public func address(at t: Double) -> BDAddress {
    addresses.last { $0.from <= t }?.address ?? addresses[0].address
  }
}

/// A device that advertises from its own addresses: a phone or watch with
/// privacy (resolvable private addresses from its key, a new one every
/// `rotate` seconds), one without (its public or static identity), or a
/// stranger using non-resolvable private addresses.
public struct ScenarioDevice: Sendable {
  public enum AddressKind: String, Sendable, CaseIterable {
    /// Resolvable private addresses made from `irk`.
    case rpa
    /// Non-resolvable private addresses (never match any region).
    case nrpa
    /// The identity address, public.
    case `public`
    /// The identity address, static random.
    case `static`
  }

  public var name: String
  public var irk: IdentityResolvingKey?
  /// The identity address (public or static random).
  public var identity: BDAddress?
  public var kind: AddressKind = .rpa
  /// Seconds between address changes (rpa, nrpa); Core Specification
  /// devices default to 15 minutes.
  public var rotate = 900.0
  /// The TX Power Level it advertises, if any.
  public var txPower: Int8? = nil
  /// Its real RSSI at 1 m when it advertises no TX power.
  public var power: Int8 = -59
  public var interval = 1.0
  public var phase = 0.0
  public var loss = 0.0
  public var present: [Range<Double>] = []
  public var distance: [(t: Double, metres: Double)] = [(0, 1)]

  public init(name: String) { self.name = name }

  public func isPresent(at t: Double) -> Bool { present.contains { $0.contains(t) } }

  public func distance(at t: Double) -> Double { Scenario.interpolate(distance, at: t) }

  /// Whether a region counts this device (its identity or key is named).
  public func counts(for region: RegionConfig) -> Bool {
    guard kind != .nrpa else { return false }
    if let identity, region.devices.contains(identity) { return true }
    if kind == .rpa, let irk, region.irks.contains(irk) { return true }
    return false
  }

  /// The address it sends from at `t` (seconds) and its type as a report
  /// gives it. Private addresses change every `rotate` seconds, each drawn
  /// from `seed` and the period's number, so a run is repeatable.
  public func address(at t: Double, seed: UInt64, cipher: (any BlockCipher)?) -> (
    BDAddress, AddressType
  ) {
    switch kind {
    case .public:
      return (identity ?? BDAddress(raw: 0x00_1A_7D_00_00_01), .public)
    case .static:
      return (BDAddress(raw: (identity?.raw ?? 1) | 0xC000_0000_0000), .random)
    case .nrpa, .rpa:
      let period = UInt64(max(0, t / rotate))
      var rng = SplitMix(seed: seed &* 0x9E37_79B9_7F4A_7C15 &+ period)
      let bits = rng.next()
      if kind == .nrpa {
        return (BDAddress(raw: bits & 0x3FFF_FFFF_FFFF), .random)
      }
      guard let irk, let cipher else {
        preconditionFailure("a device with resolvable private addresses needs a key and a cipher")
      }
      return (irk.address(prand: UInt32(truncatingIfNeeded: bits), cipher: cipher), .random)
    }
  }
}

/// A small, fast, deterministic generator (SplitMix64).
struct SplitMix: Sendable {
  var state: UInt64
  init(seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
  /// Uniform in [0, 1).
  mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
  /// Standard normal (Box-Muller).
  mutating func gaussian() -> Double {
    let u = max(unit(), 1e-12)
    let v = unit()
    return sqrt(-2 * log(u)) * cos(2 * Double.pi * v)
  }
}
