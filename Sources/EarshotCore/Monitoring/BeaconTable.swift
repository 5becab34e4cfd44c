/// Everything the monitor knows about one beacon identity.
struct TrackedBeacon: Sendable {
  var track: BeaconTrack
  var interval = AdvertisingIntervalEstimator()
}

/// The beacons the monitor tracks: records stored densely (inline filter
/// and gap storage, no heap block per beacon) and found through a small
/// index. With ten thousand beacons a dictionary of full records would
/// leave a third of its buckets empty yet resident; here only the index
/// has spare buckets, at 24 bytes each. Records live in fixed-size
/// segments, so growing never copies them all at once (a doubling array
/// briefly holds two copies: several megabytes of peak for nothing).
struct BeaconTable: Sendable {
  static let segmentSize = 512
  private var index: [TrackKey: Int32] = [:]
  private var segments: [ContiguousArray<TrackedBeacon>] = []
  private(set) var count = 0

  subscript(id: TrackKey) -> TrackedBeacon? {
    position(of: id).map { self[position: $0] }
  }

  /// Where a beacon's record is now (forgetting moves records).
  func position(of id: TrackKey) -> Int? { index[id].map(Int.init) }

  /// A record in place: reading one field does not copy the record.
  subscript(position i: Int) -> TrackedBeacon {
    _read { yield segments[i / Self.segmentSize][i % Self.segmentSize] }
    _modify { yield &segments[i / Self.segmentSize][i % Self.segmentSize] }
  }

  /// Reads the record at `position` in place, without copying it.
  func withRecord<R>(at i: Int, _ body: (TrackedBeacon) -> R) -> R {
    segments[i / Self.segmentSize].withUnsafeBufferPointer { body($0[i % Self.segmentSize]) }
  }

  /// Every record, in no particular order.
  var all: some Sequence<TrackedBeacon> { segments.lazy.flatMap { $0 } }

  /// One report: creates the record on first sight. Returns its position.
  /// A gap longer than the beacon's timeout before the report (its own
  /// under `auto` within `floor`…`ceiling`, else `cautious`) was an
  /// absence, and does not count as a gap in its advertising. `learn`
  /// false (a report heard at a low scan duty): no gap is learnt.
  @discardableResult
  mutating func observe(
    _ id: TrackKey, address: BDAddress, rssi: Int8?, measuredPower: Int8,
    powerSource: PowerSource = .measured, at t: Int64, floor: Double = 0,
    ceiling: Double = .infinity, cautious: Double = .infinity, learn: Bool = true
  ) -> Int {
    let i: Int
    if let found = index[id] {
      i = Int(found)
    } else {
      i = count
      index[id] = Int32(i)
      if i % Self.segmentSize == 0 {
        var segment = ContiguousArray<TrackedBeacon>()
        segment.reserveCapacity(Self.segmentSize)
        segments.append(segment)
      }
      segments[i / Self.segmentSize].append(
        TrackedBeacon(
          track: BeaconTrack(
            id: id, address: address, measuredPower: measuredPower, powerSource: powerSource,
            at: t)))
      count += 1
    }
    // In place: the record is ~550 bytes, and a closure over the caller
    // here once made every report copy a whole segment.
    let s = i / Self.segmentSize
    let k = i % Self.segmentSize
    segments[s].withUnsafeMutableBufferPointer { records in
      records[k].track.observe(
        address: address, rssi: rssi, measuredPower: measuredPower, powerSource: powerSource,
        at: t)
      let limit = records[k].interval.timeout(floor: floor, ceiling: ceiling) ?? cautious
      if learn {
        records[k].interval.observe(at: t, absentAfter: limit)
      } else {
        // Heard at a low duty: the gap to it is longer than the beacon's.
        records[k].interval.interrupt()
      }
    }
    return i
  }

  /// Makes room for a new beacon when `capacity` are tracked: forgets the
  /// quarter seen longest ago (except those in `keep`), so that a flood of
  /// identities costs bounded memory and amortised constant time.
  mutating func makeRoom(capacity: Int, keep: Set<TrackKey>) {
    guard count >= capacity else { return }
    var seen = [Int64]()
    seen.reserveCapacity(count)
    for b in all { seen.append(b.track.lastSeen) }
    seen.sort()
    let quarter = seen[count / 4]
    forget(seenBefore: quarter, keep: keep)
    // Many seen at the same moment: that moment goes too.
    if count >= capacity { forget(seenBefore: quarter &+ 1, keep: keep) }
  }

  /// A gap in scanning: no beacon's next gap may span it.
  mutating func interruptIntervals() {
    for i in 0..<count { self[position: i].interval.interrupt() }
  }

  /// Forgets beacons last seen before `horizon`, except those in `keep`;
  /// the last record moves into each hole, so this is linear.
  mutating func forget(seenBefore horizon: Int64, keep: Set<TrackKey>) {
    var i = 0
    while i < count {
      let track = self[position: i].track
      let id = track.id
      guard track.lastSeen < horizon, !keep.contains(id) else {
        i += 1
        continue
      }
      index[id] = nil
      let last = count - 1
      if i != last {
        let moved = self[position: last]
        self[position: i] = moved
        index[moved.track.id] = Int32(i)
      }
      segments[segments.count - 1].removeLast()
      if segments[segments.count - 1].isEmpty { segments.removeLast() }
      count -= 1
    }
  }
}
