/// A deterministic fortnight of a laptop's life, as the watch hears it:
/// weekdays home, the morning train among strangers' tags, the office,
/// the evening train, a café, home; weekends home and the café. The laptop
/// sleeps between places (each place starts with a resume). It carries its
/// owner's enrolled Chipolo and a SmartTag the owner trusts at its first
/// sighting; the partner's SmartTag near its owner at home and at weekends;
/// a neighbour's separated AirTag heard at home in the evenings and on the
/// morning train twice a week; and four followers: a separated AirTag in the bag from day 3 (its
/// address changes daily at 04:00), a stranger's separated SmartTag
/// rotating its id every 15 minutes from day 5, a Find Hub tag in 0x41 mode
/// from day 8 (its address daily), a Tile (no state, a static address)
/// from day 10. Each sighting is a report's advertising
/// data decoded by `TrackerFrame.decode`, once a minute per advertiser.
public struct TrackerFortnight: Sendable {
  /// The true place, as the laptop's owner would name it.
  public enum Spot: Hashable, Sendable {
    case home, office, cafe
    case train(day: Int, evening: Bool)
  }

  public struct Segment: Sendable {
    public let start: MonotonicTime
    public let end: MonotonicTime
    public let spot: Spot
    public let day: Int
  }

  /// Whose a tracker sighting is.
  public enum Role: String, Hashable, Sendable, CaseIterable {
    case stranger, colleague, partner
    /// A neighbour's separated tag: heard at home in the evenings, and on
    /// the morning train on Tuesdays and Thursdays.
    case neighbour
    case ownChipolo = "own_chipolo"
    case ownSmartTag = "own_smarttag"
    case airTag = "airtag"
    case smartTag = "smarttag"
    case findHub = "findhub"
    case tile

    public var follows: Bool {
      self == .airTag || self == .smartTag || self == .findHub || self == .tile
    }
  }

  public struct Step: Sendable {
    public let time: MonotonicTime
    public let event: TrackerWatch.Event
    /// The advertising data of a report (empty for the laptop's own events).
    public var data: [UInt8] = []
    /// For tracker sightings: whose, and where the laptop truly is.
    public let role: Role?
    public let spot: Spot
  }

  public static let days = 14
  public static let hour = Duration.seconds(3600)
  public static let minute = Duration.seconds(60)
  /// The day each follower joins (day 0 is a Monday).
  public static func firstDay(_ role: Role) -> Int? {
    switch role {
    case .airTag: 2
    case .smartTag: 4
    case .findHub: 7
    case .tile: 9
    default: nil
    }
  }

  public let seed: UInt64
  public let wifi: Bool
  public let segments: [Segment]
  /// The owner's Chipolo: enrol it (`TrackerWatch.Settings.trusted`).
  public let ownChipolo: BDAddress

  public init(seed: UInt64 = 40, wifi: Bool = true) {
    self.seed = seed
    self.wifi = wifi
    ownChipolo = Self.staticAddress(Self.mix(seed, 0xC41))
    var segments: [Segment] = []
    func at(_ day: Int, _ h: Int, _ m: Int) -> MonotonicTime {
      .zero + Self.hour * (24 * day + h) + Self.minute * m
    }
    for day in 0..<Self.days {
      let plan: [(Int, Int, Int, Int, Spot)] =
        day % 7 < 5
        ? [
          (7, 0, 7, 50, .home), (8, 10, 8, 50, .train(day: day, evening: false)),
          (9, 0, 17, 30, .office), (17, 40, 18, 20, .train(day: day, evening: true)),
          (18, 30, 19, 15, .cafe), (19, 30, 23, 0, .home),
        ]
        : [(9, 0, 12, 0, .home), (12, 20, 14, 0, .cafe), (14, 20, 22, 0, .home)]
      for (h0, m0, h1, m1, spot) in plan {
        segments.append(Segment(start: at(day, h0, m0), end: at(day, h1, m1), spot: spot, day: day))
      }
    }
    self.segments = segments
  }

  /// Every step of the fortnight, in time order.
  public func run(_ body: (Step) -> Void) {
    for (index, segment) in segments.enumerated() {
      body(Step(time: segment.start, event: .moved(.resumed), role: nil, spot: segment.spot))
      let cast = advertisers(segment, index: index)
      var minute = segment.start
      while minute < segment.end {
        let offset = Int(segment.start.nanos(until: minute) / 60_000_000_000)
        if wifi, offset % 10 == 0, let aps = accessPoints(segment.spot) {
          body(Step(time: minute, event: .accessPoints(aps), role: nil, spot: segment.spot))
        }
        var i = 0
        for a in cast where a.from <= offset && offset < a.to {
          let t = minute + .milliseconds(250 * i)
          i += 1
          let heard = a.event(minute)
          body(
            Step(time: t, event: heard.event, data: heard.data, role: a.role, spot: segment.spot))
        }
        minute = minute + Self.minute
      }
    }
  }

