/// Everything the monitor knows about one beacon identity.
struct TrackedBeacon: Sendable {
  var track: BeaconTrack
  var interval = AdvertisingIntervalEstimator()
}

/// The beacons the monitor tracks: records in one dense array (inline
/// filter and gap storage, no per-beacon heap blocks), found through a
/// small index. With ten thousand beacons a dictionary of full records
/// would leave a third of its buckets empty yet resident; here only the
/// index has spare buckets, and they are 24 bytes each.
struct BeaconTable: Sendable {
  private var index: [BeaconID: Int32] = [:]
  private(set) var beacons: ContiguousArray<TrackedBeacon> = []

  var count: Int { beacons.count }

  subscript(id: BeaconID) -> TrackedBeacon? {
    index[id].map { beacons[Int($0)] }
  }

  /// One report: creates the record on first sight.
  mutating func observe(
    _ id: BeaconID, address: BDAddress, rssi: Int8?, measuredPower: Int8, at t: Int64
  ) {
    let i: Int
    if let found = index[id] {
      i = Int(found)
    } else {
      i = beacons.count
      index[id] = Int32(i)
      beacons.append(
        TrackedBeacon(
          track: BeaconTrack(id: id, address: address, measuredPower: measuredPower, at: t)))
    }
    beacons[i].track.observe(address: address, rssi: rssi, measuredPower: measuredPower, at: t)
    beacons[i].interval.observe(at: t)
  }

  /// A gap in scanning: no beacon's next gap may span it.
  mutating func interruptIntervals() {
    for i in beacons.indices { beacons[i].interval.interrupt() }
  }

  /// Forgets beacons last seen before `horizon`, except those in `keep`;
  /// the last record moves into each hole, so this is linear.
  mutating func forget(seenBefore horizon: Int64, keep: Set<BeaconID>) {
    var i = 0
    while i < beacons.count {
      let id = beacons[i].track.id
      guard beacons[i].track.lastSeen < horizon, !keep.contains(id) else {
        i += 1
        continue
      }
      index[id] = nil
      let last = beacons.count - 1
      if i != last {
        beacons.swapAt(i, last)
        index[beacons[i].track.id] = Int32(i)
      }
      beacons.removeLast()
    }
  }
}
