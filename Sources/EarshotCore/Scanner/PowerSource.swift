/// One entry of `/sys/class/power_supply`, as the kernel describes it
/// (`type`, `online`, `scope`, `status`; absent attributes are nil).
public struct PowerSupplyEntry: Sendable, Equatable {
  public var type: String
  public var online: Bool?
  /// "System" or "Device" (a mouse's or a headset's battery); nil: system.
  public var scope: String?
  public var status: String?

  public init(type: String, online: Bool? = nil, scope: String? = nil, status: String? = nil) {
    self.type = type
    self.online = online
    self.scope = scope
    self.status = status
  }

  var isSystemBattery: Bool { type == "Battery" && scope != "Device" }
  /// Mains, a USB or USB-C charger, a wireless charger.
  var isExternal: Bool { ["Mains", "USB", "Wireless"].contains(type) || type.hasPrefix("USB_") }
}

extension PowerSupply {
  /// Where the machine's power comes from, by its supplies: on battery
  /// when a system battery discharges, or when it has one and no external
  /// supply is online; on mains otherwise (a desktop has no battery at
  /// all). Peripherals' batteries (`scope` Device) say nothing about it.
  public init(supplies: [PowerSupplyEntry]) {
    let batteries = supplies.filter(\.isSystemBattery)
    if batteries.contains(where: { $0.status == "Discharging" }) {
      self = .battery
    } else if supplies.contains(where: { $0.isExternal && $0.online == true }) {
      self = .mains
    } else {
      self = batteries.isEmpty ? .mains : .battery
    }
  }
}

/// How long the scan listened at each duty, per power source: the mean
/// duty `earshot status` and MQTT show, in the monitor's decision time.
public struct DutyMeter: Sendable, Equatable {
  public private(set) var duty: Double = 1
  public private(set) var power: PowerSupply = .mains
  private var since: DecisionTime?
  /// Per power source: seconds listened (duty-weighted) and seconds run.
  private var listened: [PowerSupply: Double] = [:]
  private var elapsed: [PowerSupply: Double] = [:]

  public init() {}

  /// From `t` the scan listens at `duty` on `power` (nil duty: it does
  /// not listen at all, the adapter is away).
  public mutating func set(duty: Double?, power: PowerSupply, at t: DecisionTime) {
    close(at: t)
    self.duty = duty ?? 0
    self.power = power
  }

  /// The mean duty on `power` up to `t` (nil: no time on it yet).
  public func mean(on power: PowerSupply, at t: DecisionTime) -> Double? {
    var copy = self
    copy.close(at: t)
    guard let run = copy.elapsed[power], run > 0 else { return nil }
    return (copy.listened[power] ?? 0) / run
  }

  private mutating func close(at t: DecisionTime) {
    if let since, t > since {
      let seconds = Double(t.micros - since.micros) / 1e6
      elapsed[power, default: 0] += seconds
      listened[power, default: 0] += seconds * duty
    }
    since = max(since ?? t, t)
  }
}

/// What the agent says of its scan (`status`'s `scan`, MQTT's scan duty
/// sensor): the policy, the power source, the timing reports come with
/// now (nil: none flow) and the mean duty since start per power source.
public struct ScanDutyReport: Sendable, Equatable {
  public var policy: ScanPolicy
  public var power: PowerSupply
  public var timing: ScanTiming?
  public var mean: [PowerSupply: Double]

  public init(
    policy: ScanPolicy, power: PowerSupply, timing: ScanTiming?, mean: [PowerSupply: Double]
  ) {
    self.policy = policy
    self.power = power
    self.timing = timing
    self.mean = mean
  }

  private static func rounded(_ x: Double, _ decimals: Int) -> Double {
    let scale = (0..<decimals).reduce(1.0) { x, _ in x * 10 }
    return (x * scale).rounded() / scale
  }

  /// `{"policy":…,"power":…,"duty":0.1,"window_ms":60,"interval_ms":600,"mean_duty":{"mains":…,"battery":…}}`
  public var json: JSONValue {
    var fields: [(String, JSONValue)] = [
      ("policy", .string(policy.rawValue)), ("power", .string(power.rawValue)),
    ]
    if let t = timing {
      fields += [
        ("duty", .number(Self.rounded(t.duty, 4))),
        ("window_ms", .number(Self.rounded(t.windowSeconds * 1000, 2))),
        ("interval_ms", .number(Self.rounded(t.intervalSeconds * 1000, 2))),
      ]
    } else {
      fields.append(("duty", .null))
    }
    let means = PowerSupply.allCases.map { p in
      (p.rawValue, mean[p].map { JSONValue.number(Self.rounded($0, 4)) } ?? .null)
    }
    fields.append(("mean_duty", .object(means)))
    return .object(fields)
  }

  /// The duty now in percent, for a sensor ("None" while no scan runs:
  /// Home Assistant's MQTT sensor shows that payload as unknown).
  public var percent: String {
    timing.map { JSONLine.format(Self.rounded($0.duty * 100, 1), decimals: 1) } ?? "None"
  }
}