  /// One advertiser present from minute `from` to `to` of a segment.
  struct Cast {
    var from = 0
    var to = Int.max
    var role: Role?
    var event: (MonotonicTime) -> Heard
  }

  private func advertisers(_ s: Segment, index: Int) -> [Cast] {
    var rng = SplitMix(seed: Self.mix(seed, UInt64(index) &+ 0x5E6))
    let length = Int(s.start.nanos(until: s.end) / 60_000_000_000)
    var cast: [Cast] = []
    func fixed(_ n: Int, _ salt: UInt64) {
      for i in 0..<n {
        let a = Self.staticAddress(Self.mix(seed, salt &+ UInt64(i)))
        cast.append(Cast(event: { _ in Self.environment(a) }))
      }
    }
    // Passers-by: a fixed address for part of the stay.
    func passing(_ n: Int, minimum: Int) {
      for _ in 0..<n {
        let a = Self.staticAddress(rng.next())
        let (from, to) = Self.span(length, minimum: minimum, &rng)
        cast.append(Cast(from: from, to: to, event: { _ in Self.environment(a) }))
      }
    }
    // Phones: random private addresses rotating every 15 minutes.
    func phones(_ n: Int) {
      for _ in 0..<n {
        let base = rng.next()
        cast.append(
          Cast(event: { t in
            Self.environment(Self.privateAddress(Self.mix(base, t.nanos / 900_000_000_000)))
          }))
      }
    }
    switch s.spot {
    case .home:
      fixed(10, 0x40E)
      cast.append(Cast(role: .partner, event: smartTag(state: 5, salt: 0x9A7)))
      if s.day % 7 < 5, length > 120 {
        cast.append(Cast(from: 30, to: 150, role: .neighbour, event: airTag(salt: 0x0E1)))
      }
    case .office:
      fixed(30, 0x0FF)
      phones(8)
      let day = UInt64(s.day)
      cast.append(Cast(role: .colleague, event: airTag(salt: 0xC011 &+ day)))
      cast.append(Cast(role: .colleague, event: tile(Self.staticAddress(Self.mix(seed, 0x7113)))))
    case .cafe:
      fixed(8, 0xCAF)
      passing(3, minimum: 15)
      phones(6)
      strangers(5, length: length, minimum: 15, &rng, into: &cast)
      if s.day % 7 >= 5 {
        cast.append(Cast(role: .partner, event: smartTag(state: 5, salt: 0x9A7)))
      }
    case .train:
      // The train's own beacons, the passengers' fixed devices, their phones.
      passing(2, minimum: length)
      passing(12, minimum: 10)
      phones(20)
      strangers(30, length: length, minimum: 10, &rng, into: &cast)
      if case .train(let day, false) = s.spot, day % 7 == 1 || day % 7 == 3 {
        cast.append(Cast(from: 5, to: 35, role: .neighbour, event: airTag(salt: 0x0E1)))
      }
    }
    // The owner's smartwatch (a fixed address: it travels) and phone.
    let watch = Self.staticAddress(Self.mix(seed, 0x3A7C))
    cast.append(Cast(event: { _ in Self.environment(watch) }))
    phones(1)
    // The owner's tags, then the followers from their first day.
    let chipolo = ownChipolo
    cast.append(
      Cast(role: .ownChipolo, event: frame(TrackerAirFrame.chipolo(separated: true), chipolo)))
    cast.append(Cast(role: .ownSmartTag, event: smartTag(state: 3, salt: 0x0A7)))
    if s.day >= Self.firstDay(.airTag)! {
      cast.append(Cast(role: .airTag, event: airTag(salt: 0xA1A)))
    }
    if s.day >= Self.firstDay(.smartTag)! {
      cast.append(Cast(role: .smartTag, event: smartTag(state: 2, salt: 0x5A5)))
    }
    if s.day >= Self.firstDay(.findHub)! {
      cast.append(Cast(role: .findHub, event: findHub(salt: 0xF1D)))
    }
    if s.day >= Self.firstDay(.tile)! {
      cast.append(Cast(role: .tile, event: tile(Self.staticAddress(Self.mix(seed, 0x711E)))))
    }
    return cast
  }

