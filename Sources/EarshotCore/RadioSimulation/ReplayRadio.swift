/// A replay heard through a simulated radio: the scan scheduler picks the
/// settings from what the monitor needs, as it does live, and a
/// `SimulatedScanner` lets through only the records it would have heard.
/// A sniffer's PDU (link type 251/256) is heard if it came on the channel
/// the scanner listened to in that window; an HCI capture's report, which
/// does not say its channel, whenever a window is open (so a capture made
/// at full duty thins to the duty chosen).
///
/// The shell calls `advance(to:)` before each record, `hears` for it, and
/// `decide(at:)` after a heard report (1 µs after it: the host answers
/// once the report is in), and gives the monitor the `Step`s returned.
/// With `keepCapture`, `takeCapture()` gives the run as btsnoop: the HCI
/// commands with their times and every report heard, so that the capture
/// filtered by those commands' windows can be checked to give the same.
public struct ReplayRadio {
  /// What the monitor must be told.
  public enum Step: Equatable, Sendable {
    /// The settings changed at `at` (the scan paused), to this duty.
    case changed(at: Int64, duty: Double)
    /// The scan listens again.
    case resumed(at: Int64)
  }
  /// The monitor's need: when it needs full duty, asked at `now`.
  public typealias Need = (_ now: Int64, _ duty: Double, _ allowance: ExitAllowance) -> Int64?

  public let power: PowerSupply
  private var scheduler: ScanScheduler
  public private(set) var scanner = SimulatedScanner()
  private var pendingResume: Int64?
  private var started = false
  /// Advertising records heard and not heard.
  public private(set) var heard = 0
  public private(set) var missed = 0
  private var capture: CaptureWriter?

  public init(settings: ScanScheduleSettings, power: PowerSupply, keepCapture: Bool = false) {
    scheduler = ScanScheduler(settings: settings)
    self.power = power
    if keepCapture { capture = CaptureWriter(container: .btsnoop) }
  }

  /// Starts the scan at the first record; then what falls due up to `t`:
  /// the end of a change's deafness, the scheduler's rechecks.
  public mutating func advance(to t: Int64, need: Need) -> [Step] {
    var steps: [Step] = []
    if !started {
      started = true
      for c in scanner.start(at: t) { write(c.command, at: c.t) }
      steps += decide(at: t, need: need)
    }
    while true {
      let recheck = scheduler.recheckAt.map { max($0, 0) }
      if let r = pendingResume, r <= t, recheck.map({ r <= $0 }) ?? true {
        pendingResume = nil
        steps.append(.resumed(at: r))
      } else if let r = recheck, r <= t {
        steps += decide(at: r, need: need)
        if scheduler.recheckAt.map({ max($0, 0) }) == r { break }  // guards the loop
      } else {
        break
      }
    }
    return steps
  }

  /// Asks the scheduler at `now`.
  public mutating func decide(at now: Int64, need: Need) -> [Step] {
    guard let new = scheduler.decide(at: now, power: power, need: { need(now, $0, $1) }) else {
      return []
    }
    for c in scanner.change(to: new, at: now) { write(c.command, at: c.t) }
    pendingResume = scanner.deafUntil
    return [.changed(at: now, duty: new.duty)]
  }

  /// Whether the scanner hears `record`. Records that are not advertising
  /// (commands, other events, data-channel PDUs) pass.
  public mutating func hears(_ record: CaptureRecord) -> Bool {
    let t = record.timestamp
    switch record.packet {
    case .hciEvent(let e):
      // LE Meta: Advertising Report (0x02), Extended Advertising Report (0x0D).
      guard e.count > 2, e[0] == 0x3E, e[2] == 0x02 || e[2] == 0x0D else { return true }
      guard count(scanner.hears(at: t, channel: nil)) else { return false }
      if capture != nil { _ = capture!.append(record) }
      return true
    case .linkLayer(let pdu, let rssi, let channel):
      guard channel.map({ $0 >= 37 }) ?? true else { return true }
      guard case .report(let report) = LinkLayer.decode(pdu, rssi: rssi) else { return true }
      guard count(scanner.hears(at: t, channel: channel)) else { return false }
      let event =
        HCIEventEncoder.legacyReport(report) ?? HCIEventEncoder.extendedReport(report)
      event?.withUnsafeBytes {
        _ = capture?.append(CaptureRecord(timestamp: t, packet: .hciEvent($0)))
      }
      return true
    case .hciCommand, .other:
      return true
    }
  }

  /// The run so far as btsnoop (with `keepCapture`), and none kept.
  public mutating func takeCapture() -> [UInt8] { capture?.takeBytes() ?? [] }

  private mutating func count(_ heard: Bool) -> Bool {
    if heard { self.heard += 1 } else { missed += 1 }
    return heard
  }

  private mutating func write(_ command: HCICommand, at t: Int64) {
    guard capture != nil else { return }
    command.packet.dropFirst().withUnsafeBytes {
      _ = capture!.append(CaptureRecord(timestamp: t, packet: .hciCommand($0)))
    }
  }
}
