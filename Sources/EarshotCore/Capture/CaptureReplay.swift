/// Drives the decoders over a whole capture: HCI events go through the
/// advertising event decoder, sniffer PDUs through `LinkLayer`. Reports come
/// out with the capture's timestamps, in capture order.
public struct CaptureReplay {
  public var decoder = AdvertisingEventDecoder()
  /// Sniffer packets whose PDU (or sniffer header) did not fit; counted and
  /// skipped.
  public var malformedLinkLayer = 0
  /// Sniffer packets whose CRC-24 was wrong (as their sniffer said, or as
  /// checked here: `LinkLayer.crcPasses`); counted and skipped, since a
  /// corrupted packet's address and data cannot be trusted.
  public var crcFailures = 0
  /// Sniffer PDUs that are well formed but hold no report by themselves
  /// (an ADV_EXT_IND pointing at its AUX_ADV_IND), by reason.
  public var skippedLinkLayer: [LinkLayer.Skip: Int] = [:]
  public private(set) var records = 0
  public private(set) var truncated = false

  public init() {}

  /// Replays a capture held in memory. Calls `report` for every
  /// advertising report, `reject` (if given) for every malformed event with
  /// its bytes and the reason, and `event` for every HCI event (sniffed PDUs
  /// as the equivalent report event). Throws when the bytes are not a
  /// capture Earshot reads, or stop being one part way (after delivering
  /// what came before); a capture cut short only sets `truncated`.
  public mutating func run(
    _ bytes: UnsafeRawBufferPointer,
    report: (Int64, AdvertisingReport) -> Void,
    reject: ((Int64, UnsafeRawBufferPointer, String) -> Void)? = nil,
    event: ((Int64, UnsafeRawBufferPointer) -> Void)? = nil
  ) throws {
    var reader = try CaptureReader(bytes)
    try run(&reader, report: report, reject: reject, event: event)
  }

  /// The same, reading from `reader` (a streaming one, say) to its end.
  /// Also throws the error its source threw.
  public mutating func run(
    _ reader: inout CaptureReader,
    report: (Int64, AdvertisingReport) -> Void,
    reject: ((Int64, UnsafeRawBufferPointer, String) -> Void)? = nil,
    event: ((Int64, UnsafeRawBufferPointer) -> Void)? = nil
  ) throws {
    while let record = reader.next() {
      handle(record, report: report, reject: reject, event: event)
    }
    try finish(reader)
  }

  /// Decodes one record (for a caller that paces the records itself).
  public mutating func handle(
    _ record: CaptureRecord,
    report: (Int64, AdvertisingReport) -> Void,
    reject: ((Int64, UnsafeRawBufferPointer, String) -> Void)? = nil,
    event: ((Int64, UnsafeRawBufferPointer) -> Void)? = nil
  ) {
    let t = record.timestamp
    switch record.packet {
    case .hciEvent(let bytes):
      event?(t, bytes)
      let outcome = decoder.decode(event: bytes) { report(t, $0) }
      if case .malformed(let why) = outcome { reject?(t, bytes, why.description) }
    case .linkLayer(let pdu, let rssi, _, let crc):
      guard LinkLayer.crcPasses(pdu, crc) else {
        crcFailures += 1
        return
      }
      switch LinkLayer.decode(pdu, rssi: rssi) {
      case .report(let r):
        decoder.stats.reports += 1
        // Offer sniffed PDUs as the HCI event a controller would send.
        if let event,
          let bytes = HCIEventEncoder.legacyReport(r) ?? HCIEventEncoder.extendedReport(r)
        {
          bytes.withUnsafeBytes { event(t, $0) }
        }
        report(t, r)
      case .malformed(let fault):
        malformedLinkLayer += 1
        reject?(t, pdu, fault.description)
      case .skipped(let why):
        skippedLinkLayer[why, default: 0] += 1
      case .ignored:
        break
      }
    case .unreadableLinkLayer(let bytes, let why):
      malformedLinkLayer += 1
      reject?(t, bytes, why)
    case .hciCommand, .other:
      break
    }
  }

  /// Takes the reader's counts once it has returned its last record, and
  /// throws the error that ended it early, if any.
  public mutating func finish(_ reader: CaptureReader) throws {
    records = reader.records
    truncated = reader.truncated
    if let error = reader.inputError { throw error }
    if let failure = reader.failure { throw failure }
  }
}
