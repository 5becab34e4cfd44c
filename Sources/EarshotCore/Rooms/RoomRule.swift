#if canImport(Glibc)
  import Glibc
#endif

/// Decides, per beacon (or device by identity: a subject), which room it is in from the sightings of every
/// agent, or that it is away. Pure: sightings, agents going on and off
/// line and the passing of time go in (a sighting's `t`, a `WallTime`:
/// `RoomJudge` sets it to the sighting's arrival on the aggregator's clock,
/// `RoomClock`, so agents' clocks do not matter); room changes come out,
/// dated on the same axis.
///
/// - The candidate is the room whose sightings over the last `window`
///   seconds give the shortest distance (geometric mean: distances are
///   log-normal, and one far reading must not outweigh several near ones).
/// - With no room yet (first sighting, or back from away) the candidate is
///   taken at once.
/// - Otherwise a challenger replaces the current room only after leading it
///   by the lead required for `switchAfter` seconds (each second weighed by
///   how far the lead exceeds it, up to three times). The lead required is
///   `margin`, and also the smaller of `confidence` standard errors of the
///   difference of the two rooms' means and, when both links have strayed
///   the way a move takes them, their settled lead plus `moveConfidence`
///   standard errors, each link's stray in its own deviations (a move, not
///   a fade). Each link's settled level is its mean since the beacon last
///   moved (`SettledLevel`); its spread, how far its window mean strays
///   from that level, is learnt from its own sightings (`Spread`), so
///   fades that outlast the window widen the margin where they happen and
///   nowhere else. The challenger may win on
///   the window's means or on the last `quickWindow` seconds'. A current
///   room that no longer hears the beacon keeps its last level for
///   `silentLimit`, then is beaten by any challenger after twice
///   `switchAfter`.
/// - A room change is judged a minute later (`settle`): a move if the lead
///   of the room entered over the room left has grown enough since, and the
///   settled levels start again; else a fade, and the settled levels may
///   take the beacon back (`correction`), as they take back a beacon placed
///   during a fade. Until then a beacon may walk on through rooms on the
///   margin alone.
/// - Heard by no agent for `awayAfter` seconds (or, with `auto`, the
///   beacon's own timeout learnt from the gaps between its sightings) it
///   is away.
/// - An agent that goes offline (its last will) drops out at once: its
///   sightings are forgotten and a beacon it held moves at its next
///   sighting to the best room still hearing it. Its silence alone never
///   makes a beacon away while others hear it.
///
/// `naive` settings give the baseline rule: the room of the shortest
/// distance in the last second, switched at once.
public struct RoomRule: Sendable {
  public struct Settings: Sendable, Equatable {
    public var window: Double
    public var switchAfter: Double
    public var margin: RoomMargin
    public var awayAfter: ExitAfter
    /// Path-loss exponent that turns a dB margin into a distance ratio.
    public var exponent: Double
    public var autoFloor: Double
    public var autoCeiling: Double
    /// Seconds a beacon with no room is heard before it is placed, so
    /// that every agent's first sighting counts, not only the quickest's.
    public var placeAfter = 2.0
    /// A challenger's lead must also reach this many standard errors of the
    /// difference of the two rooms' window means, as each link's own
    /// fading makes them stray (0: the margin alone).
    public var confidence = 3.5
    /// Or its lead must have grown above the settled lead of the two rooms
    /// (their links' means since the beacon last moved) by this many
    /// standard errors, each link's stray in its own deviations
    /// (`moveScore`): a move.
    public var moveConfidence = 4.5
    /// Seconds of the second, quicker mean a challenger may also win on
    /// (against the current room's over the same seconds, with its own
    /// learnt spread): under slow fading averaging longer does not help,
    /// and this finds a move sooner (0: the window alone).
    public var quickWindow = 2.0
    /// Seconds another room may lead the window before the spreads stop
    /// learning until it no longer does: a stay elsewhere that the rule
    /// has not recognised as a move would otherwise widen them, and wider
    /// spreads hide the next move as well.
    public var doubtAfter = 20.0

