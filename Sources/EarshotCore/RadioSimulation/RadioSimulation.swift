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

  /// A beacon's iBeacon frame: the house's UUID, major 1, its minor.
  var frame: TrackedBeacon {
    TrackedBeacon(
      id: TrackedID(uuid: RadioSimulation.uuid, major: 1, minor: minor), measuredPower: -59)
  }
}

/// A closed loop of the region monitor, the scan scheduler and a radio
/// that hears only during the scan windows: each advertising event goes
/// out on channels 37, 38 and 39 in turn (0.5 ms apart) after a random
/// advDelay of 0–10 ms; the controller listens on one channel per scan
/// interval, rotating from 37 at each scan enable, for the window at the
/// interval's start; each PDU is lost at the advertiser's rate. A change of
/// settings costs `switchSeconds` of deafness (scan disable, parameters,
/// enable).
///
/// The air does not depend on the schedule: advertisers' paces, advDelays
/// and every PDU's loss come from their own random stream, drawn whether
/// anyone listens or not, so the same seed sends the same PDUs under any
/// policy, and a capture of the air filtered by the written schedule gives
/// exactly the PDUs heard (`RadioRecord`; RadioCaptureCheckTests does it).
/// A decision caused by a report takes effect 1 µs after it, as the host
/// answers after the controller reported.
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
    public var nameRequests: Int
  }

  public var advertisers: [SimulatedAdvertiser]
  public var hours: Double
  public var seed: UInt64
  public var switchSeconds = 0.003

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

  /// A phone's public identity address; a beacon's static random one.
  static func address(_ i: Int) -> BDAddress { BDAddress(raw: 0x0C00_0000_0000 | UInt64(i)) }
  static func beaconAddress(_ i: Int) -> BDAddress { BDAddress(raw: 0xC000_0000_0000 | UInt64(i)) }

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

  /// Runs the loop; `record`, if given, gets the air, the commands and
  /// the PDUs heard as they happen (in time order).
  public func run(
    schedule: ScanScheduleSettings, power: PowerSupply, record: ((RadioRecord) -> Void)? = nil
  ) -> Result {
    var loop = Loop(sim: self, schedule: schedule, power: power)
    loop.record = record
    return loop.run()
  }

  struct Loop {
    let sim: RadioSimulation
    let power: PowerSupply
    var monitor: RegionMonitor
    var radio: SimulatedRadio
    /// The advertisers' paces, advDelays and losses: the air alone.
    var air: SplitMix
    /// Whether pages are answered and when.
    var pages: SplitMix
    var record: ((RadioRecord) -> Void)? = nil
    var dutyIntegral = 0.0
    var dutyFrom: Int64 = 0
    /// Each advertiser's next PDU: when, and on which channel (0, 1, 2 for
    /// 37, 38, 39).
    var next: [Int64]
    var channel: [Int]
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
      radio = SimulatedRadio(
        settings: schedule, power: power, switchMicros: Self.micros(sim.switchSeconds))
      air = SplitMix(seed: sim.seed)
      pages = SplitMix(seed: sim.seed ^ 0x9A6E)
      next = Array(repeating: 0, count: sim.advertisers.count)
      channel = Array(repeating: 0, count: sim.advertisers.count)
      awakeInterval = sim.advertisers.map(\.interval)
      end = Int64(sim.hours * 3600e6)
    }

    static func micros(_ s: Double) -> Int64 { Int64((s * 1e6).rounded()) }
    /// PDUs of one advertising event follow each other by this (µs).
    static let channelStep: Int64 = 500

    /// Everything happens in time order; at equal times a name answer,
    /// then a monitor deadline, then the radio's due item, then a PDU (a
    /// command at `t` governs the PDUs at `t`).
    mutating func run() -> Result {
      _ = monitor.start(at: DecisionTime(micros: 0), scanning: true)
      for i in sim.advertisers.indices { next[i] = firstEvent(i, after: 0) }
      // The scan starts continuous, as the agent's does.
      apply(radio.start(at: DecisionTime(micros: 0), need: need))
      while true {
        var t = end
        var who = -1
        for i in next.indices where next[i] < t {
          t = next[i]
          who = i
        }
        let answer = answers.indices.min { answers[$0].t < answers[$1].t }
        let deadline = monitor.deadline()?.micros
        let due = radio.nextDue?.micros
        let first = [answer.map { answers[$0].t }, deadline, due, who >= 0 ? t : nil]
          .compactMap { $0 }.min()
        guard let first, first < end else { break }
        if let k = answer, answers[k].t == first {
          let a = answers.remove(at: k)
          take(
            monitor.nameAnswered(a.address, found: a.found, at: DecisionTime(micros: a.t)), at: a.t)
          decide(at: a.t)
        } else if deadline == first {
          take(monitor.advance(to: DecisionTime(micros: first)), at: first)
          decide(at: first)
        } else if due == first {
          account(to: first)
          apply(radio.due(at: DecisionTime(micros: first), need: need))
        } else {
          pdu(who, at: first)
        }
      }
      account(to: end)
      return Result(
        hours: sim.hours, meanDuty: dutyIntegral / Double(end), byClass: byClass,
        settingChanges: radio.changes, nameRequests: nameRequestsSent)
    }

    /// Duty integrated up to `t` (deaf while settings change).
    mutating func account(to t: Int64) {
      guard t > dutyFrom else { return }
      let heard = max(dutyFrom, min(t, radio.scanner.deafUntil.micros))
      dutyIntegral += Double(t - heard) * radio.scanner.timing.duty
      dutyFrom = t
    }

    var need: SimulatedRadio.Need {
      let m = monitor
      return {
        m.fullDutyNeeded(at: $0, sampledDuty: $1, allowance: $2)
      }
    }

    mutating func decide(at now: Int64) {
      account(to: now)
      apply(radio.decide(at: DecisionTime(micros: now), need: need))
    }

    /// Tells the monitor what the radio did, and records its commands.
    mutating func apply(_ steps: [SimulatedRadio.Step]) {
      for c in radio.takeCommands() { record?(.command(t: c.t, c.command)) }
      for step in steps {
        switch step {
        case .changed(let t, let duty):
          take(monitor.scanPaused(at: t), at: t.micros)
          take(monitor.scanDutyChanged(to: duty, at: t), at: t.micros)
        case .resumed(let t):
          take(monitor.scanResumed(at: t), at: t.micros)
        }
      }
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
      awakeInterval[i] = a.interval + air.unit() * (a.slowest - a.interval)
    }

    /// One PDU of advertiser `i` at `t`: on the air unless lost, heard if
    /// the controller listens on its channel then.
    mutating func pdu(_ i: Int, at t: Int64) {
      let a = sim.advertisers[i]
      let c = channel[i]
      if air.unit() >= a.loss {
        record?(.air(t: DecisionTime(micros: t), channel: UInt8(37 + c), advertiser: i))
        if radio.hears(at: DecisionTime(micros: t), channel: UInt8(37 + c)) {
          record?(.heard(t: DecisionTime(micros: t), channel: UInt8(37 + c), advertiser: i))
          account(to: t)
          switch a.kind {
          case .beacon:
            take(
              monitor.report(
                at: DecisionTime(micros: t), beacon: a.frame,
                address: RadioSimulation.beaconAddress(i), rssi: -60),
              at: t)
          case .phone:
            take(
              monitor.report(
                at: DecisionTime(micros: t), address: RadioSimulation.address(i), type: .public,
                rssi: -60,
                txPower: nil),
              at: t)
          }
          // Every report may move the need (a region entered, a deadline
          // later): the host asks again once the report is in.
          radio.reported(at: DecisionTime(micros: t))
        }
      }
      if c < 2 {
        channel[i] = c + 1
        next[i] = t + Self.channelStep
        return
      }
      channel[i] = 0
      let start = t - 2 * Self.channelStep
      let step = Self.micros(awakeInterval[i] + air.unit() * 0.010)
      next[i] = firstEvent(i, after: start + step)
    }

    mutating func take(_ events: [MonitorEvent], at t: Int64) {
      for address in monitor.takeNameRequests() {
        nameRequestsSent += 1
        guard
          let i = sim.advertisers.indices.first(where: { RadioSimulation.address($0) == address })
        else { continue }
        let s = Double(t) / 1e6
        if present(i, at: s) && pages.unit() < 0.95 {
          answers.append((t + Self.micros(0.05 + pages.unit() * 1.25), address, true))
        } else {
          answers.append((t + Self.micros(5.12), address, false))
        }
      }
      for e in events where e.kind == .exit || e.kind == .enter {
        guard let i = sim.advertisers.firstIndex(where: { $0.name == e.region }) else { continue }
        let a = sim.advertisers[i]
        let s = e.decided.seconds
        let key = RadioSimulation.category(a)
        var l = byClass[key] ?? Latencies()
        if e.kind == .exit {
          if present(i, at: s) {
            l.falseExits += 1
          } else if let left = a.present.last(where: { $0.upperBound <= s })?.upperBound {
            l.exits.append(s - left)
          }
        } else if let span = a.present.first(where: { $0.contains(s + 1e-6) }) {
          // Times are whole µs: an enter on an advertiser's first PDU may
          // round to just before its coming.
          l.enters.append(max(0, s - span.lowerBound))
        }
        byClass[key] = l
      }
    }
  }
}

/// What the closed loop did, as it happened, for a capture of it
/// (`RadioCapture`). Times are the simulation's decision times (from 0 at
/// its start); channels are the advertising channels' numbers, 37–39.
public enum RadioRecord: Sendable {
  /// A PDU that reached the air unlost: a sniffer on its channel hears it.
  case air(t: DecisionTime, channel: UInt8, advertiser: Int)
  /// A command the schedule sent.
  case command(t: DecisionTime, HCICommand)
  /// A PDU the scanning controller heard (and reported).
  case heard(t: DecisionTime, channel: UInt8, advertiser: Int)
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
