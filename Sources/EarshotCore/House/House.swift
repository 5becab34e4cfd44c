#if canImport(Glibc)
  import Glibc
#endif

/// A home for the rooms simulator: rooms as rectangles on one floor,
/// receivers (one Earshot agent each) at fixed positions, and beacons that
/// stand still or walk. Turned into what each receiver hears (log-distance
/// path loss, a fixed loss per wall crossed, log-normal shadowing with its
/// correlation time and fast fading on top, loss and
/// a per-receiver RSSI bias) and into the ground truth (each beacon's room
/// over time). Deterministic for a given seed. Used by
/// `earshot simulate house` and the rooms tests.
public struct House: Sendable {
  /// The capture's clock at the start: every receiver's capture begins here.
  public var start = WallTime(micros: 1_767_225_600_000_000)
  public var duration: Duration = .seconds(600)
  public var seed: UInt64 = 1
  public var exponent = 2.0
  /// dB lost per wall between beacon and receiver.
  public var wallLoss = 5.0
  /// Standard deviation of the shadowing, dB.
  public var shadowing = 0.0
  /// Correlation time of the shadowing, seconds (0: independent for every
  /// advertisement).
  public var shadowingTime = 0.0
  /// Standard deviation of fast fading, dB: drawn afresh for every
  /// advertisement at every receiver (multipath), on top of the shadowing,
  /// so a link can fade slowly (shadowing over `shadowingTime`) and flicker
  /// from one advertisement to the next at once.
  public var fading = 0.0
  /// Advertisements weaker than this (dBm) are not heard.
  public var sensitivity = -100.0
  public var rooms: [HouseRoom] = []
  public var receivers: [HouseReceiver] = []
  public var beacons: [HouseBeacon] = []

  public init() {}

  /// The capture time `seconds` after the start, to the nearest microsecond.
  public func time(_ seconds: Double) -> WallTime {
    WallTime(micros: start.micros + Int64((seconds * 1e6).rounded()))
  }

  /// The room whose rectangle holds `p` (the first one in spec order on a
  /// shared edge), or nil outside every room.
  public func room(at p: FloorPoint) -> String? {
    rooms.first { $0.contains(p) }?.name
  }

  /// Walls the straight line from `a` to `b` crosses: every crossing of a
  /// room's edge, a wall shared by two rooms counted once.
  public func walls(from a: FloorPoint, to b: FloorPoint) -> Int {
    var crossings: [Double] = []
    for r in rooms {
      for x in [r.min.x, r.max.x] {
        if let s = House.crossing(a.x, b.x, at: x) {
          let y = a.y + s * (b.y - a.y)
          if y >= r.min.y - 1e-9 && y <= r.max.y + 1e-9 { crossings.append(s) }
        }
      }
      for y in [r.min.y, r.max.y] {
        if let s = House.crossing(a.y, b.y, at: y) {
          let x = a.x + s * (b.x - a.x)
          if x >= r.min.x - 1e-9 && x <= r.max.x + 1e-9 { crossings.append(s) }
        }
      }
    }
    crossings.sort()
    var count = 0
    var last = -1.0
    for s in crossings where s - last > 1e-9 {
      count += 1
      last = s
    }
    return count
  }

  /// Where along u0 → u1 (0...1) the coordinate passes `wall`, when it
  /// goes strictly from one side to the other.
  static func crossing(_ u0: Double, _ u1: Double, at wall: Double) -> Double? {
    guard (u0 - wall) * (u1 - wall) < 0 else { return nil }
    return (wall - u0) / (u1 - u0)
  }

  /// The RSSI receiver `r` reads on average for beacon `b` at `p` (before
  /// shadowing): path loss from the beacon's power at 1 m, the walls in
  /// between and the receiver's bias.
  public func meanRSSI(beaconPower: Double, at p: FloorPoint, receiver r: HouseReceiver) -> Double {
    let d = max(0.1, p.distance(to: r.position))
    return beaconPower - 10 * exponent * log10(d) - wallLoss
      * Double(walls(from: p, to: r.position))
      + r.bias
  }

  /// One advertisement as one receiver heard it.
  public struct Report: Sendable, Equatable {
    public var t: WallTime
    public var receiver: Int
    public var beacon: Int
    public var rssi: Int8
  }