    public init(
      window: Double = 5, switchAfter: Double = 3, margin: RoomMargin = .decibels(3),
      awayAfter: ExitAfter = .seconds(30), exponent: Double = 2, autoFloor: Double = 6,
      autoCeiling: Double = 300
    ) {
      self.window = window
      self.switchAfter = switchAfter
      self.margin = margin
      self.awayAfter = awayAfter
      self.exponent = exponent
      self.autoFloor = autoFloor
      self.autoCeiling = autoCeiling
    }

    public init(config: Config) {
      self.init(
        window: config.rooms.window, switchAfter: config.rooms.switchAfter,
        margin: config.rooms.margin, awayAfter: config.rooms.awayAfter,
        exponent: config.ranging.pathLossExponent, autoFloor: config.monitor.autoFloor,
        autoCeiling: config.monitor.autoCeiling)
    }

    /// "Strongest receiver each second": the same away rule, no hysteresis.
    public func naive() -> Settings {
      var s = self
      s.window = 1
      s.switchAfter = 0
      s.margin = .decibels(0)
      s.placeAfter = 0
      s.confidence = 0
      s.quickWindow = 0
      return s
    }
  }

  /// Sightings kept per beacon and room: a window's worth at 1 Hz and more.
  static let samplesPerRoom = 8
  /// Rooms kept per beacon; past this the one heard longest ago goes.
  static let roomsPerBeacon = 32
  /// Beacons kept at most (memory stays bounded whatever is published);
  /// past this, sightings of new beacons are refused and counted.
  public static let defaultCapacity = 100_000
  /// How long a current room that stops hearing a beacon keeps its last
  /// level against challengers; then any challenger wins after twice
  /// switch_after (under heavy loss and slow fades a receiver misses a
  /// close beacon for ten seconds and more every hour).
  static let silentLimit: Int64 = 30_000_000
  /// A lead this many times the required one gathers evidence this many
  /// times as fast (so a clear move waits a third of switch_after), no more.
  static let strongLead = 3.0
  /// Seconds a settled level averages over at most: long against fades of
  /// tens of seconds.
  static let settledTime: Int64 = 600_000_000
  /// Seconds after a room change before it is judged a move or a fade:
  /// longer than a fade.
  static let confirmAfter: Int64 = 60_000_000
  /// Seconds a settled level must have averaged before distances from it
  /// teach a spread (a younger one has followed the fade too closely).
  static let spreadAfter: Int64 = 20_000_000
  /// Standard errors (`moveScore`) by which the lead of the room entered
  /// over the room left must have grown, from their settled levels to their
  /// means since the change, for the change to be a move.
  static let confirmConfidence = 3.0
  /// Each of the two links must have strayed this many of its own standard
  /// deviations for a move (a fade is mostly one link's doing).
  static let moveEach = 1.5
  /// Seconds one independent look at a link lasts, twice the longest fade
  /// the rule expects: a settled level of `age` seconds varies as the
  /// spread times `fadeLook / age`.
  static let fadeLook = 60.0
  /// Standard errors of the two settled levels by which another room's
  /// must lead the current room's to take the beacon back.
  static let correctConfidence = 1.5

  /// Away beacons unheard this long are forgotten (their retained state
  /// already says away).
  static let forgetAfterMicros: Int64 = 3_600_000_000

  struct Trace: Sendable {
    var room: Int32
    var count: Int8 = 0
    var next: Int8 = 0
    var lastHeard: Int64 = .min
    var times = InlineArray<8, Int64>(repeating: 0)
    /// log10 of the distance in metres.
    var logs = InlineArray<8, Float>(repeating: 0)
    /// How far this link's means over `window` and over `quickWindow`
    /// stray from its settled level (its fading, learnt from its own
    /// sightings).
    var spread = Spread()
    var quickSpread = Spread()
    /// This link's settled level.
    var settled = SettledLevel()

    init(room: Int32) { self.room = room }

    mutating func add(_ t: Int64, _ logDistance: Float) {
      times[Int(next)] = t
      logs[Int(next)] = logDistance
      next = (next + 1) % Int8(RoomRule.samplesPerRoom)
      count = min(count + 1, Int8(RoomRule.samplesPerRoom))
    }

    /// Mean log10 distance of the samples at or after `since`.
    func score(since: Int64) -> Double? {
      var sum = 0.0
      var n = 0
      for k in 0..<Int(count) where times[k] >= since {
        sum += Double(logs[k])
        n += 1
      }
      return n > 0 ? sum / Double(n) : nil
    }
  }

