/// Which regions each known device counts for, and when it was last
/// heard: the devices regions name (`device =`, `irk =`), those bonded
/// here and `[rooms] track`'s, as positions in one `DeviceDirectory`.
///
/// Guarantees:
/// - a report of a known device costs one resolve and one array read: no
///   identity is hashed and no region walked per report, and its record is
///   found where it was last (`recordHint`, checked against the record)
///   without the beacon table's index;
/// - a device's last sighting survives a reload and a change of the bonds
///   (carried over by identity), and a device no longer known is dropped;
/// - `[rooms] track`'s devices are kept as at start through reloads (the
///   rooms' sightings are set up once; a `track` change needs a restart).
struct DeviceRouting: Sendable {
  /// The devices and how their addresses resolve.
  private(set) var directory: DeviceDirectory
  /// Whether any region (or `[rooms] track`) names a device: if none
  /// does, a report that is not a beacon only moves time.
  private(set) var watches = false
  private let rooms: [TrackedDevice]
  /// For each of `directory.entries`: the regions that count it.
  private(set) var regionsOf: [[Int]] = []
  /// For each of `directory.entries`: when it was last heard.
  private(set) var lastHeard: [Int64?] = []
  /// For each of `directory.entries`: where its record in the beacon table
  /// was at its last report (-1: not yet). Only a hint: forgetting moves
  /// records, so the table checks the id there before using it. Asking the
  /// table's index costs a hash and a cold probe a report (on top of the
  /// resolver's), the identity path's extra in the live bench
  /// (docs/performance.md).
  var recordHint: [Int32] = []

  init(cipher: (any BlockCipher)?, rooms: [TrackedDevice]) {
    directory = DeviceDirectory(cipher: cipher)
    self.rooms = rooms
  }

  /// The regions as they are now (at start and at each reload).
  mutating func configure(_ regions: [RegionConfig]) {
    let before = lastHeardByDevice
    directory.configure(regions, tracked: rooms)
    watches = regions.contains { $0.watchesDevices } || !rooms.isEmpty
    route(regions, lastHeard: before)
  }

  /// The bond store, whole, as it is now.
  mutating func updateBondedKeys(_ keys: [BondedKey], regions: [RegionConfig]) {
    let before = lastHeardByDevice
    if directory.updateBondedKeys(keys) { route(regions, lastHeard: before) }
  }

  /// The position of the device that sent from `address`, if known.
  mutating func resolve(_ address: BDAddress, type: AddressType) -> Int? {
    directory.resolve(address, type: type)
  }

  mutating func heard(_ n: Int, at t: Int64) { lastHeard[n] = t }

  /// When a device (by identity address) was last heard, directly or
  /// through its key.
  func lastHeard(address: BDAddress) -> Int64? {
    directory.entries.indices.lazy.filter { self.directory.entries[$0].address == address }
      .compactMap { self.lastHeard[$0] }.max()
  }

  private var lastHeardByDevice: [DeviceIdentity: Int64] {
    var out: [DeviceIdentity: Int64] = [:]
    for (n, d) in directory.entries.enumerated() where n < lastHeard.count {
      if let t = lastHeard[n] { out[d] = t }
    }
    return out
  }

  private mutating func route(_ regions: [RegionConfig], lastHeard before: [DeviceIdentity: Int64])
  {
    regionsOf = directory.entries.map { d in regions.indices.filter { regions[$0].matches(d) } }
    lastHeard = directory.entries.map { before[$0] }
    recordHint = Array(repeating: -1, count: directory.entries.count)
  }
}
