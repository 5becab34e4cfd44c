/// A region's state as CoreLocation names them.
public enum RegionState: String, Sendable, Equatable {
  case inside, outside, unknown
}

/// What the monitor tells the world.
public struct MonitorEvent: Sendable, Equatable {
  public enum Kind: String, Sendable {
    /// The state became known (or unknown) without a transition to act on.
    case state
    case enter, exit
    /// The beacons inside, nearest first (once per ranging interval).
    case range
  }

  /// When the monitor decided it: what anything that counts time since
  /// an event (rate limits) reads, never converted back from `shown`.
  public let decided: DecisionTime
  /// The wall time people and other machines are shown (a replay's:
  /// capture time), fixed as the event is decided.
  public let shown: WallTime
  public let kind: Kind
  public let region: String
  public let state: RegionState
  /// For `range`: the beacons, nearest first. For enter/exit: the beacon
  /// that caused it (on exit, its last estimate before it went quiet).
  public let beacons: [RangedBeacon]

  public init(
    decided: DecisionTime, shown: WallTime, kind: Kind, region: String, state: RegionState,
    beacons: [RangedBeacon]
  ) {
    self.decided = decided
    self.shown = shown
    self.kind = kind
    self.region = region
    self.state = state
    self.beacons = beacons
  }
}

/// Region monitoring as a pure state machine: reports, adapter up/down and
/// the passing of time go in (time injected as a `DecisionTime`: capture
/// timestamps in a replay, the monotonic clock live); events come out, each with its decision time and the wall time
/// `timeline` shows for it, and `nextDeadline` says when to call `advance`
/// next.
///
/// States: every region starts `unknown`. A matching report makes it
/// `inside`. While scanning, `exit_after` seconds with no report make it
/// `outside`, where that span counts only time spent scanning. The adapter
/// going down (or scanning stopping) makes every region `unknown`.
///
/// Events: what a consumer has last been told (`known`, which survives
/// restarts through `snapshot`) decides what a change means. A change from
/// one known state to the other is an `enter` or `exit`; learning a state
/// that matches what was last told, or with nothing told before, is a
/// `state` event, never an enter or exit. So a restart with the beacon still
/// there gives no enter, and a beacon that left while the agent was down
/// gives an exit once `exit_after` has passed since scanning resumed.
///
/// Tags (`tag = NAME`): a region is also inside while a tag it names is
/// connected (`tagConnected`). A lost link (`tagAbsent`) ends it by the
/// region's own rule: outside once `exit_after` has passed since the loss
/// with nothing else keeping it inside (under `auto`, the cautious wait, as
/// a connection has no advertising pace to learn), so a link that drops
/// for a moment and reconnects changes nothing. Until a tag's first connect
/// attempt has an answer it keeps the region from being declared outside;
/// a failed first attempt counts its absence from when watching began. A
/// region of tags alone does not depend on the scanner's adapter.
public struct RegionMonitor: Sendable {
  struct Region: Sendable {
    var config: RegionConfig {
      didSet { beacons = config.beacons }
    }
    /// `config.beacons`, kept: asked at every report, and reading a field
    /// this small copies nothing (a call on `config` in place copied the
    /// whole region, strings and arrays, a third of a report's cost).
    private(set) var beacons: TrackedMatch?
    var state: RegionState = .unknown
    /// When a region added by a reload began to be watched: scanning
    /// before that does not count towards its exit_after.
    var watchedSince: Int64? = nil
    var known: RegionState? = nil
    var lastSeen: Int64? = nil
    /// The state file's last sighting, in the time it shows (wall time
    /// live): written back until there is a newer one, and decided on only
    /// as `start` maps it onto this run's clock.
    var savedLastSeen: WallTime? = nil
    var lastBeacon: TrackKey? = nil
    /// What a second of `lastBeacon`'s silence says, as of its last
    /// report: its record changes only when it reports, and then this
    /// region counts it again (so no lookup at every deadline asked).
    var lastEvidence: SilenceEvidence? = nil
    var nextRange: Int64? = nil
    /// With `exit_after = auto`: the beacon whose silence ends the region
    /// last (its last report plus its own timeout is the latest), kept up
    /// to date as reports arrive so that finding the next deadline does not
    /// visit every beacon. A beacon that left long ago has an end in the
    /// past, so only the beacons present now set the region's pace.
    var holder: Holder? = nil

    init(config: RegionConfig) {
      self.config = config
      beacons = config.beacons
    }
  }

  /// Whether region `i` counts `key`'s reports (read in place).
  private func matches(_ i: Int, _ key: TrackKey) -> Bool {
    switch key {
    case .beacon(let b): matches(i, b)
    case .device(let d): regions[i].config.matches(d)
    }
  }

  /// Whether region `i` counts beacon `id`: one field read, where a call
  /// on `regions[i]` or an iterator over `regions` copies the whole region.
  private func matches(_ i: Int, _ id: TrackedID) -> Bool {
    regions[i].beacons?.matches(id) == true
  }

  struct Holder: Sendable {
    let lastSeen: Int64
    let seconds: Double
    let beacon: TrackKey
    /// What a second of its silence says at each duty (nil: too few gaps
    /// learnt at full duty to say).
    let evidence: SilenceEvidence?
    /// Enough gaps learnt for the loss bound to be near the loss
    /// (`AdvertisingIntervalEstimator.isSettled`).
    let settled: Bool
    /// `seconds` in microseconds, and the end it gives: worked out once,
    /// since deadlines are asked for at every report.
    let micros: Int64
    let end: Int64

