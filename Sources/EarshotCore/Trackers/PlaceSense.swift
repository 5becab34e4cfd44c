/// A place as a laptop without GPS knows it: a number given to each
/// environment `PlaceSense` tells apart. Home in the morning and home in the
/// evening are one place when their environments agree.
public struct PlaceID: Hashable, Comparable, Sendable, CustomStringConvertible {
  public let number: Int

  public init(_ number: Int) { self.number = number }

  public static func < (a: PlaceID, b: PlaceID) -> Bool { a.number < b.number }

  public var description: String { "place \(number)" }
}

/// One stationary thing a place is recognised by.
public enum PlaceMark: Hashable, Sendable {
  /// An advertiser that is not a tracker, with a fixed address (public or
  /// random static), heard across two scan epochs.
  case advertiser(BDAddress)
  /// A Wi-Fi access point (its BSSID as text), from a scan of the laptop's.
  case accessPoint(String)
}

/// What the laptop itself says about moving: each one ends the current
/// place (it is unknown until the new environment is recognised).
public enum LaptopMove: String, Hashable, Sendable, CaseIterable {
  case resumed
  case networkChanged = "network_changed"
  case unplugged
}

/// Recognises places from what the laptop hears, in time epochs.
///
/// Guarantees:
/// - A place is decided only at the end of an epoch (or at a Wi-Fi scan)
///   from its *stationary* marks: advertisers heard in this epoch and the one
///   before, and the latest access points. Fewer than `minimumMarks`: the
///   place is unknown (`current` is nil), never a guess.
/// - A move (`LaptopMove`) makes the place unknown at once and forgets the
///   epoch before it and the access points, so nothing heard before the move
///   is credited to the place after it.
/// - An environment that keeps enough of its marks stays the same place
///   while its people come and go (a train: `continuity`); one that shares at
///   least `sameEnvironment` of the smaller set's marks with a place seen
///   before is that place; anything else is a new place.
/// - Marks heard in two different places travel with the laptop (its
///   owner's own devices): they are dropped from every place's marks.
/// - Memory is bounded: at most `maximumPlaces` places (the least recently
///   used forgotten), `maximumMarksPerEpoch` marks an epoch and
///   `maximumCompanions` travelling marks.
public struct PlaceSense: Sendable {
  public struct Settings: Sendable, Equatable {
    public var epoch: Duration = .seconds(300)
    public var minimumMarks = 3
    public var sameEnvironment = 0.5
    public var continuity = 0.3
    public var maximumPlaces = 64
    public var maximumMarksPerEpoch = 512
    public var maximumCompanions = 256

    public init() {}
  }

  struct Known: Sendable {
    var marks: Set<PlaceMark>
    var lastUsed: MonotonicTime
  }

  public let settings: Settings
  public private(set) var current: PlaceID?
  private var epochStart: MonotonicTime?
  private var heard: Set<PlaceMark> = []
  /// The epoch before this one; nil right after a move or at the start.
  private var previous: Set<PlaceMark>?
  private var accessPoints: Set<PlaceMark> = []
  /// The advertisers of the last two epochs (a Wi-Fi scan between epochs
  /// is decided with them).
  private var stationary: Set<PlaceMark> = []
  private var places: [PlaceID: Known] = [:]
  private var companions: [PlaceMark: MonotonicTime] = [:]
  private var nextNumber = 1
  /// The place decided last, kept across unknown spells (companions).
  private var lastPlace: PlaceID?

  public init(settings: Settings = Settings()) { self.settings = settings }

  /// The places remembered now (bounded by `maximumPlaces`).
  public var placeCount: Int { places.count }
  public var companionCount: Int { companions.count }

  /// When the current epoch ends (the shell arms a timer for it).
  public var nextDeadline: MonotonicTime? { epochStart.map { $0 + settings.epoch } }

