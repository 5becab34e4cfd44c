import EarshotCore
import EarshotLinux

/// The bench's identity stage: devices found by their keys. 200
/// advertisers on resolvable private addresses, each taking a new address
/// every minute (staggered, so new addresses keep arriving); 50 of them
/// belong to the 50 keys of ten identity regions (five keys a person), the
/// other 150 to keys nobody knows. Run through the same stages as the
/// iBeacon room, so the ratio of the two is the cost of resolving.
enum BenchIdentity {
  static let advertisers = 200
  static let knownKeys = 50
  static let rotateMicros: Int64 = 60_000_000

  static func key(_ i: Int) -> IdentityResolvingKey {
    IdentityResolvingKey(
      Block128(high: 0x5EED_0000_0000_0000 | UInt64(i), low: 0x9E37_79B9_7F4A_7C15 &* UInt64(i + 1))
    )
  }

  /// The iBeacon regions plus ten people of five keys each.
  static func config(beacons: Config) -> Config {
    var c = beacons
    for person in 0..<(knownKeys / 5) {
      var r = RegionConfig(name: "person-\(person)", line: 100 + person)
      r.irks = (0..<5).map { key(person * 5 + $0) }
      r.exitAfter = c.monitor.exitAfter
      c.regions.append(r)
    }
    return c
  }

  /// `reports` advertisements, one per millisecond, from a random advertiser each.
  /// With `beacons`, the reference: the same advertisers on the same
  /// addresses at the same moments send iBeacons of the bench room's UUID
  /// instead (major = advertiser), so every report is in a region.
  static func capture(
    reports: Int, cipher: any BlockCipher, seed: UInt64 = 16, beacons: Bool = false
  ) -> [UInt8] {
    var capture = SyntheticCapture()
    var rng = seed
    func next() -> UInt64 {
      rng = rng &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return rng >> 33
    }
    // Advertiser `a` is key `a` (the first 50 are known); its period `p`
    // address is drawn once and kept.
    var addresses: [Int: BDAddress] = [:]
    let start: Int64 = 1_767_225_600_000_000
    for i in 0..<reports {
      let t = start + Int64(i) * 1000
      let a = Int(next() % UInt64(advertisers))
      // Staggered: advertiser a rotates at its own offset within the minute.
      let offset = rotateMicros * Int64(a) / Int64(advertisers)
      let period = Int((t - start + offset) / rotateMicros)
      let slot = a * 1_000_000 + period
      let address =
        addresses[slot]
        ?? {
          let made = key(a).address(
            prand: UInt32(truncatingIfNeeded: UInt64(slot) &* 0x9E37_79B9), cipher: cipher)
          addresses[slot] = made
          return made
        }()
      let rssi = Int8(-40 - Int(next() % 50))
      if beacons {
        let id = TrackedID(uuid: BenchMonitor.roomUUID, major: UInt16(a), minor: 0)
        capture.appendBeacon(
          micros: t, beacon: TrackedBeacon(id: id, measuredPower: -59), address: address, rssi: rssi
        )
      } else {
        capture.appendDevice(
          micros: t, address: address, type: .random, rssi: rssi, txPower: a % 2 == 0 ? 8 : nil)
      }
    }
    return capture.bytes
  }
}