  /// Strangers' tags for part of a stay: most near their owners, some separated.
  private func strangers(
    _ n: Int, length: Int, minimum: Int, _ rng: inout SplitMix, into cast: inout [Cast]
  ) {
    for _ in 0..<n {
      let (from, to) = Self.span(length, minimum: minimum, &rng)
      let salt = rng.next()
      let kind = rng.next() % 100
      let event: (MonotonicTime) -> Heard =
        switch kind {
        case 0..<70:
          { t in
            // Near its owner: the address rotates every 15 minutes.
            let a = Self.privateAddress(Self.mix(salt, t.nanos / 900_000_000_000))
            let data = TrackerAirFrame.findMyNearOwner(kind: UInt8(salt % 4))
            return Self.sighting(data, a, rssi: -75)
          }
        case 70..<80: airTag(salt: salt)
        case 80..<88: smartTag(state: 2 + UInt8(salt % 2), salt: salt)
        case 88..<94: tile(Self.staticAddress(salt))
        default: findHub(salt: salt)
        }
      cast.append(Cast(from: from, to: to, role: .stranger, event: event))
    }
  }

  private func frame(_ data: [UInt8], _ address: BDAddress) -> (MonotonicTime) -> Heard {
    let heard = Self.sighting(data, address, rssi: -70)
    return { _ in heard }
  }

  private func tile(_ address: BDAddress) -> (MonotonicTime) -> Heard {
    frame(TrackerAirFrame.tile, address)
  }

  /// A separated AirTag: key and address change daily at 04:00.
  private func airTag(salt: UInt64) -> (MonotonicTime) -> Heard {
    let seed = seed
    return { t in
      let key = Self.mix(seed ^ salt, Self.keyDay(t))
      let address = Self.staticAddress(key)
      let data = TrackerAirFrame.findMySeparated(kind: 1, key: key)
      return Self.sighting(data, address, rssi: -60)
    }
  }

  /// A Find Hub tag in 0x41 mode: the address daily, the EID every 1024 s.
  private func findHub(salt: UInt64) -> (MonotonicTime) -> Heard {
    let seed = seed
    return { t in
      let address = Self.privateAddress(Self.mix(seed ^ salt, Self.keyDay(t)))
      let data = TrackerAirFrame.findHub(
        separated: true, eid: Self.mix(salt, t.nanos / 1_024_000_000_000))
      return Self.sighting(data, address, rssi: -65)
    }
  }

  /// A SmartTag: a new id, address and counter every 15 minutes.
  private func smartTag(state: UInt8, salt: UInt64) -> (MonotonicTime) -> Heard {
    let seed = seed
    return { t in
      let step = t.nanos / 900_000_000_000
      let counter = UInt32(truncatingIfNeeded: Self.mix(seed, salt) % 0x80_0000 &+ step)
      let id = Self.mix(seed ^ salt, step)
      let address = Self.privateAddress(id)
      let data = TrackerAirFrame.smartTag(state: state, counter: counter, id: id)
      return Self.sighting(data, address, rssi: -62)
    }
  }

  /// A report the laptop hears: the event the watch gets and the
  /// advertising data it came from (for a capture of the fortnight).
  public struct Heard: Sendable {
    public let event: TrackerWatch.Event
    public let data: [UInt8]
  }

  static func sighting(_ data: [UInt8], _ address: BDAddress, rssi: Int8) -> Heard {
    Heard(
      event: .tracker(
        TrackerFrame.decode(advertisingData: data, address: address)!, address: address,
        rssi: rssi),
      data: data)
  }

  /// A device that is not a tracker: flags and a manufacturer's data.
  static func environment(_ address: BDAddress) -> Heard {
    Heard(
      event: .advertiser(address, random: true), data: [0x02, 0x01, 0x06, 0x03, 0xFF, 0x59, 0x00])
  }

  private static func keyDay(_ t: MonotonicTime) -> UInt64 {
    (t.nanos &+ 20 * 3_600_000_000_000) / 86_400_000_000_000
  }

  private static func span(_ length: Int, minimum: Int, _ rng: inout SplitMix) -> (Int, Int) {
    let stay = min(length, minimum + Int(rng.next() % UInt64(max(1, length - minimum + 1))))
    let from = Int(rng.next() % UInt64(max(1, length - stay + 1)))
    return (from, from + stay)
  }

  private func accessPoints(_ spot: Spot) -> Set<String>? {
    let count =
      switch spot {
      case .home: 3
      case .office: 6
      case .cafe: 1
      case .train: 0
      }
    guard count > 0 else { return nil }
    let salt: UInt64 = spot == .home ? 1 : spot == .office ? 2 : 3
    return Set((0..<count).map { "ap-\(salt)-\($0)" })
  }

  static func mix(_ a: UInt64, _ b: UInt64) -> UInt64 {
    var m = SplitMix(seed: a ^ (b &* 0x9E37_79B9_7F4A_7C15))
    return m.next()
  }

  static func staticAddress(_ v: UInt64) -> BDAddress { BDAddress(raw: v | 0xC000_0000_0000) }
  static func privateAddress(_ v: UInt64) -> BDAddress {
    BDAddress(raw: v & 0x3FFF_FFFF_FFFF | 0x4000_0000_0000)
  }
}