    init(
      lastSeen: Int64, seconds: Double, beacon: TrackKey, evidence: SilenceEvidence?,
      settled: Bool
    ) {
      self.lastSeen = lastSeen
      self.seconds = seconds
      self.beacon = beacon
      self.evidence = evidence
      self.settled = settled
      micros = Int64((seconds * 1e6).rounded())
      end = lastSeen &+ micros
    }
  }

  /// Beacons unseen for this long are forgotten (unless a region still
  /// names them), so a street's worth of passers-by does not pile up.
  static let forgetAfterMicros: Int64 = 3_600_000_000
  static let forgetEveryMicros: Int64 = 60_000_000
  /// Beacon identities tracked at most: past this, the quarter seen longest
  /// ago is forgotten to make room, so that a flood of identities (any
  /// number of them may match a region that names only a UUID) cannot
  /// take more than ~40 MB. Ten thousand real beacons take ~6.5 MB.
  static let defaultBeaconCapacity = 65_536
  var beaconCapacity = defaultBeaconCapacity

  public private(set) var ranging: RangingConfig
  public private(set) var monitor: MonitorConfig
  public let emitRange: Bool
  /// How decision time is shown (live: the shell's clocks, set before
  /// `start`; a replay shows capture time).
  public var timeline: MonitorTimeline = .capture
  private var regions: [Region]
  private var beacons = BeaconTable()
  /// The devices regions name and those bonded here: how their addresses
  /// resolve, which regions count them, when each was last heard.
  private var routing: DeviceRouting
  /// The devices and how their addresses resolve.
  public var devices: DeviceDirectory { routing.directory }
  /// Whether any region (or `[rooms] track`) names a device: if none
  /// does, a report that is not a beacon only moves time.
  public var watchesDevices: Bool { routing.watches }
  /// Device `n` of `devices` (read in place: asked per device report).
  public func device(at n: Int) -> DeviceIdentity { routing.directory.entries[n] }
  private var nextForget: Int64 = .min
  /// The scanner: scanning or not, its duty, the listening time.
  private var scan = ScanListening()

  /// Ask a device by name (a BR/EDR Remote Name Request to its identity
  /// address) before its region is declared outside: phones go quiet for
  /// tens of seconds when locked, yet answer a page. See `takeNameRequests`.
  public var nameRequests = false {
    // Exits' deadlines depend on it (a name's answer holds an exit).
    didSet { invalidateTimers() }
  }
  private var names = NameRequests()
  private var now: Int64 = .min
  private var started = false
  private var startedAt: Int64 = .min
  /// The links of the tags regions name.
  private var tags = TagLinks()
  /// No timer is due before this (a lower bound, `.min` when not known):
  /// most reports are not iBeacons of a region and only move time, and
  /// then `advance` costs one comparison instead of a pass over regions.
  private var timerFloor: Int64 = .min
  /// Whether `timerFloor` is the earliest timer itself (as `nextDeadline`
  /// would say), so that `deadline()` need not look again.
  private var timerFloorExact = false

  /// `cipher`: AES for resolving devices' private addresses (the shell's
  /// libcrypto); without one, devices match by identity address only.
  public init(
    config: Config, emitRange: Bool = true, snapshot: MonitorSnapshot? = nil,
    cipher: (any BlockCipher)? = nil
  ) {
    ranging = config.ranging
    monitor = config.monitor
    self.emitRange = emitRange
    regions = config.regions.map { Region(config: $0) }
    routing = DeviceRouting(cipher: cipher, rooms: config.rooms.trackDevices)
    routing.configure(config.regions)
    if let snapshot {
      for i in regions.indices {
        guard let saved = snapshot.regions.first(where: { $0.name == regions[i].config.name }),
          saved.identity == regions[i].config.identity
        else { continue }  // a region redefined since is a new region
        regions[i].known = saved.known
        regions[i].savedLastSeen = saved.lastSeen
      }
    }
  }

  // MARK: Inputs

  /// The first call: announces every region as `unknown`. `savedTime`
  /// maps the state file's sighting times onto the monitor's clock (live:
  /// wall time to monotonic; a replay's are capture time already).
  public mutating func start(
    at time: DecisionTime, scanning: Bool,
    savedTime: (WallTime) -> DecisionTime = { DecisionTime(micros: $0.micros) }
  ) -> [MonitorEvent] {
    let t = time.micros
    for i in regions.indices where regions[i].lastSeen == nil {
      regions[i].lastSeen = regions[i].savedLastSeen.map { savedTime($0).micros }
    }
    started = true
    now = t
    startedAt = t
    if scanning { scan.begin(at: t) }
    invalidateTimers()
    return regions.indices.map { event(t, .state, $0, state: .unknown) }
  }

  public mutating func adapterUp(at time: DecisionTime) -> [MonitorEvent] {
    let t = time.micros
    var out = advance(to: time)
    if !started { out += start(at: time, scanning: true) }
    if !scan.isScanning { scan.begin(at: t) }
    invalidateTimers()
    return out
  }

  public mutating func adapterDown(at time: DecisionTime) -> [MonitorEvent] {
    let t = time.micros
    var out = advance(to: time)
    scan.down(at: t)
    beacons.interruptIntervals()
    for i in regions.indices where regions[i].state != .unknown {
      guard regions[i].config.watchesReports, !tagConnected(i) else { continue }
      regions[i].state = .unknown
      regions[i].nextRange = nil
      out.append(event(t, .state, i))
    }
    invalidateTimers()
    return out
  }