  /// Every report of every receiver, in time order (ties: beacon, then
  /// receiver order), handed to `emit` as it is made: memory stays bounded
  /// by the number of beacons and receivers whatever the duration.
  public func reports(_ emit: (Report) -> Void) {
    // Each (beacon, receiver) pair draws from its own generator, so adding a
    // receiver or a beacon leaves the others' reports as they were.
    var timing = beacons.indices.map { SplitMix(seed: mix(seed, UInt64($0), 0xAD)) }
    var links = beacons.indices.map { b in
      receivers.indices.map { r in
        Link(rng: SplitMix(seed: mix(seed, UInt64(b), UInt64(r) + 1)))
      }
    }
    let duration = self.duration.inSeconds
    var next = beacons.map(\.phase)
    var slice: [(t: Double, beacon: Int)] = []
    var sliceEnd = 0.0
    while sliceEnd < duration {
      sliceEnd = min(duration, sliceEnd + 1)
      slice.removeAll(keepingCapacity: true)
      for (i, b) in beacons.enumerated() {
        while next[i] < sliceEnd {
          // Advertising events carry a 0-10 ms random delay (Core spec advDelay).
          let t = next[i] + Double(timing[i].next() % 10_000) / 1e6
          next[i] += b.interval
          if t < duration { slice.append((t, i)) }
        }
      }
      slice.sort { ($0.t, $0.beacon) < ($1.t, $1.beacon) }
      for (t, i) in slice {
        let b = beacons[i]
        let present = b.isPresent(at: t)
        let p = b.position(at: t)
        for (j, r) in receivers.enumerated() {
          // The shadowing evolves whether or not this advertisement is heard.
          var fade = links[i][j].shadow(at: t, sigma: shadowing, correlation: shadowingTime)
          // Drawn only when asked for: houses without it keep their bytes.
          if fading > 0 { fade += fading * links[i][j].rng.gaussian() }
          let lost = links[i][j].rng.unit() < r.loss
          guard present, !lost else { continue }
          let rssi = meanRSSI(beaconPower: Double(b.power), at: p, receiver: r) + fade
          guard rssi >= sensitivity else { continue }
          emit(
            Report(
              t: time(t), receiver: j, beacon: i, rssi: Int8(max(-127, min(20, rssi.rounded())))))
        }
      }
    }
  }

  /// One beacon-receiver pair's random state.
  struct Link {
    var rng: SplitMix
    var fade: Double? = nil
    var last = 0.0

    /// Log-normal shadowing in dB: a first-order autoregressive process with
    /// standard deviation `sigma` and correlation time `correlation`.
    mutating func shadow(at t: Double, sigma: Double, correlation: Double) -> Double {
      let g = sigma * rng.gaussian()
      defer { last = t }
      guard let previous = fade, correlation > 0 else {
        fade = g
        return g
      }
      let rho = exp(-(t - last) / correlation)
      let now = rho * previous + (1 - rho * rho).squareRoot() * g
      fade = now
      return now
    }
  }

  /// A change in a beacon's true room.
  public struct RoomChange: Sendable, Equatable {
    /// Seconds from the start.
    public var t: Double
    public var beacon: Int
    /// nil: not present, or outside every room.
    public var room: String?
  }

  /// The ground truth: each beacon's room at the start and every change
  /// after, in time order (ties in beacon order), to 1 ms.
  public func truth() -> [RoomChange] {
    var out: [RoomChange] = []
    let duration = self.duration.inSeconds
    for (i, b) in beacons.enumerated() {
      func roomAt(_ t: Double) -> String? { b.isPresent(at: t) ? room(at: b.position(at: t)) : nil }
      var current = roomAt(0)
      out.append(RoomChange(t: 0, beacon: i, room: current))
      // Step through time, stopping exactly at presence edges; a change
      // between two steps is narrowed down by bisection.
      var stops = Set(b.present.flatMap { [$0.lowerBound, $0.upperBound] })
      stops.formUnion(b.path.map(\.t))
      let edges = stops.filter { $0 > 0 && $0 < duration }.sorted()
      var t = 0.0
      var e = 0
      let still = b.path.last?.t ?? 0
      while t < duration {
        // Past its last waypoint a beacon only changes room at presence edges.
        var u = t >= still ? (e < edges.count ? edges[e] : duration) : min(duration, t + 0.1)
        if e < edges.count, edges[e] <= u {
          u = edges[e]
          e += 1
        }
        let there = roomAt(u)
        if there != current && u < duration {
          var lo = t
          var hi = u
          while hi - lo > 0.0005 {
            let mid = (lo + hi) / 2
            if roomAt(mid) == current { lo = mid } else { hi = mid }
          }
          // Land on a whole millisecond that is already in the new room.
          var at = (hi * 1000).rounded(.up) / 1000
          if roomAt(at) != there { at = hi }
          out.append(RoomChange(t: at, beacon: i, room: there))
          current = there
        }
        t = u
      }
    }
    return out.enumerated().sorted { ($0.element.t, $0.offset) < ($1.element.t, $1.offset) }
      .map(\.element)
  }

