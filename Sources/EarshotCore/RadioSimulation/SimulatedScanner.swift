/// A controller scanning by the settings it was given, for runs with no
/// radio. It listens on one advertising channel per scan interval, 37
/// first after each enable and rotating, for the window at the interval's
/// start; while its settings change (scan disable, parameters, enable) it
/// hears nothing for `switchMicros`.
///
/// Guarantee: `hears` follows only the commands it returned, so a capture
/// of the air filtered by those commands' windows (a command at `t`
/// governs PDUs at `t` and later) gives the same PDUs.
public struct SimulatedScanner: Sendable {
  public private(set) var timing = ScanTiming.continuous
  /// Deaf before this: the settings are changing.
  public private(set) var deafUntil = DecisionTime(micros: 0)
  /// When the present settings took effect: the scan intervals count
  /// from here.
  private var phase = DecisionTime(micros: 0)
  private var enabled = false
  public let switchMicros: Int64

  public init(switchMicros: Int64 = 3000) { self.switchMicros = switchMicros }

  /// The commands that start the scan, continuous, at `t`.
  public mutating func start(at t: DecisionTime) -> [HCICommand] {
    timing = .continuous
    phase = t
    deafUntil = t
    enabled = true
    return [.leSetScanParameters(type: .passive, timing: timing), .leSetScanEnable(true)]
  }

  /// Takes `new` at `now`: the scan is disabled (if it was on) and set up;
  /// `enable(at: deafUntil)` turns it on again.
  public mutating func change(to new: ScanTiming, at now: DecisionTime) -> [HCICommand] {
    let off: [HCICommand] = enabled ? [.leSetScanEnable(false)] : []
    enabled = false
    timing = new
    deafUntil = DecisionTime(micros: now.micros + switchMicros)
    phase = deafUntil
    return off + [.leSetScanParameters(type: .passive, timing: new)]
  }

  /// Enables the scan set up by `change`, at `deafUntil`.
  public mutating func enable() -> HCICommand {
    enabled = true
    return .leSetScanEnable(true)
  }

  /// Whether a PDU at `t` on `channel` (37–39) is heard. With no channel
  /// (a report from an HCI capture, or a sniffer's PDU without the
  /// pseudo-header's channel), it is heard whenever a window is open.
  public func hears(at t: DecisionTime, channel: UInt8?) -> Bool {
    guard enabled, t >= deafUntil else { return false }
    let interval = max(1, Int64(timing.interval) * 625)
    let window = Int64(timing.window) * 625
    let offset = t.micros - phase.micros
    let k = offset / interval
    guard offset - k * interval < window else { return false }
    return channel.map { Int($0) == 37 + Int(k % 3) } ?? true
  }
}
