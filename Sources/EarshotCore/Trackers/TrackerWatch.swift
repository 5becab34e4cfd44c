/// How readily a separated tracker is taken to follow, as AirGuard's levels:
/// seen within `window` for at least `span`, across at least `places` (one
/// whose frames say no state: `TrackerWatch.Settings.rule(for:)`).
public enum TrackerSensitivity: String, Hashable, Sendable, CaseIterable {
  case high, medium, low

  public var span: Duration {
    switch self {
    case .high: .seconds(30 * 60)
    case .medium: .seconds(60 * 60)
    case .low: .seconds(120 * 60)
    }
  }

  public var places: Int {
    switch self {
    case .high: 2
    case .medium: 3
    case .low: 4
    }
  }
}

/// The watch's number for one physical tracker, kept across its rotations.
public struct TrackerNumber: Hashable, Comparable, Sendable, CustomStringConvertible {
  public let value: Int

  public init(_ value: Int) { self.value = value }

  public static func < (a: TrackerNumber, b: TrackerNumber) -> Bool { a.value < b.value }

  public var description: String { "tracker \(value)" }
}

/// A sighting kept as evidence: when, where if the place was known, and
/// the signal it was heard with.
public struct TrackerSighting: Hashable, Sendable {
  public let time: MonotonicTime
  public let place: PlaceID?
  public let rssi: Int8?
}

/// Why a tracker does not alert, if it does not.
public enum TrackerTrust: Hashable, Sendable {
  case none
  /// Enrolled in the config (`trusted`): never alerts.
  case enrolled
  /// Trusted by the user until this time (nil: until cleared).
  case until(MonotonicTime?)
}

/// One line of `earshot trackers`: a tracker the watch keeps.
public struct TrackerRow: Hashable, Sendable {
  public let number: TrackerNumber
  public let frame: TrackerFrame
  public let address: BDAddress
  public let firstSeen: MonotonicTime
  public let lastSeen: MonotonicTime
  public let sightings: Int
  public let rssi: Int8?
  /// Distinct places in its evidence.
  public let places: Int
  /// When it was found to follow, if it was.
  public let following: MonotonicTime?
  public let trust: TrackerTrust
}

/// The pure core of "is a tracker following me": tracker sightings, the
/// laptop's environment and its moves in; "this tracker now follows" and
/// the list of trackers around out. Times are on a clock that counts the
/// laptop's sleep (CLOCK_BOOTTIME live, capture time in a replay).
///
/// Guarantees:
/// - A tracker alerts (`Action.following`) only when, within `window`, its
///   sightings span at least the sensitivity's `span` and fall in at least
///   its number of distinct known places (AirGuard's rule; the settings'
///   `followSpan` and `followPlaces` replace them when set; twice the span
///   and one place more for a frame that says no state), counting
///   at most one sighting per `spacing` per place (an unknown place counts
///   for the span, never as a place).
/// - Separated frames are evidence, and so are frames that say no state
///   from a tracker with a static address (Tile, Pebblebee, a Chipolo whose
///   bit is clear), under a stricter rule: twice the span and one place
///   more (`Settings.rule(for:)`), since such a tag may be with its owner.
///   A near-owner frame wipes the evidence of the tracker it names (its
///   owner is with it); frames without a handle (Find My near its owner,
///   Find Hub 0x40, DULT) are never kept, so they never alert; a SmartTag
///   that says no state (premature offline: it has just left its owner)
///   gathers none.
/// - An enrolled tracker (`Settings.trusted`) or one trusted by the user
///   (`Event.trust`, until its time) never alerts and gathers no evidence
///   (one that alerted before keeps its alert's while trusted; when a timed
///   trust runs out its alert and evidence go, so it alerts again only if
///   it follows again).
/// - One number per physical tracker across rotations, by its protocol's
///   handle: the address, or SmartTag's aging counter, linked to the one
///   earlier id whose counter is a little lower (never when two could be).
/// - A tracker alerts once; its evidence is kept until `Event.clear` (or a
///   timed trust running out, above).
/// - Memory is bounded: at most `maximumStrangers` trackers that do not
///   follow (the one heard longest ago forgotten first), `maximumFollowing`
///   following ones (the oldest alert forgotten first), `maximumTrusted`
///   trusted by the user that do not follow (the one heard longest ago
///   forgotten first),
///   `maximumEvidence`
///   sightings each; a tracker not heard for `retention` is forgotten (within
///   a minute) unless it follows or the user trusts it.
/// - Time never runs back: an event earlier than the last counts as the last.
public struct TrackerWatch: Sendable {
  public struct Settings: Sendable, Equatable {
    public var sensitivity: TrackerSensitivity = .medium
    public var window: Duration = .seconds(24 * 3600)
    public var retention: Duration = .seconds(24 * 3600)
    public var spacing: Duration = .seconds(15 * 60)
    /// The sensitivity's span and number of places, unless set
    /// (`[trackers] span`, `places`).
    public var followSpan: Duration? = nil
    public var followPlaces: Int? = nil
    /// SmartTag: the time one aging step is taken to last at most (a gap of
    /// this long may skip one counter value more).
    public var agingStep: Duration = .seconds(10 * 60)
    public var trusted: Set<BDAddress> = []
    public var maximumStrangers = 1_000
    public var maximumFollowing = 64
    public var maximumTrusted = 64
    public var maximumEvidence = 512
    public var places = PlaceSense.Settings()