  /// The machine slept and has resumed (the shell noticed it at `t`): as
  /// if the adapter had gone down and come back now. Regions that were
  /// inside or outside are `unknown` until heard again, and exit_after
  /// counts from the resume, never the time asleep (the monotonic clock
  /// live decides on does not move then, but what was heard before the
  /// sleep says nothing about after it: the laptop may have been carried
  /// elsewhere). Nothing happens while the adapter was down. A scan paused
  /// before the sleep (the kernel's suspend turns scanning off) stays
  /// paused after it: listening starts when `scanResumed` says the scan
  /// is back, not at the resume.
  public mutating func resumed(at time: DecisionTime) -> [MonitorEvent] {
    guard scan.isScanning else { return advance(to: time) }
    let paused = scan.paused
    var out = adapterDown(at: time) + adapterUp(at: time)
    if paused { out += scanPaused(at: time) }
    return out
  }

  /// Nobody scans for a moment while the adapter stays up (another
  /// program's scan ended; Earshot's own starts again shortly, or the
  /// scheduler changes its settings): states are kept, and the time does
  /// not count toward exit_after.
  public mutating func scanPaused(at time: DecisionTime) -> [MonitorEvent] {
    let t = time.micros
    let out = advance(to: time)
    if scan.pause(at: t) { beacons.interruptIntervals() }
    invalidateTimers()
    return out
  }

  /// Scanning again after `scanPaused`: the silence counted before the
  /// pause goes on counting from now (listening time accumulates across
  /// pauses; the pause itself never counts).
  public mutating func scanResumed(at time: DecisionTime) -> [MonitorEvent] {
    let t = time.micros
    let out = advance(to: time)
    scan.resume(at: t)
    invalidateTimers()
    return out
  }

  /// The scanner listens at `duty` from `t` (the scan scheduler changed
  /// its window or interval). Exits are decided only at full duty: while
  /// the duty is lower no region is declared outside, and after a raise
  /// the exit waits for `confirm` seconds of full duty (see
  /// `fullDutyNeeded`). Beacons' advertising intervals are learnt at full
  /// duty only: gaps heard at a lower one are longer than the beacon's.
  public mutating func scanDutyChanged(to duty: Double, at time: DecisionTime) -> [MonitorEvent] {
    let t = time.micros
    var out = advance(to: time)
    guard scan.setDuty(duty, at: t) else { return out }
    if scan.duty < 1 { beacons.interruptIntervals() }
    invalidateTimers()
    out += advance(to: time)
    return out
  }

  /// The duty the monitor counts the scanner at.
  public var duty: Double { scan.duty }

  /// One iBeacon report. Reports are evidence of presence even without an
  /// RSSI or with an implausible measured power; ranging is what those spoil.
  public mutating func report(
    at time: DecisionTime, beacon: TrackedBeacon, address: BDAddress, rssi: Int8?
  ) -> [MonitorEvent] {
    let t = time.micros
    var out = advance(to: time)
    // No array of the matching regions: nothing is allocated per report.
    // By index (see `matches`).
    var firstMatch = 0
    while firstMatch < regions.count, !matches(firstMatch, beacon.id) { firstMatch += 1 }
    guard firstMatch < regions.count else { return out }
    observe(
      .beacon(beacon.id), firstMatch: firstMatch, address: address, rssi: rssi,
      power: beacon.measuredPower, source: .measured, at: t, into: &out)
    return out
  }

  /// A report that is not an iBeacon: counts if it comes from a device a
  /// region names, by its identity address or a private address one of
  /// the known keys resolves. `txPower`: the TX Power Level AD field.
  public mutating func report(
    at time: DecisionTime, address: BDAddress, type: AddressType, rssi: Int8?, txPower: Int8?
  ) -> [MonitorEvent] {
    report(
      at: time, device: routing.watches ? resolveDevice(address, type: type) : nil,
      address: address,
      rssi: rssi, txPower: txPower)
  }

  /// The position in `devices.entries` of the device that sent from
  /// `address`, if known: what the shell asks once per report and hands to
  /// both this monitor and the rooms' sightings (one resolver, one cache).
  public mutating func resolveDevice(_ address: BDAddress, type: AddressType) -> Int? {
    routing.resolve(address, type: type)
  }

  /// A report that is not an iBeacon, already resolved (`device`: a
  /// position in `devices.entries`, or nil for no known device).
  public mutating func report(
    at time: DecisionTime, device n: Int?, address: BDAddress, rssi: Int8?, txPower: Int8?
  ) -> [MonitorEvent] {
    let t = time.micros
    var out = advance(to: time)
    guard let n, n < routing.lastHeard.count else { return out }
    routing.heard(n, at: t)
    // An answer awaited from it held an exit, of any region it last kept
    // inside (not only those it counts for now).
    if names.hold(of: n) != nil { invalidateTimers() }
    names.heard(n)
    guard let firstMatch = routing.regionsOf[n].first else { return out }
    let device = routing.directory.entries[n]
    let (power, source) = PowerSource.device(
      txPower: txPower, fallback: regions[firstMatch].config.power)
    observe(
      .device(device), firstMatch: firstMatch, device: n, address: address, rssi: rssi,
      power: power, source: source, at: t, into: &out)
    return out
  }

  /// The name requests to send now (each once): the shell answers each
  /// with `nameAnswered`.
  public mutating func takeNameRequests() -> [BDAddress] {
    names.take()
  }

