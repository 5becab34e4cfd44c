#if canImport(Glibc)
  import Glibc
#endif

/// An advertiser of the simulated house: its pace, its loss, when it is
/// there, and when (being there) it is silent (a phone locked).
public struct SimulatedAdvertiser: Sendable {
  public enum Kind: String, Sendable { case beacon, phone }
  public var name: String
  public var kind: Kind
  public var minor: UInt16
  /// Seconds between advertising events (before the 0–10 ms advDelay);
  /// a phone's awake spans each pick theirs in `interval...slowest`.
  public var interval: Double
  public var slowest: Double
  /// Each advertising PDU is lost with this chance, on every channel.
  public var loss: Double
  /// Seconds from the start.
  public var present: [Range<Double>]
  public var silent: [Range<Double>]
}

/// A closed loop of the region monitor, the scan scheduler and a radio
/// that hears only during the scan windows: each advertising event goes
/// out on channels 37, 38 and 39 in turn (0.5 ms apart) after a random
/// advDelay of 0–10 ms; the controller listens on one channel per scan
/// interval, rotating, for the window at the interval's start; each PDU
/// is lost at the advertiser's rate. A change of settings costs
/// `switchSeconds` of deafness (scan disable, parameters, enable).
///
/// What it measures is what a user sees: exits and enters against the
/// truth, and the radio time taken.
public struct RadioSimulation: Sendable {
  public struct Latencies: Sendable, Equatable {
    public var exits: [Double] = []
    public var enters: [Double] = []
    public var falseExits = 0
  }

  public struct Result: Sendable {
    public var hours: Double
    /// Time-weighted fraction of time listening.
    public var meanDuty: Double
    /// Per advertiser kind and interval class ("100 ms", "1 s", "phone").
    public var byClass: [String: Latencies]
    public var falseExits: Int { byClass.values.reduce(0) { $0 + $1.falseExits } }
    public var settingChanges: Int
    /// The HCI commands the schedule sent, with their times (µs).
    public var commands: [(t: Int64, command: HCICommand)]
    public var nameRequests: Int
  }

  public var advertisers: [SimulatedAdvertiser]
  public var hours: Double
  public var seed: UInt64
  public var switchSeconds = 0.003
  /// Keep the commands sent (for `--write`): off by default, a day at
  /// full churn is a few thousand.
  public var keepCommands = false

  public init(advertisers: [SimulatedAdvertiser], hours: Double, seed: UInt64) {
    self.advertisers = advertisers
    self.hours = hours
    self.seed = seed
  }

  public static let uuid = BeaconUUID("5D1F6A7B-8C9D-4E0F-A1B2-C3D4E5F60718")!

  /// One region per advertiser, `exit_after = auto`, defaults otherwise:
  /// a beacon's by its iBeacon identity, a phone's by its identity address.
  public func config() -> Config {
    var c = Config()
    c.regions = advertisers.enumerated().map { i, a in
      var r = RegionConfig(name: a.name, line: 1)
      switch a.kind {
      case .beacon:
        r.uuid = Self.uuid
        r.major = 1
        r.minor = a.minor
      case .phone:
        r.devices = [Self.address(i)]
      }
      r.exitAfter = .auto
      return r
    }
    return c
  }

  static func address(_ i: Int) -> BDAddress { BDAddress(raw: 0x0C00_0000_0000 | UInt64(i)) }

  /// Whether the monitor asks phones by name before they are away (the
  /// page's answer comes after 50 ms–1.3 s, or after 5.12 s when nobody
  /// answers; a phone there answers 95 % of pages).
  public var nameRequests = true

  /// The class a figure is filed under.
  static func category(_ a: SimulatedAdvertiser) -> String {
    switch a.kind {
    case .phone: "phone"
    case .beacon: a.interval < 0.5 ? "100 ms" : "1 s"
    }
  }

  public func run(schedule: ScanScheduleSettings, power: PowerSupply) -> Result {
    var loop = Loop(sim: self, schedule: schedule, power: power)
    return loop.run()
  }

  struct Loop {
    let sim: RadioSimulation
    let power: PowerSupply
    var monitor: RegionMonitor
    var scheduler: ScanScheduler
    var rng: SplitMix
    var timing = ScanTiming.continuous
    /// When the present settings took effect (the scan's phase).
    var phase: Int64 = 0
    var deafUntil: Int64 = 0
    var pendingResume: Int64? = nil
    var dutyIntegral = 0.0
    var dutyFrom: Int64 = 0
    var changes = 0
    var commands: [(t: Int64, command: HCICommand)] = []
    var next: [Int64]
    /// Name requests awaiting their answer: (when, address, found).
    var answers: [(t: Int64, address: BDAddress, found: Bool)] = []
    public var nameRequestsSent = 0
    var awakeInterval: [Double]
    var byClass: [String: Latencies] = [:]
    let end: Int64