    public init() {}

    /// From `[trackers]`.
    public init(config: TrackersConfig) {
      sensitivity = config.sensitivity
      retention = .milliseconds(Int64((config.retention * 1000).rounded()))
      spacing = .milliseconds(Int64((config.spacing * 1000).rounded()))
      followSpan = config.span.map { .milliseconds(Int64(($0 * 1000).rounded())) }
      followPlaces = config.places
      trusted = Set(config.trusted)
    }

    /// The span and places a tracker's evidence must meet, by the state of
    /// its latest frame: the sensitivity's (or `followSpan`, `followPlaces`)
    /// when separated; twice the span and one place more when the frame says
    /// no state (the next stricter level's: a tag that may be near its owner
    /// must follow for longer, through more places).
    public func rule(for state: TrackerState) -> (span: Duration, places: Int) {
      let span = followSpan ?? sensitivity.span
      let places = followPlaces ?? sensitivity.places
      return state == .separated ? (span, places) : (span * 2, places + 1)
    }
  }

  public enum Event: Sendable {
    /// A report holding a tracker frame.
    case tracker(TrackerFrame, address: BDAddress, rssi: Int8?)
    /// A report that is not a tracker: the environment (`random`: the
    /// report's address type).
    case advertiser(BDAddress, random: Bool)
    /// The BSSIDs of a Wi-Fi scan.
    case accessPoints(Set<String>)
    case moved(LaptopMove)
    /// The user trusts a tracker for a while (nil: until cleared).
    case trust(TrackerNumber, for: Duration?)
    /// The user clears a tracker: its evidence and its alert are gone.
    case clear(TrackerNumber)
  }

  /// A report as the watch takes it: its tracker frame, or the environment.
  public static func event(for report: AdvertisingReport) -> Event {
    if let frame = TrackerFrame.decode(advertisingData: report.data, address: report.address) {
      return .tracker(frame, address: report.address, rssi: report.rssi)
    }
    return .advertiser(
      report.address, random: report.addressType != .public && report.addressType != .publicIdentity
    )
  }

  public enum Action: Hashable, Sendable {
    /// This tracker follows now (once per tracker until cleared).
    case following(TrackerRow)
    /// `trust` or `clear` named a number the watch does not keep.
    case unknownNumber(TrackerNumber)
  }

  struct Entry: Sendable {
    var frame: TrackerFrame
    var address: BDAddress
    var key: Key
    var firstSeen: MonotonicTime
    var lastSeen: MonotonicTime
    var sightings = 1
    var rssi: Int8?
    var evidence: [TrackerSighting] = []
    var following: MonotonicTime?
    var trust: TrackerTrust
  }

  /// What a handle is looked up by: a SmartTag by its id, its counter to link.
  enum Key: Hashable, Sendable {
    case address(BDAddress)
    case smartTag(UInt64)
  }

  public let settings: Settings
  public private(set) var place: PlaceSense
  private var entries: [TrackerNumber: Entry] = [:]
  private var byKey: [Key: TrackerNumber] = [:]
  private var nextNumber = 1
  private var now = MonotonicTime.zero
  private var forgetAt = MonotonicTime.zero

  public init(settings: Settings = Settings()) {
    self.settings = settings
    place = PlaceSense(settings: settings.places)
  }