  /// A name request's answer: `found`, the device answered its page, so it
  /// is here (its regions stay inside for `NameRequests.everyMicros`, and
  /// then ask again); not found, the exit that waited for it goes ahead.
  public mutating func nameAnswered(_ address: BDAddress, found: Bool, at time: DecisionTime)
    -> [MonitorEvent]
  {
    let t = time.micros
    var out = advance(to: time)
    for n in routing.directory.entries.indices
    where routing.directory.entries[n].address == address {
      if names.answered(n, found: found, at: t), found { routing.heard(n, at: t) }
    }
    invalidateTimers()
    out += advance(to: time)
    return out
  }

  /// The device entry that last kept region `i` inside, if a device did.
  private func holdingDevice(_ i: Int) -> Int? {
    guard case .device(let d)? = regions[i].lastBeacon else { return nil }
    return routing.directory.entries.firstIndex(of: d)
  }

  /// At region `i`'s exit: whether to ask its device by name first (and
  /// hold the exit for the answer) instead of declaring it outside now.
  /// `t` is the present (an exit due earlier and found late is asked
  /// about now: the request can only go out now, and its hold counts from
  /// then).
  private mutating func askedByName(_ i: Int, at t: Int64) -> Bool {
    guard nameRequests, let n = holdingDevice(i),
      let address = routing.directory.entries[n].address,
      RemoteNameResult.pageable(address)
    else { return false }
    return names.ask(n, at: address, lastHeard: routing.lastHeard[n], at: t)
  }

  /// A tag's link is up: every region naming it is inside at once.
  public mutating func tagConnected(_ name: String, at time: DecisionTime) -> [MonitorEvent] {
    let t = time.micros
    var out = advance(to: time)
    if !started { out += start(at: time, scanning: false) }
    tags.connected(name)
    for i in regions.indices where regions[i].config.tags.contains(name) {
      regions[i].lastSeen = t
      guard regions[i].state != .inside else { continue }
      let kind: MonitorEvent.Kind = regions[i].known == .outside ? .enter : .state
      regions[i].state = .inside
      regions[i].known = .inside
      // Range updates list beacons: a region of tags alone has none.
      if emitRange, regions[i].config.watchesReports { regions[i].nextRange = nextTick(after: t) }
      out.append(event(t, kind, i))
    }
    invalidateTimers()
    return out
  }

  /// A tag's link went down, or a connect attempt failed: its regions
  /// follow their exit rule from now (see the type's comment).
  public mutating func tagAbsent(_ name: String, at time: DecisionTime) -> [MonitorEvent] {
    let t = time.micros
    var out = advance(to: time)
    if !started { out += start(at: time, scanning: false) }
    switch tags.absent(name, at: t) {
    case .lost:
      for i in regions.indices where regions[i].config.tags.contains(name) {
        regions[i].lastSeen = t
      }
    case .firstAnswer: break
    case .unchanged: return out  // already counting
    }
    invalidateTimers()
    // Its deadline may be due already (a first attempt slower than exit_after).
    out += advance(to: time)
    return out
  }

  /// Whether a tag region `i` names is connected now.
  private func tagConnected(_ i: Int) -> Bool {
    tags.anyConnected(regions[i].config.tags)
  }

  /// The devices bonded with this machine, whole (the bond store as it is
  /// now): reports resolve against their keys from now on. States are
  /// kept; a device whose bond went stops counting at its next report.
  public mutating func updateBondedKeys(_ keys: [BondedKey]) {
    routing.updateBondedKeys(keys, regions: regions.map(\.config))
    // Devices may have new positions: the holds of name requests are
    // found by position.
    invalidateTimers()
  }

  /// When a device (by identity address) was last heard, directly or
  /// through its key; nil if not since it became known.
  public func lastSeen(device address: BDAddress) -> DecisionTime? {
    routing.lastHeard(address: address).map(DecisionTime.init(micros:))
  }

  /// One report of `key`, which region `firstMatch` (and maybe later ones)
  /// counts; for device `n` of the directory, exactly `routing.regionsOf[n]`.
  private mutating func observe(
    _ key: TrackKey, firstMatch: Int, device n: Int? = nil, address: BDAddress, rssi: Int8?,
    power: Int8, source: PowerSource, at t: Int64, into out: inout [MonitorEvent]
  ) {
    if !started { out += start(at: DecisionTime(micros: t), scanning: true) }
    if scan.heard(at: t) { invalidateTimers() }
    if beacons.count >= beaconCapacity, beacons.position(of: key) == nil {
      beacons.makeRoom(capacity: beaconCapacity, keep: keptBeacons)
    }

    let hint = n.map { Int(routing.recordHint[$0]) }.flatMap { $0 >= 0 ? $0 : nil }
    let position = beacons.observe(
      key, address: address, rssi: rssi, measuredPower: power, powerSource: source, at: t,
      floor: monitor.autoFloor, ceiling: monitor.autoCeiling, cautious: cautiousTimeout,
      learn: scan.learnsGaps(at: t), hint: hint)

    if let n {
      routing.recordHint[n] = Int32(position)
      for i in routing.regionsOf[n] { counted(i, key, at: t, position: position, into: &out) }
    } else {
      for i in regions.indices[firstMatch...] where matches(i, key) {
        counted(i, key, at: t, position: position, into: &out)
      }
    }
  }