    init(sim: RadioSimulation, schedule: ScanScheduleSettings, power: PowerSupply) {
      self.sim = sim
      self.power = power
      monitor = RegionMonitor(config: sim.config(), emitRange: false)
      monitor.nameRequests = sim.nameRequests
      scheduler = ScanScheduler(settings: schedule)
      rng = SplitMix(seed: sim.seed)
      next = Array(repeating: 0, count: sim.advertisers.count)
      awakeInterval = sim.advertisers.map(\.interval)
      end = Int64(sim.hours * 3600e6)
    }

    static func micros(_ s: Double) -> Int64 { Int64((s * 1e6).rounded()) }

    mutating func run() -> Result {
      _ = monitor.start(at: 0, scanning: true)
      for i in sim.advertisers.indices { next[i] = firstEvent(i, after: 0) }
      decide(at: 0)
      while true {
        var t = end
        var who = -1
        for i in next.indices where next[i] < t {
          t = next[i]
          who = i
        }
        if let k = answers.indices.min(by: { answers[$0].t < answers[$1].t }), answers[k].t <= t {
          let a = answers.remove(at: k)
          take(monitor.nameAnswered(a.address, found: a.found, at: a.t), at: a.t)
          decide(at: a.t)
          continue
        }
        if let r = pendingResume, r <= t {
          account(to: r)
          pendingResume = nil
          take(monitor.scanResumed(at: r), at: r)
          continue
        }
        if let d = monitor.deadline(), d <= t {
          take(monitor.advance(to: d), at: d)
          decide(at: d)
          continue
        }
        if let r = scheduler.recheckAt, r <= t {
          decide(at: max(r, 0))
          if scheduler.recheckAt == r { break }  // cannot happen; guards the loop
          continue
        }
        guard who >= 0 else { break }
        event(who, at: t)
      }
      account(to: end)
      return Result(
        hours: sim.hours, meanDuty: dutyIntegral / Double(end), byClass: byClass,
        settingChanges: changes, commands: commands, nameRequests: nameRequestsSent)
    }

    /// Duty integrated up to `t` (deaf while settings change).
    mutating func account(to t: Int64) {
      guard t > dutyFrom else { return }
      let heard = max(dutyFrom, min(t, deafUntil))
      dutyIntegral += Double(t - heard) * timing.duty
      dutyFrom = t
    }

    mutating func decide(at now: Int64) {
      let m = monitor
      guard
        let new = scheduler.decide(
          at: now, power: power,
          need: { m.fullDutyNeeded(at: now, sampledDuty: $0, allowance: $1) })
      else { return }
      account(to: now)
      timing = new
      changes += 1
      deafUntil = now + Self.micros(sim.switchSeconds)
      phase = deafUntil
      if sim.keepCommands {
        commands.append((now, .leSetScanEnable(false)))
        commands.append((now, .leSetScanParameters(type: .passive, timing: new)))
        commands.append((deafUntil, .leSetScanEnable(true)))
      }
      take(monitor.scanPaused(at: now), at: now)
      take(monitor.scanDutyChanged(to: new.duty, at: now), at: now)
      pendingResume = deafUntil
    }

    func present(_ i: Int, at s: Double) -> Bool {
      sim.advertisers[i].present.contains { $0.contains(s) }
    }

    func silent(_ i: Int, at s: Double) -> Bool {
      sim.advertisers[i].silent.contains { $0.contains(s) }
    }

    /// The first event at or after `t` (µs) when the advertiser sends.
    mutating func firstEvent(_ i: Int, after t: Int64) -> Int64 {
      var s = Double(t) / 1e6
      let a = sim.advertisers[i]
      while s < sim.hours * 3600 {
        if let span = a.silent.first(where: { $0.contains(s) }) {
          s = span.upperBound
          pickPace(i)
          continue
        }
        if a.present.contains(where: { $0.contains(s) }) { return Self.micros(s) }
        guard let span = a.present.first(where: { $0.lowerBound > s }) else { break }
        s = span.lowerBound
      }
      return .max
    }

    mutating func pickPace(_ i: Int) {
      let a = sim.advertisers[i]
      awakeInterval[i] = a.interval + rng.unit() * (a.slowest - a.interval)
    }