  /// The trackers kept, by number.
  public var rows: [TrackerRow] { entries.keys.sorted().compactMap(row) }
  public var count: Int { entries.count }
  public var followingCount: Int { entries.values.filter { $0.following != nil }.count }

  /// The latest time the watch was given.
  public var latest: MonotonicTime { now }

  /// A tracker's evidence, oldest first.
  public func evidence(of number: TrackerNumber) -> [TrackerSighting] {
    entries[number]?.evidence ?? []
  }

  /// When places would next be decided: the time to call `advance` by, or
  /// before reading `rows` (the Linux shell does the latter).
  public var nextDeadline: MonotonicTime? { place.nextDeadline }

  /// Time passes with nothing heard: places decided, strangers forgotten.
  public mutating func advance(to time: MonotonicTime) {
    now = max(now, time)
    place.advance(to: now)
    // Forgetting walks every tracker: once a minute is soon enough.
    if now >= forgetAt {
      forget()
      forgetAt = now + .seconds(60)
    }
  }

  public mutating func handle(_ event: Event, at time: MonotonicTime) -> [Action] {
    advance(to: time)
    switch event {
    case .advertiser(let address, let random):
      place.heard(address, random: random, at: now)
    case .accessPoints(let bssids):
      place.accessPoints(bssids, at: now)
    case .moved(let move):
      place.moved(move, at: now)
    case .trust(let number, let span):
      guard entries[number] != nil else { return [.unknownNumber(number)] }
      // Enrolled is for good: a trust for a while running out must not end it.
      guard entries[number]!.trust != .enrolled else { return [] }
      entries[number]!.trust = .until(span.map { now + $0 })
      // An alert's evidence stays until cleared; a stranger's is dropped.
      if entries[number]!.following == nil { entries[number]!.evidence = [] }
      // Following ones are bounded by `maximumFollowing`: never evicted here.
      let held = entries.filter { isHeld($0.value) && $0.value.following == nil }
      if held.count > settings.maximumTrusted,
        let oldest = held.filter({ $0.key != number }).min(by: {
          ($0.value.lastSeen, $0.key) < ($1.value.lastSeen, $1.key)
        })?.key
      {
        byKey[entries[oldest]!.key] = nil
        entries[oldest] = nil
      }
    case .clear(let number):
      guard let e = entries.removeValue(forKey: number) else { return [.unknownNumber(number)] }
      byKey[e.key] = nil
    case .tracker(let frame, let address, let rssi):
      return sighting(frame, address: address, rssi: rssi)
    }
    return []
  }

  private mutating func sighting(_ frame: TrackerFrame, address: BDAddress, rssi: Int8?)
    -> [Action]
  {
    guard let identity = frame.identity else { return [] }
    let number: TrackerNumber
    switch identity {
    case .address(let a):
      number = byKey[.address(a)] ?? add(frame, address, .address(a))
    case .smartTag(let aging):
      if let known = byKey[.smartTag(aging.id)] {
        number = known
      } else if let earlier = link(aging) {
        let old = entries[earlier]!.key
        byKey[old] = nil
        byKey[.smartTag(aging.id)] = earlier
        entries[earlier]!.key = .smartTag(aging.id)
        number = earlier
      } else {
        number = add(frame, address, .smartTag(aging.id))
      }
    }
    var e = entries[number]!
    e.sightings += 1
    e.frame = frame
    e.address = address
    e.lastSeen = now
    e.rssi = rssi ?? e.rssi
    expireTrust(&e)
    // A frame that says no state is evidence only with an address for its
    // handle (Tile, Pebblebee, Chipolo); a SmartTag's (premature offline:
    // it has just left its owner) is not, as AirGuard keeps none.
    let byAddress = if case .address = identity { true } else { false }
    switch frame.state {
    case .nearOwner where e.following == nil:
      e.evidence = []
    case .separated where e.trust == .none,
      .unknown where e.trust == .none && byAddress:
      record(&e, rssi: rssi)
      if e.following == nil, follows(e) {
        e.following = now
        entries[number] = e
        makeRoomForFollowing(besides: number)
        return [.following(row(number)!)]
      }
    default: break
    }
    entries[number] = e
    return []
  }

