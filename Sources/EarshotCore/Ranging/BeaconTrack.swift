/// Where the 1 m power that ranging starts from came from.
public enum PowerSource: String, Sendable, Equatable {
  /// An iBeacon's calibrated measured power.
  case measured
  /// A device's TX Power Level AD field, less the free-space loss over 1 m.
  case txPower = "tx_power"
  /// The region's `power =` (a device that advertises no TX power).
  case region

  /// A device's power at 1 m: its TX Power Level less the free-space loss
  /// over 1 m at 2.4 GHz, 20 log10(4π / 0.125 m) = 40 dB, rounded to the
  /// usual 41 dB (Android's beacon libraries use it); without one (or the
  /// "no power" -127), `fallback` (a region's `power =`).
  public static func device(txPower: Int8?, fallback: Int8) -> (power: Int8, source: PowerSource) {
    if let tx = txPower, tx > -127 { return (Int8(clamping: Int(tx) - 41), .txPower) }
    return (fallback, .region)
  }
}

/// What ranging knows about one beacon identity (UUID, major, minor) or
/// device, whichever advertiser address its reports come from.
public struct BeaconTrack: Sendable {
  public let id: TrackKey
  // The two one-byte fields first, in the padding after the id.
  public private(set) var measuredPower: Int8
  public private(set) var powerSource: PowerSource
  public private(set) var address: BDAddress
  public private(set) var lastSeen: DecisionTime
  /// Last report that carried an RSSI.
  public private(set) var lastRSSITime: DecisionTime? = nil
  public private(set) var filter = RSSIFilter()

  public init(
    id: TrackKey, address: BDAddress, measuredPower: Int8, powerSource: PowerSource = .measured,
    at t: DecisionTime
  ) {
    self.id = id
    self.address = address
    self.measuredPower = measuredPower
    self.powerSource = powerSource
    self.lastSeen = t
  }

  public mutating func observe(
    address: BDAddress, rssi: Int8?, measuredPower: Int8, powerSource: PowerSource = .measured,
    at t: DecisionTime
  ) {
    self.address = address
    self.measuredPower = measuredPower
    self.powerSource = powerSource
    lastSeen = t
    if let rssi {
      // A long silence makes the old estimate meaningless: start afresh.
      if let last = lastRSSITime, t.micros - last.micros > RSSIFilter.windowMicros * 4 {
        filter.reset()
      }
      filter.add(Double(rssi), at: t)
      lastRSSITime = t
    }
  }

  /// The ranged view at `now`: proximity is unknown when there is no recent
  /// RSSI, or when the beacon's measured power is implausible (+116 dBm
  /// beacons exist) and so no distance can be trusted.
  public func ranged(at now: DecisionTime, model: PathLossModel, staleAfter: Double) -> RangedBeacon
  {
    let rssi = filter.value
    let fresh = lastRSSITime.map { Double(now.micros - $0.micros) / 1e6 <= staleAfter } ?? false
    guard let rssi, fresh, TrackedBeacon.plausiblePower.contains(measuredPower) else {
      return RangedBeacon(
        id: id, address: address, rssi: fresh ? rssi : nil, accuracy: nil, proximity: .unknown,
        powerSource: powerSource)
    }
    let d = model.distance(rssi: rssi, measuredPower: Double(measuredPower))
    return RangedBeacon(
      id: id, address: address, rssi: rssi, accuracy: d, proximity: Proximity(distance: d),
      powerSource: powerSource)
  }
}

/// One beacon (or device) in a range update.
public struct RangedBeacon: Sendable, Equatable {
  public let id: TrackKey
  public let address: BDAddress
  /// Filtered RSSI in dBm; `nil` when none is recent.
  public let rssi: Double?
  /// Estimated distance in metres; `nil` when proximity is unknown.
  public let accuracy: Double?
  public let proximity: Proximity
  /// Where the 1 m power for the distance came from.
  public let powerSource: PowerSource

  public init(
    id: TrackKey, address: BDAddress, rssi: Double?, accuracy: Double?, proximity: Proximity,
    powerSource: PowerSource = .measured
  ) {
    self.id = id
    self.address = address
    self.rssi = rssi
    self.accuracy = accuracy
    self.proximity = proximity
    self.powerSource = powerSource
  }

  /// Nearest first; unknown last; ties by identity so output is stable.
  public static func nearestFirst(_ a: RangedBeacon, _ b: RangedBeacon) -> Bool {
    switch (a.accuracy, b.accuracy) {
    case (let x?, let y?): return x != y ? x < y : a.id < b.id
    case (.some, nil): return true
    case (nil, .some): return false
    case (nil, nil): return a.id < b.id
    }
  }
}

extension BeaconTrack {
  /// An iBeacon's track.
  public init(id: TrackedID, address: BDAddress, measuredPower: Int8, at t: DecisionTime) {
    self.init(id: .beacon(id), address: address, measuredPower: measuredPower, at: t)
  }
}

extension RangedBeacon {
  /// An iBeacon in a range update.
  public init(
    id: TrackedID, address: BDAddress, rssi: Double?, accuracy: Double?, proximity: Proximity
  ) {
    self.init(
      id: .beacon(id), address: address, rssi: rssi, accuracy: accuracy, proximity: proximity)
  }
}
