/// Everything the monitor knows about one beacon identity.
struct BeaconRecord: Sendable {
  var track: BeaconTrack
  var interval = AdvertisingIntervalEstimator()
}

/// The beacons the monitor tracks: records stored densely (inline filter
/// and gap storage, no heap block per beacon) and found through a small
/// index. With ten thousand beacons a dictionary of full records would
/// leave a third of its buckets empty yet resident; here only the index
/// has spare slots, at 4 bytes each (`PositionIndex`: a dictionary keyed
/// by the id took 80 bytes a bucket, 1.3 MB). Records live in fixed-size
/// segments, so growing never copies them all at once (a doubling array
/// briefly holds two copies: several megabytes of peak for nothing).
struct BeaconTable: Sendable {
  static let segmentSize = 512
  private var index = PositionIndex()
  private var segments: [ContiguousArray<BeaconRecord>] = []
  private(set) var count = 0
  /// The positions of the devices' records (not beacons'), in no
  /// particular order: a region of devices alone reads these at its range
  /// ticks, not every beacon of a busy room. Few: devices are only those
  /// the config names or bonded ones.
  private(set) var devicePositions: [Int32] = []

  subscript(id: TrackKey) -> BeaconRecord? {
    position(of: id).map { self[position: $0] }
  }

  /// Where a beacon's record is now (forgetting moves records).
  func position(of id: TrackKey) -> Int? {
    index.slot(of: id, idAt: { recordID(at: $0) }).map { Int(index.positions[$0]) }
  }

  /// The id of the record at `i` (the index keeps positions, not ids).
  private func recordID(at i: Int32) -> TrackKey { self[position: Int(i)].track.id }

  /// Changes the index while the records stay readable: the index is taken
  /// out meanwhile, so reading a record does not overlap its change.
  private mutating func changeIndex(_ body: (inout PositionIndex, (Int32) -> TrackKey) -> Void) {
    var taken = index
    index = PositionIndex()
    body(&taken) { recordID(at: $0) }
    index = taken
  }

  /// A record in place: reading one field does not copy the record.
  subscript(position i: Int) -> BeaconRecord {
    _read { yield segments[i / Self.segmentSize][i % Self.segmentSize] }
    _modify { yield &segments[i / Self.segmentSize][i % Self.segmentSize] }
  }

  /// Reads the record at `position` in place, without copying it.
  func withRecord<R>(at i: Int, _ body: (BeaconRecord) -> R) -> R {
    segments[i / Self.segmentSize].withUnsafeBufferPointer { body($0[i % Self.segmentSize]) }
  }

  /// Every record, in no particular order.
  var all: some Sequence<BeaconRecord> { segments.lazy.flatMap { $0 } }