  struct BeaconState: Sendable {
    var traces: [Trace] = []
    var current: Int32? = nil
    var hasRoom = false
    var challenger: Int32? = nil
    var challengerSince: Int64 = 0
    /// Seconds of winning the challenger has gathered, each second weighed
    /// by its lead over the required one (up to `strongLead` times).
    var evidence = 0.0
    var evidenceAt: Int64 = 0
    /// Last sighting from any agent; `nil` after a restore until time moves.
    var lastHeard: Int64? = nil
    /// When a beacon with no room was first heard (placement waits).
    var firstHeard: Int64? = nil
    var interval = AdvertisingIntervalEstimator()
    /// A room change not yet confirmed as a move: when it happened and the
    /// room left.
    var pending: (since: Int64, from: Int32)? = nil
    /// Since when another room's window mean has led the current room's
    /// (by the margin at first).
    var otherLeads: Int64? = nil
  }

  public private(set) var settings: Settings
  public var capacity = RoomRule.defaultCapacity
  /// Beacon states stored densely, found through `index`.
  private var states: [BeaconState] = []
  private var ids: [RoomSubject] = []
  private var positions: [RoomSubject: Int] = [:]
  private var roomNames: [String] = []
  private var roomIndex: [String: Int32] = [:]
  private var online: [Bool] = []
  private var now: Int64 = .min
  /// No beacon is due to go away before this (a lower bound).
  private var awayFloor: Int64 = .min
  /// Sightings refused because `capacity` beacons were kept.
  public private(set) var refused = 0

  public init(settings: Settings) { self.settings = settings }

  // MARK: Inputs

  /// One sighting. Returns the changes it (and the time it brings) causes.
  public mutating func sighting(_ s: RoomSighting) -> [RoomChange] {
    let t = s.t.micros
    var out = advance(to: t)
    let room = index(of: s.room)
    if !online[Int(room)] { online[Int(room)] = true }  // it speaks: it is up
    guard let i = position(of: s.subject, create: true) else {
      refused += 1
      return out
    }
    let timeout = awayTimeout(states[i])
    states[i].lastHeard = max(states[i].lastHeard ?? t, t)
    states[i].interval.observe(at: DecisionTime(micros: t), absentAfter: timeout)
    if let d = s.distance {
      let k = Self.traceIndex(&states[i], room: room)
      states[i].traces[k].add(t, Float(log10(d)))
      states[i].traces[k].lastHeard = max(states[i].traces[k].lastHeard, t)
      // Another room has led the window for a while: a move not yet
      // recognised (or a fade whose first seconds have taught its depth).
      // It must not teach the spreads, or the next move is hidden too.
      let doubt = states[i].otherLeads.map { Double(t - $0) > settings.doubtAfter * 1e6 } ?? false
      Self.learnLevels(
        &states[i].traces[k], at: t, pending: states[i].pending != nil, teach: !doubt,
        settings: settings)
    } else if let k = states[i].traces.firstIndex(where: { $0.room == room }) {
      states[i].traces[k].lastHeard = max(states[i].traces[k].lastHeard, t)
    }
    if let change = Self.decide(&states[i], at: now, settings: settings, online: online) {
      out.append(
        RoomChange(
          t: WallTime(micros: now), subject: s.subject, room: change.map { roomNames[Int($0)] }))
    }
    if states[i].hasRoom, let heard = states[i].lastHeard {
      awayFloor = min(awayFloor, heard &+ Int64(timeout * 1e6))
    }
    return out
  }

  /// An agent's status: offline (its last will, or a clean stop) drops its
  /// room out at once; its beacons move at their next sighting elsewhere.
  public mutating func agent(_ room: String, online isOnline: Bool, at t: WallTime? = nil)
    -> [RoomChange]
  {
    var out = t.map { advance(to: $0) } ?? []
    let r = index(of: room)
    online[Int(r)] = isOnline
    guard !isOnline else { return out }
    for i in states.indices {
      states[i].traces.removeAll { $0.room == r }
      if states[i].challenger == r { states[i].challenger = nil }
      guard states[i].current == r, states[i].hasRoom, now != .min else { continue }
      if let change = Self.decide(&states[i], at: now, settings: settings, online: online) {
        out.append(
          RoomChange(
            t: WallTime(micros: now), subject: ids[i], room: change.map { roomNames[Int($0)] }))
      }
    }
    return out
  }

