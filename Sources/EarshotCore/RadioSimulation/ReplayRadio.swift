/// A replay heard through a simulated radio: `radio` (the closed loop's
/// `SimulatedRadio`) scans as the scheduler decides from what the monitor
/// needs, and only the records its scanner would have heard go on. A
/// sniffer's PDU (link type 256) is heard if it came on the channel the
/// scanner listened to in that window; an HCI capture's report (or a
/// link type 251 PDU), which does not say its channel, whenever a window
/// is open (so a capture made at full duty thins to the duty chosen).
///
/// With `sink`, the run goes to it as btsnoop, 64 KiB at a time (and the
/// rest at `finish()`): the HCI commands with their times and every report
/// heard, so that the capture filtered by those commands' windows can be
/// checked to give the same.
public struct ReplayRadio {
  public var radio: SimulatedRadio
  /// Advertising records heard and not heard.
  public private(set) var heard = 0
  public private(set) var missed = 0
  private var capture: CaptureWriter?
  private let sink: (([UInt8]) -> Void)?

  public init(
    settings: ScanScheduleSettings, power: PowerSupply, sink: (([UInt8]) -> Void)? = nil
  ) {
    radio = SimulatedRadio(settings: settings, power: power)
    self.sink = sink
    if sink != nil { capture = CaptureWriter(container: .btsnoop) }
  }

  /// Whether the scanner hears `record`. Records that are not advertising
  /// (commands, other events, data-channel PDUs) pass.
  public mutating func hears(_ record: CaptureRecord) -> Bool {
    keepCommands()
    // A replay decides in its capture's time.
    let t = DecisionTime(capture: WallTime(micros: record.timestamp))
    switch record.packet {
    case .hciEvent(let e):
      // LE Meta: Advertising Report (0x02), Extended Advertising Report (0x0D).
      guard e.count > 2, e[0] == 0x3E, e[2] == 0x02 || e[2] == 0x0D else { return true }
      guard count(radio.hears(at: t, channel: nil)) else { return false }
      if capture != nil { _ = capture!.append(record) }
      drain(below: 1 << 16)
      return true
    case .linkLayer(let pdu, let rssi, let channel, let crc):
      guard channel.map({ $0 >= 37 }) ?? true, LinkLayer.crcPasses(pdu, crc) else { return true }
      guard case .report(let report) = LinkLayer.decode(pdu, rssi: rssi) else { return true }
      guard count(radio.hears(at: t, channel: channel)) else { return false }
      let event =
        HCIEventEncoder.legacyReport(report) ?? HCIEventEncoder.extendedReport(report)
      event?.withUnsafeBytes {
        _ = capture?.append(CaptureRecord(timestamp: t.micros, packet: .hciEvent($0)))
      }
      drain(below: 1 << 16)
      return true
    case .hciCommand, .unreadableLinkLayer, .other:
      return true
    }
  }

  /// Moves the radio's commands into the capture (or drops them).
  public mutating func keepCommands() {
    for c in radio.takeCommands() { capture?.append(c.command, at: c.t.micros) }
  }

  /// Hands the rest of the capture to the sink.
  public mutating func finish() {
    keepCommands()
    drain(below: 1)
  }

  private mutating func drain(below limit: Int) {
    guard let sink, let bytes = capture?.bytes, bytes.count >= limit else { return }
    sink(capture!.takeBytes())
  }

  private mutating func count(_ heard: Bool) -> Bool {
    if heard { self.heard += 1 } else { missed += 1 }
    return heard
  }
}
