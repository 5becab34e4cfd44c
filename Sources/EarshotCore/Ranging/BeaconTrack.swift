/// What ranging knows about one beacon identity (UUID, major, minor),
/// whichever advertiser address its reports come from.
public struct BeaconTrack: Sendable {
  public let id: BeaconID
  public private(set) var address: BDAddress
  public private(set) var measuredPower: Int8
  public private(set) var lastSeen: Int64
  /// Last report that carried an RSSI.
  public private(set) var lastRSSITime: Int64? = nil
  public private(set) var filter = RSSIFilter()

  public init(id: BeaconID, address: BDAddress, measuredPower: Int8, at t: Int64) {
    self.id = id
    self.address = address
    self.measuredPower = measuredPower
    self.lastSeen = t
  }

  public mutating func observe(address: BDAddress, rssi: Int8?, measuredPower: Int8, at t: Int64) {
    self.address = address
    self.measuredPower = measuredPower
    lastSeen = t
    if let rssi {
      // A long silence makes the old estimate meaningless: start afresh.
      if let last = lastRSSITime, t - last > RSSIFilter.windowMicros * 4 { filter.reset() }
      filter.add(Double(rssi), at: t)
      lastRSSITime = t
    }
  }

  /// The ranged view at `now`: proximity is unknown when there is no recent
  /// RSSI, or when the beacon's measured power is implausible (+116 dBm
  /// beacons exist) and so no distance can be trusted.
  public func ranged(at now: Int64, model: PathLossModel, staleAfter: Double) -> RangedBeacon {
    let rssi = filter.value
    let fresh = lastRSSITime.map { Double(now - $0) / 1e6 <= staleAfter } ?? false
    let power = IBeacon(id: id, measuredPower: measuredPower)
    guard let rssi, fresh, !power.isPowerSuspect else {
      return RangedBeacon(
        id: id, address: address, rssi: fresh ? rssi : nil, accuracy: nil, proximity: .unknown)
    }
    let d = model.distance(rssi: rssi, measuredPower: Double(measuredPower))
    return RangedBeacon(
      id: id, address: address, rssi: rssi, accuracy: d, proximity: Proximity(distance: d))
  }
}

/// One beacon in a range update.
public struct RangedBeacon: Sendable, Equatable {
  public let id: BeaconID
  public let address: BDAddress
  /// Filtered RSSI in dBm; `nil` when none is recent.
  public let rssi: Double?
  /// Estimated distance in metres; `nil` when proximity is unknown.
  public let accuracy: Double?
  public let proximity: Proximity

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