  /// A room decided before a restart (the retained state): kept unless
  /// this rule already knows the beacon. Its away time counts from now.
  public mutating func restore(_ subject: RoomSubject, room: String?) {
    guard positions[subject] == nil, let i = position(of: subject, create: true) else { return }
    states[i].hasRoom = room != nil
    states[i].current = room.map { index(of: $0) }
    states[i].lastHeard = nil
    awayFloor = .min
  }

  /// Time passes: beacons whose silence has lasted their away time go
  /// away (each change at the moment it became due).
  public mutating func advance(to t: WallTime) -> [RoomChange] { advance(to: t.micros) }

  private mutating func advance(to t: Int64) -> [RoomChange] {
    if t > now { now = t }
    guard now >= awayFloor else { return [] }
    var out: [RoomChange] = []
    var next = Int64.max
    var i = 0
    while i < states.count {
      defer { i += 1 }
      let timeout = Int64(awayTimeout(states[i]) * 1e6)
      guard let heard = states[i].lastHeard else {
        states[i].lastHeard = now  // restored: the clock starts now
        next = min(next, now &+ timeout)
        continue
      }
      let due = heard &+ timeout
      if states[i].hasRoom {
        if due <= now {
          states[i].hasRoom = false
          states[i].current = nil
          states[i].challenger = nil
          states[i].firstHeard = nil
          states[i].otherLeads = nil
          states[i].traces.removeAll()
          out.append(RoomChange(t: WallTime(micros: due), subject: ids[i], room: nil))
        } else {
          next = min(next, due)
        }
      } else if now - heard > Self.forgetAfterMicros {
        remove(at: i)
        i -= 1
      }
    }
    // Check again at the next due time, and at least every minute (forgetting).
    awayFloor = min(next, now &+ 60_000_000)
    return out.sorted { ($0.t, $0.subject) < ($1.t, $1.subject) }
  }

  private mutating func position(of id: RoomSubject, create: Bool) -> Int? {
    if let i = positions[id] { return i }
    guard create, states.count < capacity else { return nil }
    positions[id] = states.count
    states.append(BeaconState())
    ids.append(id)
    return states.count - 1
  }

  /// Swap-remove: the last state moves into the hole.
  private mutating func remove(at i: Int) {
    positions[ids[i]] = nil
    let last = states.count - 1
    if i != last {
      states.swapAt(i, last)
      ids.swapAt(i, last)
      positions[ids[i]] = i
    }
    states.removeLast()
    ids.removeLast()
  }

  // MARK: Queries

  /// When `advance` next has something to do.
  public var nextDeadline: WallTime? { states.isEmpty ? nil : WallTime(micros: awayFloor) }

  /// The spread (dB²) of one link of a subject, for tests and diagnostics.
  func spread(of subject: RoomSubject, room: String) -> Double? {
    guard let i = positions[subject], let r = roomIndex[room],
      let tr = states[i].traces.first(where: { $0.room == r })
    else { return nil }
    return tr.spread.value
  }

  public func room(of subject: RoomSubject) -> String? {
    positions[subject].flatMap { states[$0].current }.map { roomNames[Int($0)] }
  }

  public var beaconCount: Int { states.count }

  /// Seconds of silence before `beacon` is away (under `auto`, its own).
  public func awayTimeout(of subject: RoomSubject) -> Double? {
    positions[subject].map { awayTimeout(states[$0]) }
  }

  public func room(of beacon: TrackedID) -> String? { room(of: .beacon(beacon)) }
  public func awayTimeout(of beacon: TrackedID) -> Double? { awayTimeout(of: .beacon(beacon)) }
  public mutating func restore(_ beacon: TrackedID, room: String?) {
    restore(.beacon(beacon), room: room)
  }

  // MARK: The decision

  /// One room's mean over some seconds, how far such a mean strays (dB²)
  /// and the link's settled level (dB).
  struct Level {
    var room: Int32
    var score: Double
    var spread: Double
    /// The link's settled level, dB (none yet: `nil`).
    var settled: Double?
  }