  /// The true room of `beacon` at `t` seconds from the start, from `truth()`.
  public static func room(in truth: [RoomChange], beacon: Int, at t: Double) -> String? {
    truth.last { $0.beacon == beacon && $0.t <= t }?.room
  }
}

/// A point on the floor plan, in metres.
public struct FloorPoint: Sendable, Equatable {
  public var x: Double
  public var y: Double
  public init(_ x: Double, _ y: Double) {
    self.x = x
    self.y = y
  }
  public func distance(to p: FloorPoint) -> Double {
    ((x - p.x) * (x - p.x) + (y - p.y) * (y - p.y)).squareRoot()
  }
}

public struct HouseRoom: Sendable, Equatable {
  public var name: String
  public var min: FloorPoint
  public var max: FloorPoint
  public init(name: String, min: FloorPoint, max: FloorPoint) {
    self.name = name
    self.min = min
    self.max = max
  }
  public func contains(_ p: FloorPoint) -> Bool {
    p.x >= min.x && p.x <= max.x && p.y >= min.y && p.y <= max.y
  }
  /// Whether the two rectangles share some area (an edge alone is fine).
  public func overlaps(_ o: HouseRoom) -> Bool {
    min.x < o.max.x && o.min.x < max.x && min.y < o.max.y && o.min.y < max.y
  }
}

/// One agent's radio.
public struct HouseReceiver: Sendable {
  public var name: String
  public var position: FloorPoint
  /// dB this receiver reads above the truth (the config's `rssi_offset`
  /// that corrects it is minus this).
  public var bias = 0.0
  /// Fraction of advertisements it misses.
  public var loss = 0.0
  public init(name: String, position: FloorPoint) {
    self.name = name
    self.position = position
  }
}

public struct HouseBeacon: Sendable {
  public var name: String
  public var id: TrackedID
  /// Measured power it advertises, and its real RSSI at 1 m.
  public var power: Int8 = -59
  public var interval = 1.0
  /// First advertising event, seconds from the start.
  public var phase = 0.0
  /// Presence intervals, seconds from the start; empty = always present.
  public var present: [Range<Double>] = []
  /// Waypoints (seconds, position), straight lines in between; constant
  /// before the first and after the last.
  public var path: [(t: Double, at: FloorPoint)] = []
  public var address: BDAddress

  public init(name: String, id: TrackedID, at position: FloorPoint) {
    self.name = name
    self.id = id
    path = [(0, position)]
    address = BDAddress(raw: 0xC000_0000_0000 | UInt64(id.major) << 16 | UInt64(id.minor))
  }

  public func isPresent(at t: Double) -> Bool {
    present.isEmpty || present.contains { $0.contains(t) }
  }

  public func position(at t: Double) -> FloorPoint {
    guard let first = path.first else { return FloorPoint(0, 0) }
    if t <= first.t { return first.at }
    for (a, b) in zip(path, path.dropFirst()) where t <= b.t {
      let f = b.t > a.t ? (t - a.t) / (b.t - a.t) : 1
      return FloorPoint(a.at.x + (b.at.x - a.at.x) * f, a.at.y + (b.at.y - a.at.y) * f)
    }
    return path.last!.at
  }
}

/// A seed for one stream from the house's seed and two indices.
private func mix(_ seed: UInt64, _ a: UInt64, _ b: UInt64) -> UInt64 {
  var m = SplitMix(seed: seed ^ (a &* 0x9E37_79B9_7F4A_7C15) ^ (b &* 0xC2B2_AE3D_27D4_EB4F))
  return m.next()
}