  /// Region `i` counts a report of `key` (its record at `position`).
  private mutating func counted(
    _ i: Int, _ key: TrackKey, at t: Int64, position: Int, into out: inout [MonitorEvent]
  ) {
    // Whether an exact floor stays exact (see the end). Live, the shell
    // asks for the deadline after every packet, so the floor is exact at
    // most reports; its usual value is the range tick of the regions
    // inside, which a report does not move: then nothing is worked out.
    let tickIsFloor =
      timerFloorExact && regions[i].state == .inside && regions[i].nextRange == timerFloor
    let before = timerFloorExact && !tickIsFloor ? due(i) : nil
    regions[i].lastSeen = t
    regions[i].lastBeacon = key
    regions[i].lastEvidence = beacons.withRecord(at: position, Self.evidence)
    updateHolder(i, reporter: key, at: position)
    if regions[i].state != .inside {
      let kind: MonitorEvent.Kind = regions[i].known == .outside ? .enter : .state
      regions[i].state = .inside
      regions[i].known = .inside
      if emitRange { regions[i].nextRange = nextTick(after: t) }
      let trigger = beacons[position: position].track.ranged(
        at: DecisionTime(micros: t), model: ranging.model, staleAfter: ranging.staleAfter)
      out.append(event(t, kind, i, beacons: [trigger]))
    }
    // Only this region's timers moved, and a deadline may come sooner
    // (a beacon with a shorter timeout than the cautious wait).
    let after = due(i)
    // An exact floor stays exact when this region's timer did not move
    // later, or was not the earliest (the others' timers did not move), so
    // `deadline()` needs no pass over every region after each report. With
    // its range tick the floor, the region's timer is at most the floor.
    let exact = tickIsFloor || before.map { after <= $0 || $0 > timerFloor } ?? false
    timerFloor = min(timerFloor, after)
    timerFloorExact = exact
  }

  /// Region `i`'s earliest timer, exit or range (`.max`: none), as
  /// `earliestTimer` counts it.
  private func due(_ i: Int) -> Int64 {
    min(exitDeadline(i) ?? .max, regions[i].nextRange ?? .max)
  }

  /// Fires every timer due at or before `t`, in time order.
  public mutating func advance(to time: DecisionTime) -> [MonitorEvent] {
    let t = time.micros
    var out: [MonitorEvent] = []
    while t >= timerFloor {
      guard let timer = earliestTimer() else {
        timerFloor = .max
        timerFloorExact = true
        break
      }
      guard timer.at <= t else {
        timerFloor = timer.at
        timerFloorExact = true
        break
      }
      now = timer.at
      switch timer.kind {
      case .exit: fireExit(timer.region, at: timer.at, present: t, into: &out)
      case .range: fireRange(timer.region, at: timer.at, into: &out)
      }
    }
    if t > now { now = t }
    if t >= nextForget { forgetOldBeacons(at: t) }
    return out
  }

  /// A new config while running (a reload): regions with the same name
  /// and identity keep their state, timers and beacons and take their new
  /// settings (exit_after, hooks); new or redefined regions start
  /// `unknown` (a `state` event) and count exit_after from now; removed
  /// ones are forgotten. `[ranging]` and `[monitor]` apply from now on.
  public mutating func reconfigure(_ config: Config, at time: DecisionTime) -> [MonitorEvent] {
    let t = time.micros
    var out = advance(to: time)
    ranging = config.ranging
    monitor = config.monitor
    routing.configure(config.regions)
    var next: [Region] = []
    for rc in config.regions {
      if var r = regions.first(where: {
        $0.config.name == rc.name && $0.config.identity == rc.identity
      }) {
        r.config = rc
        next.append(r)
      } else {
        var r = Region(config: rc)
        r.watchedSince = t
        next.append(r)
      }
    }
    let known = Set(regions.map { $0.config.name + "\u{0}" + $0.config.identity })
    regions = next
    // A kept region may no longer count its last beacon (a key behind an
    // unchanged tag), so nothing would refresh its evidence: read it now.
    for i in regions.indices {
      regions[i].lastEvidence = regions[i].lastBeacon.flatMap { beacons.position(of: $0) }
        .flatMap { beacons.withRecord(at: $0, Self.evidence) }
    }
    for i in regions.indices { regions[i].holder = isAuto(i) ? computeHolder(i) : nil }
    invalidateTimers()
    if started {
      for i in regions.indices
      where !known.contains(regions[i].config.name + "\u{0}" + regions[i].config.identity) {
        out.append(event(t, .state, i))
      }
    }
    return out
  }

  // MARK: Queries

  /// When `advance` next has something to do; `nil` if nothing is pending.
  public var nextDeadline: DecisionTime? { earliestTimer().map { DecisionTime(micros: $0.at) } }

  /// The same as `nextDeadline`, remembered until something changes: the
  /// live agent asks after every report to arm its timer, and most reports
  /// change nothing. (Mutating, so that a driver holding the monitor asks
  /// in place instead of copying it for a getter.)
  public mutating func deadline() -> DecisionTime? {
    if !timerFloorExact {
      timerFloor = earliestTimer()?.at ?? .max
      timerFloorExact = true
    }
    return timerFloor == .max ? nil : DecisionTime(micros: timerFloor)
  }

  public func state(of region: String) -> RegionState? {
    regions.first { $0.config.name == region }?.state
  }

  /// The beacons of a region at `t`, nearest first.
  public func rangedBeacons(region: String, at time: DecisionTime) -> [RangedBeacon] {
    let t = time.micros
    guard let i = regions.firstIndex(where: { $0.config.name == region }) else { return [] }
    return ranged(i, at: t)
  }

  /// The seconds `exit_after` currently stands for in a region: under
  /// `auto`, the timeout of the beacon whose silence would end it last.
  public func exitTimeout(region: String) -> Double? {
    regions.firstIndex { $0.config.name == region }.map { timeout($0) }
  }

