/// The scan scheduler driving a `SimulatedScanner`, as the agent's shell
/// drives the real one: the closed loop (`RadioSimulation`) and replays
/// through a simulated radio (`ReplayRadio`) both run on it, so they
/// listen alike.
///
/// The caller runs everything in time order: `nextDue` (the end of a
/// change's deafness, the decision after a report, the scheduler's
/// recheck) interleaved with the monitor's deadlines and the PDUs, a due
/// item before a PDU at the same time, and asks `decide` after each
/// monitor deadline or name answer. Each call returns the `Step`s the
/// monitor must be told; the commands sent wait in `takeCommands()`.
public struct SimulatedRadio: Sendable {
  /// What the monitor must be told.
  public enum Step: Equatable, Sendable {
    /// The settings changed at `at` (the scan paused), to this duty.
    case changed(at: DecisionTime, duty: Double)
    /// The scan listens again.
    case resumed(at: DecisionTime)
  }
  /// The monitor's need: when it needs full duty, asked at `now`.
  public typealias Need = (_ now: DecisionTime, _ duty: Double, _ allowance: ExitAllowance) ->
    DecisionTime?

  public let power: PowerSupply
  private var scheduler: ScanScheduler
  public private(set) var scanner: SimulatedScanner
  private var pendingResume: DecisionTime?
  private var pendingDecision: DecisionTime?
  /// A recheck already made (the scheduler may leave it in place).
  private var checkedAt = DecisionTime(micros: .min)
  public private(set) var started = false
  public private(set) var changes = 0
  private var outbox: [(t: DecisionTime, command: HCICommand)] = []

  public init(settings: ScanScheduleSettings, power: PowerSupply, switchMicros: Int64 = 3000) {
    scheduler = ScanScheduler(settings: settings)
    scanner = SimulatedScanner(switchMicros: switchMicros)
    self.power = power
  }

  /// Starts the scan at `t`, continuous, and asks the scheduler.
  public mutating func start(at t: DecisionTime, need: Need) -> [Step] {
    started = true
    for c in scanner.start(at: t) { outbox.append((t, c)) }
    return decide(at: t, need: need)
  }

  /// When something of the radio's falls due next.
  public var nextDue: DecisionTime? {
    let recheck = scheduler.recheckAt.map { max($0, DecisionTime(micros: 0)) }
      .flatMap { $0 > checkedAt ? $0 : nil }
    return [pendingResume, pendingDecision, recheck].compactMap { $0 }.min()
  }

  /// What falls due at `t` (`nextDue`).
  public mutating func due(at t: DecisionTime, need: Need) -> [Step] {
    if pendingResume == t {
      pendingResume = nil
      outbox.append((t, scanner.enable()))
      return [.resumed(at: t)]
    }
    if pendingDecision == t {
      pendingDecision = nil
      return decide(at: t, need: need)
    }
    checkedAt = t
    return decide(at: t, need: need)
  }

  /// A PDU heard at `t` was reported: the host asks again once the
  /// report is in (1 µs later).
  public mutating func reported(at t: DecisionTime) {
    let next = DecisionTime(micros: t.micros + 1)
    pendingDecision = min(pendingDecision ?? next, next)
  }

  /// Asks the scheduler at `now`.
  public mutating func decide(at now: DecisionTime, need: Need) -> [Step] {
    guard let new = scheduler.decide(at: now, power: power, need: { need(now, $0, $1) })
    else { return [] }
    changes += 1
    for c in scanner.change(to: new, at: now) { outbox.append((now, c)) }
    pendingResume = scanner.deafUntil
    return [.changed(at: now, duty: new.duty)]
  }

  public func hears(at t: DecisionTime, channel: UInt8?) -> Bool {
    scanner.hears(at: t, channel: channel)
  }

  /// The commands sent since the last call, with their times.
  public mutating func takeCommands() -> [(t: DecisionTime, command: HCICommand)] {
    defer { outbox = [] }
    return outbox
  }
}