    mutating func event(_ i: Int, at t: Int64) {
      let a = sim.advertisers[i]
      if heard(at: t, loss: a.loss) {
        account(to: t)
        switch a.kind {
        case .beacon:
          let id = BeaconID(uuid: RadioSimulation.uuid, major: 1, minor: a.minor)
          let address = BDAddress(raw: 0xC000_0000_0000 | UInt64(i))
          take(
            monitor.report(
              at: t, beacon: IBeacon(id: id, measuredPower: -59), address: address, rssi: -60),
            at: t)
        case .phone:
          take(
            monitor.report(
              at: t, address: RadioSimulation.address(i), type: .public, rssi: -60, txPower: nil),
            at: t)
        }
        // Every report may move the need (a region entered, a deadline
        // later): the shell asks again after each.
        decide(at: t)
      }
      let step = Self.micros(awakeInterval[i] + rng.unit() * 0.010)
      next[i] = firstEvent(i, after: t + step)
    }

    /// Whether the controller hears one of the event's three PDUs.
    mutating func heard(at t: Int64, loss: Double) -> Bool {
      guard t >= deafUntil else { return false }
      let interval = max(1, Int64(timing.interval) * 625)
      let window = Int64(timing.window) * 625
      for channel in 0..<3 {
        let pdu = t + Int64(channel) * 500
        let offset = pdu - phase
        let k = offset / interval
        guard Int(k % 3) == channel, offset - k * interval < window else { continue }
        return rng.unit() >= loss
      }
      return false
    }

    mutating func take(_ events: [MonitorEvent], at t: Int64) {
      for address in monitor.takeNameRequests() {
        nameRequestsSent += 1
        guard
          let i = sim.advertisers.indices.first(where: { RadioSimulation.address($0) == address })
        else { continue }
        let s = Double(t) / 1e6
        if present(i, at: s) && rng.unit() < 0.95 {
          answers.append((t + Self.micros(0.05 + rng.unit() * 1.25), address, true))
        } else {
          answers.append((t + Self.micros(5.12), address, false))
        }
      }
      for e in events where e.kind == .exit || e.kind == .enter {
        guard let i = sim.advertisers.firstIndex(where: { $0.name == e.region }) else { continue }
        let a = sim.advertisers[i]
        let s = Double(e.t) / 1e6
        let key = RadioSimulation.category(a)
        var l = byClass[key] ?? Latencies()
        if e.kind == .exit {
          if present(i, at: s) {
            l.falseExits += 1
          } else if let left = a.present.last(where: { $0.upperBound <= s })?.upperBound {
            l.exits.append(s - left)
          }
        } else if let span = a.present.first(where: { $0.contains(s) }) {
          l.enters.append(s - span.lowerBound)
        }
        byClass[key] = l
      }
    }
  }
}

extension RadioSimulation {
  /// The house of the scheduling issue: 4 iBeacons at 100 ms, 2 at 1 s,
  /// 2 phones (200 ms–1 s, 20–60 s silences while locked), 30 % loss;
  /// each comes and goes (there for 20 min–3 h, away for 10 min–1 h).
  public static func house(
    hours: Double, seed: UInt64, fastBeacons: Int = 4, slowBeacons: Int = 2, phones: Int = 2
  ) -> RadioSimulation {
    var rng = SplitMix(seed: seed ^ 0x5EED)
    var out: [SimulatedAdvertiser] = []
    let total = hours * 3600
    func comings() -> [Range<Double>] {
      var spans: [Range<Double>] = []
      // Some are there at the start, some arrive.
      var s = rng.unit() < 0.5 ? 0 : 60 + rng.unit() * 1800
      while s < total {
        let stay = 1200 + rng.unit() * 9600
        spans.append(s..<min(total, s + stay))
        s += stay + 600 + rng.unit() * 3000
      }
      return spans
    }
    func silences(in spans: [Range<Double>]) -> [Range<Double>] {
      var out: [Range<Double>] = []
      for span in spans {
        var s = span.lowerBound + 60 + rng.unit() * 240
        while s < span.upperBound - 120 {
          let quiet = 20 + rng.unit() * 40
          out.append(s..<(s + quiet))
          s += quiet + 60 + rng.unit() * 540
        }
      }
      return out
    }
    var minor: UInt16 = 1
    for k in 0..<fastBeacons {
      out.append(
        SimulatedAdvertiser(
          name: "fast\(k + 1)", kind: .beacon, minor: minor, interval: 0.1, slowest: 0.1,
          loss: 0.3, present: comings(), silent: []))
      minor += 1
    }
    for k in 0..<slowBeacons {
      out.append(
        SimulatedAdvertiser(
          name: "slow\(k + 1)", kind: .beacon, minor: minor, interval: 1, slowest: 1, loss: 0.3,
          present: comings(), silent: []))
      minor += 1
    }
    for k in 0..<phones {
      let spans = comings()
      out.append(
        SimulatedAdvertiser(
          name: "phone\(k + 1)", kind: .phone, minor: minor, interval: 0.2, slowest: 1,
          loss: 0.3, present: spans, silent: silences(in: spans)))
      minor += 1
    }
    return RadioSimulation(advertisers: out, hours: hours, seed: seed)
  }
}