  /// The change to make now, if any: `.some(nil)` for away is never made
  /// here (away is time's doing), so the result is `.some(room)` or `nil`.
  private static func decide(
    _ b: inout BeaconState, at t: Int64, settings: Settings, online: [Bool]
  ) -> Int32?? {
    let since = t - Int64(settings.window * 1e6)
    let quickSince = t - Int64(settings.quickWindow * 1e6)
    let switchAfter = Int64(settings.switchAfter * 1e6)
    var best: Level? = nil
    var current: Level? = nil
    var quickBest: Level? = nil
    var quickCurrent: Level? = nil
    func better(_ l: Level, than o: Level?) -> Bool {
      guard let o else { return true }
      return l.score < o.score || (l.score == o.score && l.room == b.current)
    }
    for tr in b.traces where online[Int(tr.room)] {
      if let s = tr.score(since: since) {
        let l = Level(room: tr.room, score: s, spread: tr.spread.value, settled: tr.settled.value)
        if tr.room == b.current { current = l }
        if better(l, than: best) { best = l }
      } else if tr.room == b.current, settings.confidence > 0, t - tr.lastHeard < silentLimit,
        let s = tr.score(since: tr.lastHeard - Int64(settings.window * 1e6))
      {
        // Not heard in the window (loss, a deep fade): its last level
        // stands until it has been silent for `silentLimit`.
        current = Level(room: tr.room, score: s, spread: tr.spread.value, settled: tr.settled.value)
      }
      if settings.quickWindow > 0, let s = tr.score(since: quickSince) {
        let l = Level(
          room: tr.room, score: s, spread: tr.quickSpread.value, settled: tr.settled.value)
        if tr.room == b.current { quickCurrent = l }
        if better(l, than: quickBest) { quickBest = l }
      }
    }
    guard let best else {
      b.challenger = nil
      return nil
    }
    // Doubt from when another room first led by the margin (what the
    // confidence then holds back) until the current room leads again. A
    // lead within the margin alone is the steady state of a beacon between
    // two rooms, not a doubt.
    if best.room == b.current {
      b.otherLeads = nil
    } else if b.otherLeads == nil,
      current.map({ strength(best, over: $0, moving: true, settings) >= 1 }) ?? true
    {
      b.otherLeads = t
    }
    guard b.hasRoom, let room = b.current else {
      let first = b.firstHeard ?? t
      b.firstHeard = first
      guard t - first >= Int64(settings.placeAfter * 1e6) else { return nil }
      b.firstHeard = nil
      b.hasRoom = true
      b.current = best.room
      b.challenger = nil
      return .some(best.room)
    }
    // A current room whose agent is offline drops out at once.
    if best.room != room, !online[Int(room)] {
      b.current = best.room
      b.challenger = nil
      return .some(best.room)
    }
    if settings.confidence > 0 {
      if let p = b.pending, t - p.since >= confirmAfter { settle(&b, at: t) }
      if b.pending == nil, let settled = correction(b, from: room, at: t, online: online) {
        b.current = settled
        b.challenger = nil
        return .some(settled)
      }
    }
    // A beacon that has just changed room may be walking on through it, to
    // another than the one it left.
    func onward(_ l: Level) -> Bool { b.pending.map { $0.from != l.room } ?? false }
    // The challenger and how strongly it leads (1: just the required lead).
    var challenger: (room: Int32, strength: Double)? = nil
    if let current {
      if best.room != room {
        challenger = (best.room, strength(best, over: current, moving: onward(best), settings))
      }
      if let q = quickBest, q.room != room, let qc = quickCurrent {
        let s = strength(q, over: qc, moving: onward(q), settings)
        if s > challenger?.strength ?? 0 { challenger = (q.room, s) }
      }
    } else if best.room != room {
      challenger = (best.room, 1)
    }
    guard let challenger, challenger.strength >= 1 else {
      b.challenger = nil
      return nil
    }
    if b.challenger != challenger.room {
      b.challenger = challenger.room
      b.challengerSince = t
      b.evidence = 0
      b.evidenceAt = t
    }
    b.evidence += Double(t - b.evidenceAt) / 1e6 * min(challenger.strength, strongLead)
    b.evidenceAt = t
    if current == nil {
      // A current room that hears nothing in the window loses without a
      // margin, but only after twice switch_after: a receiver close to the
      // beacon can miss several advertisements in a row (8 s at 30 % loss
      // happens every few hours), and a beacon that really left still moves.
      guard t - b.challengerSince >= 2 * switchAfter else { return nil }
    } else {
      guard b.evidence * 1e6 >= Double(switchAfter) else { return nil }
    }
    // Judged a move or a fade `confirmAfter` after the first of a run of
    // changes (a walk through several rooms is one move).
    if settings.confidence > 0, b.pending == nil { b.pending = (t, room) }
    b.current = challenger.room
    b.challenger = nil
    // Back in the room it left before the change was judged: that was a
    // fade, judged now, so that it cannot walk on from here on the margin.
    if let p = b.pending, p.from == challenger.room { settle(&b, at: t) }
    return .some(challenger.room)
  }

