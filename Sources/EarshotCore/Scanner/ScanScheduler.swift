/// Where the machine's power comes from (`/sys/class/power_supply`, or
/// UPower's `OnBattery`). A machine with no battery at all is on mains.
public enum PowerSupply: String, Sendable, Equatable, CaseIterable {
  case mains, battery
}

/// How much radio time the scanner may take (`[scanner] duty`).
public enum ScanPolicy: String, Sendable, Equatable, CaseIterable {
  /// Sample while every region is settled, at the mains or battery
  /// timing by the power source; full duty whenever a decision needs it.
  case automatic
  /// As `automatic`, always at the battery timing.
  case saving
  /// Listen all the time, as before there was a scheduler.
  case full
}

/// What the scheduler is tuned by (`[scanner]` settings).
public struct ScanScheduleSettings: Equatable, Sendable {
  public var policy: ScanPolicy
  /// The sampled timing on mains and on battery.
  public var mains: ScanTiming
  public var battery: ScanTiming
  /// How much later than at full duty an `auto` exit may come while
  /// sampling, on mains and on battery.
  public var mainsAllowance: ExitAllowance
  public var batteryAllowance: ExitAllowance
  /// The scanner goes to full duty this long before a decision needs it
  /// (three HCI commands, and the controller's first full interval).
  public var lead: Duration
  /// A sampled span shorter than this is not worth the commands that
  /// start and end it: the scan stays at full duty instead.
  public var hold: Duration

  public init(
    policy: ScanPolicy = .automatic,
    mains: ScanTiming = ScanTiming(interval: 0x03C0, window: 0x0060),
    battery: ScanTiming = ScanTiming(interval: 0x04B0, window: 0x0030),
    mainsAllowance: ExitAllowance = ExitAllowance(confirmSpans: 0.75, maxSeconds: 14),
    batteryAllowance: ExitAllowance = ExitAllowance(confirmSpans: 1.75, maxSeconds: 16),
    lead: Duration = .milliseconds(250), hold: Duration = .seconds(2)
  ) {
    self.policy = policy
    self.mains = mains
    self.battery = battery
    self.mainsAllowance = mainsAllowance
    self.batteryAllowance = batteryAllowance
    self.lead = lead
    self.hold = hold
  }
}

/// How much later than at full duty an exit may come while the scan
/// samples: `confirmSpans` of the region's confirm span (the full-duty
/// silence an exit needs: about 1.2 s for a 100 ms beacon, 12 s for a 1 s
/// one at 30 % loss, at most the region's exit_after), and never more than
/// `maxSeconds`. Each later second is radio time saved: the raise to full
/// duty comes that much later. The cap keeps slow beacons' exits within
/// reach (1.75 spans of a 1 s beacon would be 21 s late), while fast
/// beacons, whose spans are short, get the whole allowance.
public struct ExitAllowance: Equatable, Sendable {
  public var confirmSpans: Double
  public var maxSeconds: Double

  public init(confirmSpans: Double, maxSeconds: Double = .infinity) {
    self.confirmSpans = confirmSpans
    self.maxSeconds = maxSeconds
  }

  /// Seconds an exit whose confirm span is `confirm` may come late.
  public func lateness(confirm: Double) -> Double {
    max(0, min(confirmSpans * confirm, maxSeconds))
  }
}

extension ScanTiming {
  /// The fraction of time the controller listens.
  public var duty: Double { interval == 0 ? 1 : min(1, Double(window) / Double(interval)) }
  public var isFull: Bool { window >= interval }
  /// The interval and window in seconds (the spec's unit is 0.625 ms).
  public var intervalSeconds: Double { Double(interval) * 0.000_625 }
  public var windowSeconds: Double { Double(window) * 0.000_625 }
}

/// Turns what presence needs from the radio into scan settings: pure,
/// with the time and the needs injected.
///
/// The need is one question to the region monitor (`fullDutyNeeded`):
/// when must the scan be back at full duty for every exit to be decided
/// in time, were it to sample at a given duty until then.
///
/// Guarantees (each tested):
/// - `full` policy: always `.continuous`, whatever the need.
/// - Never sampled within `lead` of a need: a need at or before
///   `now + lead` gives full duty, so exits (which the monitor
///   decides only at full duty) are never held back by the schedule for
///   longer than the lead, provided `decide` runs again at `recheckAt`.
/// - Leaves full duty only for a sampled span of at least `hold`,
///   so a beacon that keeps being suspected does not flap the settings.
/// - `recheckAt` is set whenever the present settings will need to change
///   by themselves. The need moves only with reports and monitor events,
///   so the shell must ask again after each (a region entered while
///   sampling has an exit to be decided later; the monitor declares none
///   below full duty, so a shell that did not ask would keep it inside).
public struct ScanScheduler: Sendable {
  public let settings: ScanScheduleSettings
  /// The settings chosen last (full until the first decision).
  public private(set) var timing: ScanTiming = .continuous
  /// When to ask again if nothing else happens (nil: not needed).
  public private(set) var recheckAt: DecisionTime? = nil

  public init(settings: ScanScheduleSettings) {
    self.settings = settings
  }

  /// The sampled timing for `power` under the policy.
  public func sampled(on power: PowerSupply) -> ScanTiming {
    switch settings.policy {
    case .full: .continuous
    case .saving: settings.battery
    case .automatic: power == .battery ? settings.battery : settings.mains
    }
  }

  /// The allowance for `power`: the battery's under `saving`.
  public func allowance(on power: PowerSupply) -> ExitAllowance {
    settings.policy == .saving || power == .battery
      ? settings.batteryAllowance : settings.mainsAllowance
  }

  /// Decides the settings at `now`. `need(duty, allowance)`: when
  /// full duty is needed if sampling at `duty` until then (nil: never).
  /// `forceFull`: something other than presence needs every report now
  /// (a tag being found, a find-phone ring, `earshot scan`).
  /// Returns the new timing when it changes.
  public mutating func decide(
    at now: DecisionTime, power: PowerSupply, forceFull: Bool = false,
    need: (_ duty: Double, _ allowance: ExitAllowance) -> DecisionTime?
  ) -> ScanTiming? {
    let next = choose(at: now, power: power, forceFull: forceFull, need: need)
    guard next != timing else { return nil }
    timing = next
    return next
  }

  private mutating func choose(
    at time: DecisionTime, power: PowerSupply, forceFull: Bool,
    need: (Double, ExitAllowance) -> DecisionTime?
  ) -> ScanTiming {
    let now = time.micros
    recheckAt = nil
    let low = sampled(on: power)
    guard !low.isFull, !forceFull else { return .continuous }
    guard let due = need(low.duty, allowance(on: power))?.micros else { return low }
    let lead = settings.lead.wholeMicros
    let raise = due &- lead
    if raise <= now { return .continuous }
    if timing.isFull && raise - now < settings.hold.wholeMicros {
      // Too short a span to be worth it: stay (the need moves on reports).
      return .continuous
    }
    recheckAt = DecisionTime(micros: raise)
    return low
  }
}