  /// A non-tracker advertiser heard at `now`. A random address counts
  /// only if it is static (top two bits 11): private ones rotate (phones,
  /// every 15 minutes or so) and say nothing about the place.
  public mutating func heard(_ address: BDAddress, random: Bool, at now: MonotonicTime) {
    advance(to: now)
    guard !random || address.raw >> 46 == 0b11 else { return }
    let mark = PlaceMark.advertiser(address)
    guard heard.count < settings.maximumMarksPerEpoch, companions[mark] == nil else { return }
    heard.insert(mark)
  }

  /// The access points of a Wi-Fi scan at `now`: stationary by nature, so
  /// the place is decided at once.
  public mutating func accessPoints(_ bssids: Set<String>, at now: MonotonicTime) {
    advance(to: now)
    accessPoints = Set(bssids.prefix(settings.maximumMarksPerEpoch).map(PlaceMark.accessPoint))
    decide(at: now)
  }

  /// The laptop moved: the place is unknown until recognised again.
  public mutating func moved(_ move: LaptopMove, at now: MonotonicTime) {
    advance(to: now)
    current = nil
    previous = nil
    heard = []
    accessPoints = []
    stationary = []
    epochStart = now
  }

  /// Closes every epoch that ended by `now`.
  public mutating func advance(to now: MonotonicTime) {
    guard var start = epochStart else {
      epochStart = now
      return
    }
    guard now >= start + settings.epoch else { return }
    start = start + settings.epoch
    closeEpoch(at: start)
    if now >= start + settings.epoch {
      // Silence for a whole epoch or more: nothing is stationary.
      let skipped = start.nanos(until: now) / UInt64(settings.epoch / .nanoseconds(1))
      start = start + settings.epoch * Int(skipped)
      closeEpoch(at: start)
    }
    epochStart = start
  }

  private mutating func closeEpoch(at end: MonotonicTime) {
    let before = previous
    previous = heard
    heard = []
    guard before != nil else {
      if !accessPoints.isEmpty { decide(at: end) }
      return
    }
    decide(at: end, stationary: before!.intersection(previous!))
  }

  private mutating func decide(at now: MonotonicTime, stationary: Set<PlaceMark>? = nil) {
    if let stationary { self.stationary = stationary }
    let marks = self.stationary.subtracting(companions.keys).union(accessPoints)
    guard marks.count >= settings.minimumMarks else {
      current = nil
      return
    }
    if let here = current, var known = places[here],
      Double(marks.intersection(known.marks).count) >= settings.continuity * Double(marks.count)
    {
      known.marks = marks
      known.lastUsed = now
      places[here] = known
      lastPlace = here
      return
    }
    var best: (PlaceID, Double)? = nil
    for (id, known) in places {
      // Shared over the smaller set: a first look (the access points
      // alone, or a short stay) is part of the place's full set.
      let shared = Double(marks.intersection(known.marks).count)
      let score = shared / Double(max(1, min(marks.count, known.marks.count)))
      if score >= settings.sameEnvironment, score > best?.1 ?? 0 { best = (id, score) }
    }
    let id = best?.0 ?? PlaceID(nextNumber)
    if best == nil { nextNumber += 1 }
    var marksHere = marks
    if let left = lastPlace, left != id, let leftMarks = places[left]?.marks {
      // Heard here and where the laptop was last: its owner's, travelling.
      let travelling = marks.intersection(leftMarks)
      for mark in travelling { companions[mark] = now }
      marksHere.subtract(travelling)
      places[left]?.marks.subtract(travelling)
      while companions.count > settings.maximumCompanions,
        let oldest = companions.min(by: { $0.value < $1.value })?.key
      {
        companions[oldest] = nil
      }
    }
    places[id] = Known(marks: marksHere, lastUsed: now)
    current = id
    lastPlace = id
    if places.count > settings.maximumPlaces,
      let oldest = places.filter({ $0.key != id }).min(by: { $0.value.lastUsed < $1.value.lastUsed }
      )?.key
    {
      places[oldest] = nil
      if lastPlace == oldest { lastPlace = nil }
    }
  }
}