  /// The room change `confirmAfter` ago (or the first of a run of them):
  /// a move if the lead of the room entered over the room left has grown
  /// from their settled levels to their means since by `confirmConfidence`
  /// standard errors (`moveScore`), or if the room left no longer hears
  /// the beacon; then every settled level starts again from its means since. Otherwise a
  /// fade: those means join the settled levels, which may then take the
  /// beacon back (`correction`).
  static func settle(_ b: inout BeaconState, at t: Int64) {
    guard let (since, from) = b.pending else { return }
    b.pending = nil
    var moved = false
    if let now = b.current, now != from,
      let entered = b.traces.first(where: { $0.room == now }),
      let enteredSince = entered.settled.pendingMean, let enteredBefore = entered.settled.value
    {
      if let left = b.traces.first(where: { $0.room == from }),
        let leftSince = left.settled.pendingMean, let leftBefore = left.settled.value
      {
        let drop = Double(leftSince) - leftBefore
        let rise = enteredBefore - Double(enteredSince)
        moved =
          moveScore(
            drop: drop, rise: rise, spreadLeft: left.spread.value,
            spreadEntered: entered.spread.value)
          >= confirmConfidence
      } else {
        moved = true
      }
    }
    for k in b.traces.indices {
      if moved {
        b.traces[k].settled.restart(since: since, at: t)
      } else {
        b.traces[k].settled.join(since: since, at: t)
      }
    }
  }

  /// The room whose settled level leads the current room's by
  /// `correctConfidence` standard errors of the two, if any: a beacon
  /// placed in the wrong room by a fade (or a move seen late) goes back.
  /// The levels must be `confirmAfter` old, and both links heard lately.
  static func correction(_ b: BeaconState, from room: Int32, at t: Int64, online: [Bool])
    -> Int32?
  {
    func level(_ tr: Trace) -> Double? {
      guard online[Int(tr.room)], t - tr.lastHeard < silentLimit else { return nil }
      return tr.settled.value
    }
    guard let c = b.traces.first(where: { $0.room == room }), let current = level(c) else {
      return nil
    }
    var best: (trace: Trace, level: Double)? = nil
    for tr in b.traces where tr.room != room {
      if let l = level(tr), l < best?.level ?? current { best = (tr, l) }
    }
    guard let best else { return nil }
    let age = min(c.settled.age(at: t), best.trace.settled.age(at: t))
    guard age >= Double(confirmAfter) / 1e6 else { return nil }
    let variance = (c.spread.value + best.trace.spread.value) * min(1, fadeLook / age)
    let lead = current - best.level
    return lead >= correctConfidence * variance.squareRoot() ? best.trace.room : nil
  }

