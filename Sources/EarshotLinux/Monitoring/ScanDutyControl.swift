import EarshotCore

/// The agent's scan scheduling: asks the region monitor when it needs full
/// duty, reads the power source, and gives the scanner the timing the pure
/// `ScanScheduler` picks; tells the monitor the duty reports come with.
///
/// Asked again after reports (at most every `askEveryMicros`: a report
/// only ever moves the need later, or to now for a beacon not yet learnt,
/// which the scheduler's lead covers), after every monitor event and
/// adapter change, and at the scheduler's recheck time.
final class ScanDutyControl {
  let policy: ScanPolicy
  private var scheduler: ScanScheduler
  private let power: PowerSupplyReader
  private let recheck: MovingDeadline<MonotonicTime>
  private unowned let driver: MonitorDriver
  private weak var scanner: LiveScanner?
  private var lastAsked: Int64 = .min
  private(set) var meter = DutyMeter()
  /// The timing reports come with now (nil: none flow).
  private(set) var listening: ScanTiming?
  static let askEveryMicros: Int64 = 100_000

  init(
    loop: EventLoop, settings: ScanScheduleSettings, driver: MonitorDriver,
    power: PowerSupplyReader
  ) {
    policy = settings.policy
    scheduler = ScanScheduler(settings: settings)
    self.power = power
    self.driver = driver
    recheck = MovingDeadline(monotonicOn: loop)
    recheck.onFire = { [unowned self] _ in self.ask(force: true) }
  }

  func attach(_ scanner: LiveScanner) {
    self.scanner = scanner
  }

  /// The scan listens with `timing` from now (`nil`: not at all).
  func listening(_ timing: ScanTiming?, at t: Int64) {
    listening = timing
    meter.set(duty: timing?.duty, power: meter.power, at: t)
    if let timing { driver.scanDutyChanged(to: timing.duty, at: t) }
  }

  /// Decides the timing now; `force`: even within `askEveryMicros` of the
  /// last time.
  func ask(force: Bool = false) {
    let t = Clock.monotonicMicros()
    guard force || t &- lastAsked >= Self.askEveryMicros else { return }
    lastAsked = t
    let source = power.current()
    if source != meter.power { meter.set(duty: listening?.duty, power: source, at: t) }
    let driver = self.driver
    if let timing = scheduler.decide(
      at: t, power: source,
      need: { driver.monitor.fullDutyNeeded(at: t, sampledDuty: $0, allowance: $1) })
    {
      scanner?.want(timing)
    }
    recheck.arm(at: scheduler.recheckAt.map { MonotonicTime(nanos: UInt64(max(0, $0)) * 1000) })
  }

  func stop() { recheck.cancel() }

  /// The `scan` section of the agent's status.
  func status() -> JSONValue {
    let t = Clock.monotonicMicros()
    func number(_ x: Double?, _ decimals: Int) -> JSONValue {
      guard let x else { return .null }
      let scale = pow10(decimals)
      return .number((x * scale).rounded() / scale)
    }
    var fields: [(String, JSONValue)] = [
      ("policy", .string(policy.rawValue)), ("power", .string(meter.power.rawValue)),
    ]
    if let l = listening {
      fields += [
        ("duty", number(l.duty, 4)), ("window_ms", number(l.windowSeconds * 1000, 2)),
        ("interval_ms", number(l.intervalSeconds * 1000, 2)),
      ]
    } else {
      fields.append(("duty", .null))
    }
    fields.append(
      (
        "mean_duty",
        .object(
          PowerSupply.allCases.map { ($0.rawValue, number(meter.mean(on: $0, at: t), 4)) })
      ))
    return .object(fields)
  }

  private func pow10(_ n: Int) -> Double {
    (0..<n).reduce(1) { x, _ in x * 10 }
  }
}
