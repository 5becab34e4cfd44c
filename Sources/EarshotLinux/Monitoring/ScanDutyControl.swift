import EarshotCore

/// The agent's scan scheduling: asks the region monitor when it needs full
/// duty, reads the power source, and gives the scanner the timing the pure
/// `ScanScheduler` picks; tells the monitor the duty reports come with.
///
/// Asked again after reports (at most every `askEvery`: a report
/// only ever moves the need later, or to now for a beacon not yet learnt,
/// which the scheduler's lead covers), after every monitor event and
/// adapter change, and at the scheduler's recheck time.
final class ScanDutyControl {
  let policy: ScanPolicy
  private var scheduler: ScanScheduler
  private let power: PowerSupplyReader
  private let recheck: MovingDeadline<DecisionTime>
  private unowned let driver: MonitorDriver
  private weak var scanner: LiveScanner?
  private var lastAsked: DecisionTime? = nil
  private(set) var meter = DutyMeter()
  /// The timing reports come with now (nil: none flow).
  private(set) var listening: ScanTiming?
  static let askEvery: Duration = .milliseconds(100)

  init(
    loop: EventLoop, settings: ScanScheduleSettings, driver: MonitorDriver,
    power: PowerSupplyReader
  ) {
    policy = settings.policy
    scheduler = ScanScheduler(settings: settings)
    self.power = power
    self.driver = driver
    recheck = MovingDeadline(liveOn: loop)
    recheck.onFire = { [unowned self] _ in self.ask(force: true) }
  }

  func attach(_ scanner: LiveScanner) {
    self.scanner = scanner
  }

  /// The scan listens with `timing` from now (`nil`: not at all).
  func listening(_ timing: ScanTiming?, at t: DecisionTime) {
    listening = timing
    meter.set(duty: paused ? nil : timing?.duty, power: meter.power, at: t)
    if let timing { driver.scanDutyChanged(to: timing.duty, at: t) }
  }

  /// Nobody scans for a moment (another program's scan ended, Earshot's
  /// not yet back): the mean duty counts that time as none.
  func paused(_ paused: Bool, at t: DecisionTime) {
    self.paused = paused
    meter.set(duty: paused ? nil : listening?.duty, power: meter.power, at: t)
  }
  private var paused = false

  /// Decides the timing now; `force`: even within `askEvery` of the last
  /// time.
  func ask(force: Bool = false) {
    let t = Clock.decisionNow()
    if !force, let lastAsked, t - lastAsked < Self.askEvery {
      // Skipped, not dropped: the report may have moved the need (a region
      // entered), and nothing else may come to ask again.
      let soon = lastAsked + Self.askEvery
      if recheck.deadline.map({ $0 > soon }) ?? true { recheck.arm(at: soon) }
      return
    }
    lastAsked = t
    let source = power.current()
    if source != meter.power {
      meter.set(duty: listening?.duty, power: source, at: t)
    }
    let driver = self.driver
    if let timing = scheduler.decide(
      at: t, power: source,
      need: { driver.monitor.fullDutyNeeded(at: t, sampledDuty: $0, allowance: $1) })
    {
      scanner?.want(timing)
    }
    recheck.arm(at: scheduler.recheckAt)
  }

  func stop() { recheck.cancel() }

  /// What `status` and MQTT say of the scan.
  func report() -> ScanDutyReport {
    let t = Clock.decisionNow()
    var mean: [PowerSupply: Double] = [:]
    for p in PowerSupply.allCases { mean[p] = meter.mean(on: p, at: t) }
    return ScanDutyReport(policy: policy, power: meter.power, timing: listening, mean: mean)
  }
}