  /// A challenger's lead over the current room (dB of path loss) as a
  /// multiple of the lead required, below 1 it does not win. The lead
  /// required is the margin, and also:
  /// - `confidence` standard errors of the difference of the two means
  ///   (each link's spread added): it leads whatever their settled lead;
  /// - or, when both links have strayed from their settled levels the way a
  ///   move takes them (`moveEach` of their own deviations), their settled
  ///   lead plus `moveConfidence` standard errors of the growth, each link
  ///   weighed by its own spread (`moveScore`): a move, not a fade;
  /// - or, `moving` (a beacon that has just changed room, on to another
  ///   than the one it left), the margin alone: a walk through a room.
  static func strength(
    _ challenger: Level, over current: Level, moving: Bool, _ settings: Settings
  ) -> Double {
    let lead = 10 * settings.exponent * (current.score - challenger.score)
    let se = (current.spread + challenger.spread).squareRoot()
    var required = settings.confidence * se
    if moving {
      required = 0
    } else if let settledC = current.settled, let settledCh = challenger.settled {
      let dB = 10 * settings.exponent
      let drop = dB * current.score - settledC
      let rise = settledCh - dB * challenger.score
      if drop >= moveEach * current.spread.squareRoot(),
        rise >= moveEach * challenger.spread.squareRoot()
      {
        // The scale at which the growth reaches `moveConfidence` exactly when
        // `moveScore` does, so that the lead required stays in dB (the two
        // spreads added when they are alike). Both strays are positive here.
        let score = moveScore(
          drop: drop, rise: rise, spreadLeft: current.spread, spreadEntered: challenger.spread)
        if score > 0 {
          let moveSE = (drop + rise) / score
          required = min(required, settledC - settledCh + settings.moveConfidence * moveSE)
        }
      }
    }
    switch settings.margin {
    case .decibels(let db):
      let r = max(required, db)
      return r > 0 ? lead / r : (lead >= 0 ? 1 : 0)
    case .metres(let m):
      guard pow(10, current.score) - pow(10, challenger.score) >= m, lead >= required else {
        return 0
      }
      return required > 0 ? lead / required : 1
    }
  }

  /// How far the lead of the room entered over the room left has grown from
  /// their settled levels (the left link's `drop`, the entered one's
  /// `rise`), in standard errors: each link's stray in its own deviations,
  /// summed and scaled back to one standard normal, so that a quiet link's
  /// clear stray is not drowned by a noisy link's spread (a link heard from
  /// across the room the walker drifts in). Equal spreads give the growth
  /// over the two spreads added.
  static func moveScore(drop: Double, rise: Double, spreadLeft: Double, spreadEntered: Double)
    -> Double
  {
    // A spread never learnt to zero divides nothing by zero.
    let left = max(spreadLeft, 1e-6).squareRoot()
    let entered = max(spreadEntered, 1e-6).squareRoot()
    return (drop / left + rise / entered) / 2.squareRoot()
  }

  /// After a sighting: the window mean joins the link's settled level
  /// (kept apart while a room change is unconfirmed), and both means teach
  /// their spreads (their distance from the settled level before it moved),
  /// once the level is `spreadAfter` old, unless `teach` is false.
  static func learnLevels(
    _ tr: inout Trace, at t: Int64, pending: Bool, teach: Bool = true, settings: Settings
  ) {
    guard settings.confidence > 0 else { return }
    let dB = Float(10 * settings.exponent)
    guard let m = tr.score(since: t - Int64(settings.window * 1e6)) else { return }
    let mean = dB * Float(m)
    if !pending, teach, let level = tr.settled.value,
      tr.settled.age(at: t) >= Double(spreadAfter) / 1e6
    {
      let dt = Float(t - tr.settled.at) / 1e6
      tr.spread.learn(mean - Float(level), dt: dt)
      if settings.quickWindow > 0, let q = tr.score(since: t - Int64(settings.quickWindow * 1e6)) {
        tr.quickSpread.learn(dB * Float(q) - Float(level), dt: dt)
      }
    }
    tr.settled.add(mean, at: t, pending: pending)
  }

  private func awayTimeout(_ b: BeaconState) -> Double {
    switch settings.awayAfter {
    case .seconds(let s): return s
    case .auto:
      let cautious = min(settings.autoCeiling, max(settings.autoFloor, 30))
      return b.interval.timeout(floor: settings.autoFloor, ceiling: settings.autoCeiling)
        ?? cautious
    }
  }

  private static func traceIndex(_ b: inout BeaconState, room: Int32) -> Int {
    if let k = b.traces.firstIndex(where: { $0.room == room }) { return k }
    if b.traces.count >= Self.roomsPerBeacon {
      let oldest = b.traces.indices.min { b.traces[$0].lastHeard < b.traces[$1].lastHeard }!
      b.traces.remove(at: oldest)
    }
    b.traces.append(Trace(room: room))
    return b.traces.count - 1
  }

  private mutating func index(of room: String) -> Int32 {
    if let i = roomIndex[room] { return i }
    let i = Int32(roomNames.count)
    roomNames.append(room)
    roomIndex[room] = i
    online.append(true)
    return i
  }
}