  /// Beacon identities with state kept (forgotten an hour after last seen).
  public var trackedBeacons: Int { beacons.count }

  public var snapshot: MonitorSnapshot { snapshot(shown: { WallTime(micros: $0.micros) }) }

  /// What the state file keeps, its sighting times as `shown` maps the
  /// monitor's time (live: monotonic to wall, which a later run can read).
  public func snapshot(shown: (DecisionTime) -> WallTime) -> MonitorSnapshot {
    MonitorSnapshot(
      regions: regions.compactMap { r in
        r.known.map {
          MonitorSnapshot.Entry(
            name: r.config.name, identity: r.config.identity, known: $0,
            lastSeen: r.lastSeen.map { shown(DecisionTime(micros: $0)) } ?? r.savedLastSeen)
        }
      })
  }

  // MARK: Timers

  private mutating func invalidateTimers() {
    timerFloor = .min
    timerFloorExact = false
  }

  /// A region's timer: when it is due, and what it does then.
  struct Timer: Equatable {
    enum Kind: Equatable {
      /// The region is declared outside (unless a name request holds it).
      case exit
      /// The region's beacons are ranged (`emitRange`).
      case range
    }
    let at: Int64
    let region: Int
    let kind: Kind
  }

  /// The timer due first. At the same time an exit goes before a range
  /// (a region leaving is not ranged first), and of one kind the region
  /// listed first.
  private func earliestTimer() -> Timer? {
    var best: Timer? = nil
    for i in regions.indices {
      if let d = exitDeadline(i),
        best.map({ d < $0.at || (d == $0.at && $0.kind != .exit) }) ?? true
      {
        best = Timer(at: d, region: i, kind: .exit)
      }
      if let d = regions[i].nextRange, best.map({ d < $0.at }) ?? true {
        best = Timer(at: d, region: i, kind: .range)
      }
    }
    return best
  }

  /// When the region is due to be declared outside: the later of its
  /// reports' deadline and its tags' (each part it watches must be over).
  private func exitDeadline(_ i: Int) -> Int64? {
    guard regions[i].state != .outside else { return nil }
    if nameRequests, let n = holdingDevice(i), let hold = names.hold(of: n) {
      return baseExitDeadline(i).map { max($0, hold) }
    }
    return baseExitDeadline(i)
  }

  private func baseExitDeadline(_ i: Int) -> Int64? {
    // Read in place: this runs for every region at each report.
    if regions[i].config.tags.isEmpty { return reportDeadline(i) }
    guard let tags = tagDeadline(i) else { return nil }
    guard regions[i].config.watchesReports else { return tags }
    return reportDeadline(i).map { max($0, tags) }
  }

  /// When the region's tags have all been absent for its timeout: never
  /// while one is connected or has had no answer yet.
  private func tagDeadline(_ i: Int) -> Int64? {
    guard started else { return nil }
    let watched = max(startedAt, regions[i].watchedSince ?? startedAt)
    let span = Int64((tagTimeout(i) * 1e6).rounded())
    return tags.allAbsent(regions[i].config.tags, for: span, watched: watched)
  }

  /// A tag's absence lasts `exit_after`; under `auto`, the cautious wait.
  private func tagTimeout(_ i: Int) -> Double {
    switch regions[i].config.exitAfter ?? monitor.exitAfter {
    case .seconds(let s): s
    case .auto: cautiousTimeout
    }
  }

  /// What a region's exit waits for: silence since `from`, `seconds` of
  /// it spent listening (exit_after, or under `auto` the holder's timeout),
  /// and `confirm` seconds of that silence heard at full duty.
  struct SilencePlan {
    var from: Int64
    var seconds: Double
    var evidence: SilenceEvidence?
    /// Full-duty listening the exit needs since the last report, added up
    /// across full-duty spans: the whole evidence `missChance` asks (the
    /// silence of a present beacon heard at full duty alone), or the whole
    /// silence when the beacon's pace is not known. Silence at a lower duty
    /// counts for nothing here: a periodic scan and a periodic advertiser
    /// can miss each other for long stretches (their phases beat), so what
    /// a sampled scan did not hear proves little. Counting from the last
    /// report, not from the last raise, keeps one chance per silence, as at
    /// full duty throughout.
    var confirm: Double {
      guard let e = evidence else { return seconds }
      return min(seconds, SilenceEvidence.needed / e.rate(1))
    }
  }

  /// The silence region `i`'s reports must keep to be declared outside:
  /// counted from the later of its last report and the start of scanning.
  /// Under `auto`, the holder's timeout after its last report; when the
  /// holder had already gone when scanning last stopped, a cautious wait.
  private func silence(_ i: Int) -> SilencePlan? {
    guard let since = scan.since else { return nil }
    let start = max(since, regions[i].watchedSince ?? since)
    if isAuto(i) {
      guard let h = regions[i].holder, h.end >= min(start, scan.stoppedAt ?? start) else {
        return SilencePlan(from: start, seconds: cautiousTimeout, evidence: nil)
      }
      return SilencePlan(from: max(h.lastSeen, start), seconds: h.seconds, evidence: h.evidence)
    }
    return SilencePlan(
      from: max(regions[i].lastSeen ?? start, start), seconds: timeout(i),
      evidence: regions[i].lastEvidence)
  }