  /// One report: creates the record on first sight. Returns its position.
  /// A gap longer than the beacon's timeout before the report (its own
  /// under `auto` within `floor`…`ceiling`, else `cautious`) was an
  /// absence, and does not count as a gap in its advertising. `learn`
  /// false (a report heard at a low scan duty): no gap is learnt.
  /// `hint`: where the caller last found this id's record, used when the
  /// record there still has this id (else the index is asked), so a stale
  /// hint costs a lookup and never finds another's record.
  @discardableResult
  mutating func observe(
    _ id: TrackKey, address: BDAddress, rssi: Int8?, measuredPower: Int8,
    powerSource: PowerSource = .measured, at t: Int64, floor: Double = 0,
    ceiling: Double = .infinity, cautious: Double = .infinity, learn: Bool = true,
    hint: Int? = nil
  ) -> Int {
    let time = DecisionTime(micros: t)
    let i: Int
    if let hint, hint < count, self[position: hint].track.id == id {
      i = hint
    } else if let found = position(of: id) {
      i = found
    } else {
      i = count
      if i % Self.segmentSize == 0 {
        var segment = ContiguousArray<BeaconRecord>()
        segment.reserveCapacity(Self.segmentSize)
        segments.append(segment)
      }
      segments[i / Self.segmentSize].append(
        BeaconRecord(
          track: BeaconTrack(
            id: id, address: address, measuredPower: measuredPower, powerSource: powerSource,
            at: time)))
      count += 1
      if case .device = id { devicePositions.append(Int32(i)) }
      // After the record is stored: the index reads ids from the records.
      changeIndex { index, idAt in index.insert(id, at: Int32(i), idAt: idAt) }
    }
    // In place: the record is ~550 bytes, and a closure over the caller
    // here once made every report copy a whole segment.
    let s = i / Self.segmentSize
    let k = i % Self.segmentSize
    segments[s].withUnsafeMutableBufferPointer { records in
      records[k].track.observe(
        address: address, rssi: rssi, measuredPower: measuredPower, powerSource: powerSource,
        at: time)
      let limit = records[k].interval.timeout(floor: floor, ceiling: ceiling) ?? cautious
      if learn {
        records[k].interval.observe(at: time, absentAfter: limit)
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
    for b in all { seen.append(b.track.lastSeen.micros) }
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
      guard track.lastSeen.micros < horizon, !keep.contains(id) else {
        i += 1
        continue
      }
      // Removed while every record is still where the index says.
      changeIndex { index, idAt in index.remove(index.slot(of: id, idAt: idAt)!, idAt: idAt) }
      if case .device = id { devicePositions.removeAll { $0 == Int32(i) } }
      let last = count - 1
      if i != last {
        let moved = self[position: last]
        if case .device = moved.track.id, let k = devicePositions.firstIndex(of: Int32(last)) {
          devicePositions[k] = Int32(i)
        }
        let slot = index.slot(of: moved.track.id, idAt: { recordID(at: $0) })!
        self[position: i] = moved
        index.positions[slot] = Int32(i)
      }
      segments[segments.count - 1].removeLast()
      if segments[segments.count - 1].isEmpty { segments.removeLast() }
      count -= 1
    }
  }
}

/// Record positions found by id with open addressing (linear probing) over
/// 4-byte slots: the ids stay in the records, read through `idAt`, so the
/// index holds no copy of them. At most half full; a removal shifts the
/// probe run back, so there are no tombstones and a lookup ends at the
/// first empty slot.
struct PositionIndex: Sendable {
  static let empty: Int32 = -1
  /// A power of two in size; `empty` or a record's position.
  var positions: [Int32] = []
  private(set) var count = 0

  private var mask: Int { positions.count - 1 }

  private func home(_ id: TrackKey) -> Int { id.hashValue & mask }

  /// The slot holding `id`'s position, if it is indexed.
  func slot(of id: TrackKey, idAt: (Int32) -> TrackKey) -> Int? {
    guard !positions.isEmpty else { return nil }
    var k = home(id)
    while positions[k] != Self.empty {
      if idAt(positions[k]) == id { return k }
      k = (k + 1) & mask
    }
    return nil
  }

  /// Indexes `id` (not indexed yet) at `position`.
  mutating func insert(_ id: TrackKey, at position: Int32, idAt: (Int32) -> TrackKey) {
    if (count + 1) * 2 > positions.count { grow(idAt: idAt) }
    var k = home(id)
    while positions[k] != Self.empty { k = (k + 1) & mask }
    positions[k] = position
    count += 1
  }

  /// Empties `slot`, moving back any later entry of the same probe run
  /// whose home it would otherwise be cut off from.
  mutating func remove(_ slot: Int, idAt: (Int32) -> TrackKey) {
    var hole = slot
    var k = slot
    while true {
      k = (k + 1) & mask
      guard positions[k] != Self.empty else { break }
      let h = home(idAt(positions[k]))
      // Stays if its home is cyclically within (hole, k].
      let stays = hole <= k ? (hole < h && h <= k) : (hole < h || h <= k)
      if stays { continue }
      positions[hole] = positions[k]
      hole = k
    }
    positions[hole] = Self.empty
    count -= 1
  }

  private mutating func grow(idAt: (Int32) -> TrackKey) {
    let old = positions
    positions = Array(repeating: Self.empty, count: max(16, old.count * 2))
    for p in old where p != Self.empty {
      var k = home(idAt(p))
      while positions[k] != Self.empty { k = (k + 1) & mask }
      positions[k] = p
    }
  }
}