  private mutating func add(_ frame: TrackerFrame, _ address: BDAddress, _ key: Key)
    -> TrackerNumber
  {
    let number = TrackerNumber(nextNumber)
    nextNumber += 1
    let enrolled = settings.trusted.contains(address)
    entries[number] = Entry(
      frame: frame, address: address, key: key, firstSeen: now, lastSeen: now, sightings: 0,
      trust: enrolled ? .enrolled : .none)
    byKey[key] = number
    let strangers = entries.filter { $0.value.following == nil && !isHeld($0.value) }
    if strangers.count > settings.maximumStrangers,
      let oldest = strangers.filter({ $0.key != number }).min(by: {
        ($0.value.lastSeen, $0.key) < ($1.value.lastSeen, $1.key)
      })?.key
    {
      byKey[entries[oldest]!.key] = nil
      entries[oldest] = nil
    }
    return number
  }

  /// The one SmartTag whose counter the new one follows closely; none when
  /// two could be it.
  private func link(_ aging: SmartTagAging) -> TrackerNumber? {
    let step = UInt64(settings.agingStep / .nanoseconds(1))
    var found: [TrackerNumber] = []
    for (number, e) in entries {
      guard case .smartTag = e.key, case .smartTag(let old)? = e.frame.identity,
        aging.counter > old.counter
      else { continue }
      let allowed = 2 + e.lastSeen.nanos(until: now) / max(1, step)
      if UInt64(aging.counter - old.counter) <= allowed { found.append(number) }
    }
    return found.count == 1 ? found[0] : nil
  }

  private func isHeld(_ e: Entry) -> Bool {
    if case .until(let end) = e.trust { return end.map { now < $0 } ?? true }
    return false
  }

  /// A timed trust that ran out: "Ignore" is for a while, so one that
  /// followed starts over and alerts again only if it follows again.
  private func expireTrust(_ e: inout Entry) {
    guard case .until(let end?) = e.trust, end <= now else { return }
    e.trust = .none
    if e.following != nil {
      e.following = nil
      e.evidence = []
    }
  }

  /// Adds this sighting as evidence if its place has none in `spacing`.
  private func record(_ e: inout Entry, rssi: Int8?) {
    let here = place.current
    let windowStart = now.nanos >= nanos(settings.window) ? now.nanos - nanos(settings.window) : 0
    e.evidence.removeAll { $0.time.nanos < windowStart && e.following == nil }
    if let last = e.evidence.last(where: { $0.place == here }),
      last.time.nanos(until: now) < nanos(settings.spacing)
    {
      return
    }
    e.evidence.append(TrackerSighting(time: now, place: here, rssi: rssi))
    if e.evidence.count > settings.maximumEvidence { e.evidence.removeFirst() }
  }

  /// AirGuard's rule on the evidence within the window (stricter for a
  /// frame that says no state).
  private func follows(_ e: Entry) -> Bool {
    let rule = settings.rule(for: e.frame.state)
    guard let first = e.evidence.first else { return false }
    let places = Set(e.evidence.compactMap(\.place))
    return places.count >= rule.places && first.time.nanos(until: now) >= nanos(rule.span)
  }

  private mutating func makeRoomForFollowing(besides number: TrackerNumber) {
    let following = entries.filter { $0.value.following != nil }
    guard following.count > settings.maximumFollowing,
      let oldest = following.filter({ $0.key != number }).min(by: {
        ($0.value.following!, $0.key) < ($1.value.following!, $1.key)
      })?.key
    else { return }
    byKey[entries[oldest]!.key] = nil
    entries[oldest] = nil
  }

  /// Strangers not heard for `retention`, and trust that ran out.
  private mutating func forget() {
    for number in entries.keys {
      expireTrust(&entries[number]!)
      let e = entries[number]!
      guard e.following == nil, !isHeld(e),
        e.lastSeen.nanos(until: now) >= nanos(settings.retention)
      else { continue }
      byKey[e.key] = nil
      entries[number] = nil
    }
  }

  private func row(_ number: TrackerNumber) -> TrackerRow? {
    guard let e = entries[number] else { return nil }
    return TrackerRow(
      number: number, frame: e.frame, address: e.address, firstSeen: e.firstSeen,
      lastSeen: e.lastSeen, sightings: e.sightings, rssi: e.rssi,
      places: Set(e.evidence.compactMap(\.place)).count, following: e.following, trust: e.trust)
  }

  private func nanos(_ d: Duration) -> UInt64 { UInt64(max(0, d / .nanoseconds(1))) }
}