  /// When the plan's silence is over if listening goes on as now: its
  /// seconds of listening and its confirm span at full duty.
  private func deadline(_ plan: SilencePlan) -> Int64? {
    guard let a = scan.clock.time(reaching: plan.seconds, from: plan.from, rate: Self.anyDuty),
      let c = scan.clock.time(reaching: plan.confirm, from: plan.from, rate: Self.fullDuty)
    else { return nil }
    return max(a, c)
  }

  /// The deadline from the scanner's reports (beacons, devices): never
  /// while the duty is below full (an exit is decided at full duty).
  private func reportDeadline(_ i: Int) -> Int64? {
    guard scan.duty >= 1, let plan = silence(i) else { return nil }
    return deadline(plan)
  }

  private static func anyDuty(_: Double) -> Double { 1 }
  private static func fullDuty(_ duty: Double) -> Double { duty >= 1 ? 1 : 0 }

  private static func evidence(_ b: BeaconRecord) -> SilenceEvidence? {
    guard let interval = b.interval.intervalSeconds, let loss = b.interval.lossUpperBound else {
      return nil
    }
    return SilenceEvidence(interval: interval, loss: loss)
  }

  /// When the scanner must be back at full duty for every exit to come
  /// in time: the earliest over regions not outside (`nil`: no region
  /// needs it). A region needs it at once while it is unknown (start,
  /// resume, adapter back: its state is worth learning at once) and while
  /// its beacons' pace is unknown (a beacon too new to have been learnt).
  /// Otherwise its exit needs its confirm span at full duty (see
  /// `SilencePlan.confirm`), and the raise is as late as leaves that span
  /// before the exit's goal: on time for a fixed `exit_after` (a promise
  /// of latency the user made), and under `auto` up to `allowance` confirm
  /// spans after the timeout, and at most `allowance.maxSeconds` (the
  /// monitor's own choice, traded for radio time). `sampledDuty` is the
  /// duty the scan would keep until then (it adds nothing to the confirm
  /// span).
  public func fullDutyNeeded(
    at time: DecisionTime, sampledDuty: Double, allowance: ExitAllowance
  ) -> DecisionTime? {
    fullDutyNeeded(at: time.micros, sampledDuty: sampledDuty, allowance: allowance)
      .map(DecisionTime.init(micros:))
  }

  private func fullDutyNeeded(at now: Int64, sampledDuty: Double, allowance: ExitAllowance)
    -> Int64?
  {
    guard scan.isScanning else { return nil }
    var need: Int64? = nil
    for i in regions.indices where regions[i].state != .outside && regions[i].config.watchesReports
    {
      guard regions[i].state != .unknown, let plan = silence(i), plan.evidence != nil else {
        return now
      }
      // Gaps are learnt only in long full-duty spans, which sampling
      // rarely gives: a pace learnt from the first few gaps would keep
      // their wide loss bound (and a long timeout) for the whole run.
      if isAuto(i), let h = regions[i].holder, !h.settled { return now }
      guard
        let a = scan.clock.time(reaching: plan.seconds, from: plan.from, rate: Self.anyDuty)
      else { continue }  // paused: asked again when scanning resumes
      let late = isAuto(i) ? allowance.lateness(confirm: plan.confirm) : 0
      let goal = a &+ ListeningClock.micros(late)
      let heardAtFull = scan.clock.accumulated(from: plan.from, to: now, rate: Self.fullDuty)
      var r = goal &- ListeningClock.micros(max(0, plan.confirm - heardAtFull))
      // A name's answer holds the exit: nothing to decide before it ends.
      if nameRequests, let n = holdingDevice(i), let hold = names.hold(of: n) { r = max(r, hold) }
      need = min(need ?? r, r)
    }
    return need
  }

  /// The exit due at `t`, decided at `present` (later when the deadline
  /// was found late: the scan was sampling, or the caller advanced late).
  private mutating func fireExit(
    _ i: Int, at t: Int64, present: Int64, into out: inout [MonitorEvent]
  ) {
    if regions[i].known == .inside, askedByName(i, at: max(t, present)) { return }
    let kind: MonitorEvent.Kind = regions[i].known == .inside ? .exit : .state
    let last = regions[i].lastBeacon.flatMap { beacons[$0]?.track }
    regions[i].state = .outside
    regions[i].known = .outside
    regions[i].nextRange = nil
    let trigger = last.map {
      [$0.ranged(at: $0.lastSeen, model: ranging.model, staleAfter: ranging.staleAfter)]
    }
    out.append(event(t, kind, i, beacons: kind == .exit ? trigger ?? [] : []))
  }

  private mutating func fireRange(_ i: Int, at t: Int64, into out: inout [MonitorEvent]) {
    guard regions[i].state == .inside else {
      regions[i].nextRange = nil
      return
    }
    regions[i].nextRange = t + Int64((ranging.interval * 1e6).rounded())
    out.append(event(t, .range, i, beacons: ranged(i, at: t)))
  }

  private func ranged(_ i: Int, at t: Int64) -> [RangedBeacon] {
    // The beacons that currently keep the region inside: under `auto`, each
    // within its own timeout.
    let auto = isAuto(i)
    let horizon = t - Int64((timeout(i) * 1e6).rounded())
    // Each record read in place: a copy of every record (~550 bytes) for
    // every region at every ranging interval was most of the cost.
    func keeps(_ b: BeaconRecord) -> Bool {
      guard matches(i, b.track.id) else { return false }
      let seen = b.track.lastSeen.micros
      if auto { return seen + Int64((beaconTimeout(b) * 1e6).rounded()) >= t }
      return seen >= horizon
    }
    // A region that names no beacon keeps only device records: those are
    // read, in the order of a full walk (a busy room's every beacon was
    // read twice at each tick of each device region).
    let devicesOnly = regions[i].beacons == nil
    let devicePositions = devicesOnly ? beacons.devicePositions.sorted() : []
    func eachCandidate(_ body: (Int) -> Void) {
      if devicesOnly {
        for p in devicePositions { body(Int(p)) }
      } else {
        for p in 0..<beacons.count { body(p) }
      }
    }
    // Counted first, so the event's array is allocated once at its size:
    // grown by doubling it took up to twice that, and copies (10,000
    // beacons: ~1 MB of heap peak, docs/performance.md).
    var count = 0
    eachCandidate { if beacons.withRecord(at: $0, keeps) { count += 1 } }
    var out: [RangedBeacon] = []
    out.reserveCapacity(count)
    let now = DecisionTime(micros: t)
    eachCandidate { position in
      beacons.withRecord(at: position) { b in
        guard keeps(b) else { return }
        out.append(b.track.ranged(at: now, model: ranging.model, staleAfter: ranging.staleAfter))
      }
    }
    out.sort(by: RangedBeacon.nearestFirst)
    return out
  }

  /// Seconds without a report before exit for region `i`.
  private func timeout(_ i: Int) -> Double {
    switch regions[i].config.exitAfter ?? monitor.exitAfter {
    case .seconds(let s): return s
    case .auto: return regions[i].holder?.seconds ?? cautiousTimeout
    }
  }

  /// `auto` with too little seen yet (nothing heard since start, or a
  /// beacon with fewer gaps than the estimator trusts): a beacon not yet
  /// heard may advertise as slowly as phones and tags commonly do (up to
  /// 1.285 s, the longest interval Apple's accessory guidelines suggest;
  /// Android's slowest mode is 1 s) and lose half its advertisements. Its
  /// silence outlasts 20 missed intervals with a chance of 0.5^20 < 1e-6
  /// (`missChance`): 21 × 1.285 s = 27 s, so 30 s.
  private var cautiousTimeout: Double { min(monitor.autoCeiling, max(monitor.autoFloor, 30)) }

  private func isAuto(_ i: Int) -> Bool {
    (regions[i].config.exitAfter ?? monitor.exitAfter) == .auto
  }

  private func beaconTimeout(_ b: BeaconRecord) -> Double {
    b.interval.timeout(floor: monitor.autoFloor, ceiling: monitor.autoCeiling) ?? cautiousTimeout
  }

  private func holder(_ b: BeaconRecord) -> Holder {
    Holder(
      lastSeen: b.track.lastSeen.micros, seconds: beaconTimeout(b), beacon: b.track.id,
      evidence: Self.evidence(b), settled: b.interval.isSettled)
  }

  /// The same for the record at `position`, read in place.
  private func holder(at position: Int) -> Holder {
    beacons.withRecord(at: position) { holder($0) }
  }

  /// The region's beacon whose silence ends last (a full pass).
  private func computeHolder(_ i: Int) -> Holder? {
    var best: Holder? = nil
    for b in beacons.all where matches(i, b.track.id) {
      let h = holder(b)
      if best == nil || h.end > best!.end { best = h }
    }
    return best
  }

  /// After a report from `id` (at `position`) in region `i`: its end only
  /// moves later, unless its own timeout shrank; a full pass is needed only
  /// when the holder's end moved earlier.
  private mutating func updateHolder(_ i: Int, reporter id: TrackKey, at position: Int) {
    guard isAuto(i) else { return }
    let mine = holder(at: position)
    if let current = regions[i].holder {
      if mine.end >= current.end {
        regions[i].holder = mine
        return
      }
      if current.beacon != id { return }
    }
    regions[i].holder = computeHolder(i)
  }

  private mutating func forgetOldBeacons(at t: Int64) {
    nextForget = t &+ Self.forgetEveryMicros
    // Never sooner than twice any region's timeout: range updates list the
    // beacons seen within it.
    var longest = monitor.autoCeiling
    for i in regions.indices { longest = max(longest, timeout(i)) }
    let horizon = t &- max(Self.forgetAfterMicros, Int64(longest * 2e6))
    beacons.forget(seenBefore: horizon, keep: keptBeacons)
  }

  /// The beacons never forgotten: those a region's exit would name, and
  /// those whose silence ends a region last.
  private var keptBeacons: Set<TrackKey> {
    var keep = Set(regions.compactMap(\.lastBeacon))
    for r in regions { if let h = r.holder { keep.insert(h.beacon) } }
    return keep
  }

  /// The next multiple of the ranging interval strictly after `t`.
  private func nextTick(after t: Int64) -> Int64 {
    let step = max(1, Int64((ranging.interval * 1e6).rounded()))
    let q = t >= 0 ? t / step : (t - step + 1) / step
    return (q + 1) * step
  }

  /// Region `i`'s event decided at `t`, shown as `timeline` has it now
  /// (the moment of deciding, so no later clock step moves it).
  private func event(
    _ t: Int64, _ kind: MonitorEvent.Kind, _ i: Int, state: RegionState? = nil,
    beacons: [RangedBeacon] = []
  ) -> MonitorEvent {
    let decided = DecisionTime(micros: t)
    return MonitorEvent(
      decided: decided, shown: timeline.shown(decided), kind: kind,
      region: regions[i].config.name, state: state ?? regions[i].state, beacons: beacons)
  }
}

/// A tag's link as the region monitor sees it.
