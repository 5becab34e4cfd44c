/// Decodes HCI LE Meta events into advertising reports.
///
/// Handles the three report-carrying subevents: LE Advertising Report
/// (0x02), LE Directed Advertising Report (0x0B) and LE Extended Advertising
/// Report (0x0D). An event is validated whole before any of its reports is
/// delivered, so a corrupt event yields nothing rather than half a list.
/// Extended-report fragments are joined per advertiser and set.
public struct AdvertisingEventDecoder {
  public var stats = DecodeStats()
  /// Partial extended advertising data, keyed by advertiser and set.
  private var fragments: [FragmentKey: [UInt8]] = [:]

  /// The largest extended advertising data the spec allows (Core 5.x).
  public static let maxExtendedDataLength = 1650
  /// Chains being joined at once, at most: a controller sends a chain's
  /// fragments close together, so more are chains whose end never came
  /// (out of range, a dropped event). Past this one is given up, so that a
  /// crowd of advertisers cannot grow the table.
  public static let maxPendingChains = 128

  /// Chains with fragments waiting for their last one.
  var pendingChains: Int { fragments.count }

  public init() {}

  /// Why an event was not decoded. Static strings, so rejecting costs nothing.
  public enum Outcome: Equatable {
    case reports(Int)
    /// A valid event of another kind (command complete, connection, ...).
    case notAdvertising
    case malformed(StaticString)

    public static func == (a: Outcome, b: Outcome) -> Bool {
      switch (a, b) {
      case (.reports(let x), .reports(let y)): x == y
      case (.notAdvertising, .notAdvertising): true
      case (.malformed(let x), .malformed(let y)): x.description == y.description
      default: false
      }
    }
  }

  /// Decodes one H4 packet (indicator byte first). Non-event packets
  /// (commands, ACL) are `.notAdvertising`.
  @inlinable public mutating func decode(
    h4 packet: UnsafeRawBufferPointer, _ body: (AdvertisingReport) -> Void
  ) -> Outcome {
    guard let indicator = packet.first else {
      stats.malformedEvents += 1
      return .malformed("empty packet")
    }
    guard indicator == H4PacketType.event.rawValue else {
      if (H4PacketType.command.rawValue...H4PacketType.isoData.rawValue).contains(indicator) {
        return .notAdvertising
      }
      stats.malformedEvents += 1
      return .malformed("unknown H4 packet indicator")
    }
    return decode(event: UnsafeRawBufferPointer(rebasing: packet[1...]), body)
  }

  /// Decodes one bare HCI event (event code first).
  public mutating func decode(
    event: UnsafeRawBufferPointer, _ body: (AdvertisingReport) -> Void
  ) -> Outcome {
    var r = ByteReader(event)
    guard let code = r.u8(), let length = r.u8() else {
      stats.malformedEvents += 1
      return .malformed("event shorter than its header")
    }
    guard Int(length) == r.remaining else {
      stats.malformedEvents += 1
      return .malformed("parameter length does not match the event size")
    }
    guard code == HCIEventCode.leMeta.rawValue else { return .notAdvertising }
    guard let subevent = r.u8() else {
      stats.malformedEvents += 1
      return .malformed("LE meta event without subevent code")
    }
    let outcome: Outcome
    switch LESubeventCode(rawValue: subevent) {
    case .advertisingReport: outcome = decodeReports(LegacyFields.self, &r, body)
    case .extendedAdvertisingReport: outcome = decodeReports(ExtendedFields.self, &r, body)
    case .directedAdvertisingReport: outcome = decodeReports(DirectedFields.self, &r, body)
    default: return .notAdvertising
    }
    switch outcome {
    case .reports: stats.events += 1
    case .malformed: stats.malformedEvents += 1
    case .notAdvertising: break
    }
    return outcome
  }

  // MARK: Reading an event whole

  /// Why an event's reports could not be read.
  private struct Malformed: Error {
    let reason: StaticString
    init(_ reason: StaticString) { self.reason = reason }
  }

  /// One subevent's report layout: how a report is read, the fewest
  /// bytes it takes, what a bad count or a bad size is called, and how a
  /// report read whole is judged and delivered.
  private protocol Fields {
    /// The fewest bytes a report takes.
    static var minSize: Int { get }
    /// Why an event with a report count of 0 (or none) is malformed.
    static var noReports: StaticString { get }
    /// Why an event with bytes after its last report is malformed.
    static var leftOver: StaticString { get }
    init(_ r: inout ByteReader) throws(Malformed)
    /// Delivers the report (or keeps it, for a fragment); false when it is
    /// counted and skipped or kept.
    func deliver(
      into decoder: inout AdvertisingEventDecoder, _ body: (AdvertisingReport) -> Void
    ) -> Bool
  }

  /// Reads the parameters after the subevent code: the report count, then
  /// the reports of `Report`'s layout, judged whole before any is delivered.
  @inline(__always) private mutating func decodeReports<Report: Fields>(
    _: Report.Type, _ r: inout ByteReader, _ body: (AdvertisingReport) -> Void
  ) -> Outcome {
    guard let count = r.u8(), count >= 1 else { return .malformed(Report.noReports) }
    guard count == 1 else {
      return Self.readAll(count, from: &r) {
        (reports: UnsafeBufferPointer<Report>) in
        var delivered = 0
        for report in reports where report.deliver(into: &self, body) { delivered += 1 }
        return delivered
      }
    }
    // Most events carry one report: read and delivered without a buffer.
    let report: Report
    do throws(Malformed) { report = try Report(&r) } catch { return .malformed(error.reason) }
    guard r.isAtEnd else { return .malformed(Report.leftOver) }
    return .reports(report.deliver(into: &self, body) ? 1 : 0)
  }

  /// Reads all `count` reports of an event, then hands them to `deliver`,
  /// which returns how many it delivered. One pass decides: a read that
  /// comes back short, or bytes left over, make the whole event malformed
  /// before anything is delivered. Events of one report (most of them) are
  /// read by `decodeReports` directly, without a buffer.
  ///
  /// A report takes at least `minSize` bytes, so the parameters (at most
  /// 253 bytes) hold few of them: the buffer stays small enough for the
  /// stack, and a count the bytes cannot hold fails on a read.
  private static func readAll<Report: Fields>(
    _ count: UInt8, from r: inout ByteReader,
    deliver: (UnsafeBufferPointer<Report>) -> Int
  ) -> Outcome {
    let capacity = min(Int(count), r.remaining / Report.minSize)
    return withUnsafeTemporaryAllocation(of: Report.self, capacity: capacity) { buffer in
      var n = 0
      defer { _ = UnsafeMutableBufferPointer(rebasing: buffer[..<n]).deinitialize() }
      for _ in 0..<count {
        let report: Report
        do throws(Malformed) { report = try Report(&r) } catch { return .malformed(error.reason) }
        // Unreachable while every report takes `minSize` bytes or more;
        // kept so a wrong `minSize` is a rejected event, not a bad write.
        guard n < capacity else { return .malformed("more reports than the event can hold") }
        buffer.initializeElement(at: n, to: report)
        n += 1
      }
      guard r.isAtEnd else { return .malformed(Report.leftOver) }
      return .reports(deliver(UnsafeBufferPointer(rebasing: buffer[..<n])))
    }
  }

  // One layout per subevent below, each read by `decodeReports` from the
  // event's own reader, after the subevent code.

  // MARK: LE Advertising Report (0x02)

  // Each report is laid out whole, one after another: event type, address
  // type, address, data length, data, RSSI. This is what Linux and real
  // controllers send for Num_Reports > 1 (the captures hold such events).
  // Data longer than the 31 bytes a legacy PDU can carry is accepted when
  // it fits the event: some tools write ADV and SCAN_RSP data joined.
  private struct LegacyFields: Fields {
    static var minSize: Int { 10 }
    static var noReports: StaticString { "no reports in advertising report event" }
    static var leftOver: StaticString { "bytes left over after the last report" }
    var type: UInt8
    var addressType: UInt8
    var rssi: Int8
    var address: BDAddress
    var data: UnsafeRawBufferPointer

    /// Two bounds checks: the fixed head, then the data and the RSSI.
    @inline(__always) init(_ r: inout ByteReader) throws(Malformed) {
      guard let h = r.next(9) else { throw Malformed("advertising report truncated") }
      let length = Int(h.load(fromByteOffset: 8, as: UInt8.self))
      guard let t = r.next(length + 1) else {
        throw Malformed("advertising data overruns the event")
      }
      self.type = h.load(as: UInt8.self)
      self.addressType = h.load(fromByteOffset: 1, as: UInt8.self)
      self.address = BDAddress(littleEndianAt: h + 2)
      self.data = UnsafeRawBufferPointer(start: t, count: length)
      self.rssi = t.load(fromByteOffset: length, as: Int8.self)
    }

    @inline(__always) func deliver(
      into decoder: inout AdvertisingEventDecoder, _ body: (AdvertisingReport) -> Void
    ) -> Bool { decoder.deliverLegacy(self, body) }
  }

  /// Delivers one legacy report; false when its type or address type is
  /// unknown (counted, skipped).
  @inline(__always) private mutating func deliverLegacy(
    _ f: LegacyFields, _ body: (AdvertisingReport) -> Void
  ) -> Bool {
    guard let pdu = AdvertisingPDU(legacyEventType: f.type),
      let at = AddressType(rawValue: f.addressType)
    else {
      stats.malformedReports += 1
      return false
    }
    stats.reports += 1
    body(
      AdvertisingReport(
        pdu: pdu, address: f.address, addressType: at,
        rssi: ReportRSSI.decode(f.rssi, in: .legacy), data: f.data))
    return true
  }

  // MARK: LE Directed Advertising Report (0x0B)

  // Fixed 16-byte reports: event type, address type, address, direct
  // address type, direct address, RSSI.
  private struct DirectedFields: Fields {
    static var minSize: Int { 16 }
    static var noReports: StaticString { "no reports in directed report event" }
    static var leftOver: StaticString { "directed report event has the wrong size" }
    var type: UInt8
    var addressType: UInt8
    var rssi: Int8
    var address: BDAddress
    var direct: BDAddress

    /// One bounds check for the whole report.
    @inline(__always) init(_ r: inout ByteReader) throws(Malformed) {
      guard let p = r.next(16) else { throw Malformed("directed report event has the wrong size") }
      self.type = p.load(as: UInt8.self)
      self.addressType = p.load(fromByteOffset: 1, as: UInt8.self)
      self.address = BDAddress(littleEndianAt: p + 2)
      // Byte 8: direct address type.
      self.direct = BDAddress(littleEndianAt: p + 9)
      self.rssi = p.load(fromByteOffset: 15, as: Int8.self)
    }

    @inline(__always) func deliver(
      into decoder: inout AdvertisingEventDecoder, _ body: (AdvertisingReport) -> Void
    ) -> Bool { decoder.deliverDirected(self, body) }
  }

  /// Delivers one directed report; false when its type or address type is
  /// wrong (counted, skipped).
  @inline(__always) private mutating func deliverDirected(
    _ f: DirectedFields, _ body: (AdvertisingReport) -> Void
  ) -> Bool {
    guard f.type == 1, let at = AddressType(rawValue: f.addressType) else {
      stats.malformedReports += 1
      return false
    }
    stats.reports += 1
    body(
      AdvertisingReport(
        pdu: .advDirectInd, address: f.address, addressType: at, directAddress: f.direct,
        rssi: ReportRSSI.decode(f.rssi, in: .directed),
        data: UnsafeRawBufferPointer(start: nil, count: 0)))
    return true
  }

  // MARK: LE Extended Advertising Report (0x0D)

  // 24 fixed bytes, then the data: event type (2), address type, address,
  // primary PHY, secondary PHY, SID, TX power, RSSI, periodic advertising
  // interval (2), direct address type, direct address, data length.
  private struct ExtendedFields: Fields {
    static var minSize: Int { 24 }
    static var noReports: StaticString { "no reports in extended report event" }
    static var leftOver: StaticString { "bytes left over after the last report" }
    var eventType: UInt16
    var addressType: UInt8
    var primaryPHY: UInt8
    var secondaryPHY: UInt8
    var sid: UInt8
    var tx: Int8
    var rssi: Int8
    var address: BDAddress
    var direct: BDAddress
    var data: UnsafeRawBufferPointer

    /// Two bounds checks: the fixed head, then the data.
    @inline(__always) init(_ r: inout ByteReader) throws(Malformed) {
      guard let h = r.next(24) else { throw Malformed("extended report truncated") }
      let length = Int(h.load(fromByteOffset: 23, as: UInt8.self))
      guard let d = r.next(length) else {
        throw Malformed("extended advertising data overruns the event")
      }
      self.eventType = UInt16(littleEndian: h.loadUnaligned(as: UInt16.self))
      self.addressType = h.load(fromByteOffset: 2, as: UInt8.self)
      self.address = BDAddress(littleEndianAt: h + 3)
      self.primaryPHY = h.load(fromByteOffset: 9, as: UInt8.self)
      self.secondaryPHY = h.load(fromByteOffset: 10, as: UInt8.self)
      self.sid = h.load(fromByteOffset: 11, as: UInt8.self)
      self.tx = h.load(fromByteOffset: 12, as: Int8.self)
      self.rssi = h.load(fromByteOffset: 13, as: Int8.self)
      // Bytes 14-16: periodic advertising interval, direct address type.
      self.direct = BDAddress(littleEndianAt: h + 17)
      self.data = UnsafeRawBufferPointer(start: d, count: length)
    }

    @inline(__always) func deliver(
      into decoder: inout AdvertisingEventDecoder, _ body: (AdvertisingReport) -> Void
    ) -> Bool { decoder.deliverExtended(self, body) }
  }

  /// Delivers one extended report, or keeps it as a fragment of a chain;
  /// true when a report was delivered.
  private mutating func deliverExtended(
    _ f: ExtendedFields, _ body: (AdvertisingReport) -> Void
  ) -> Bool {
    guard let pdu = AdvertisingPDU(extendedEventType: f.eventType),
      let at = AddressType(rawValue: f.addressType),
      let status = DataStatus(rawValue: UInt8((f.eventType >> 5) & 0x3))
    else {
      stats.malformedReports += 1
      return false
    }
    var report = AdvertisingReport(
      pdu: pdu, address: f.address, addressType: at,
      directAddress: (f.eventType & 0x04) != 0 ? f.direct : nil,
      rssi: ReportRSSI.decode(f.rssi, in: .extended), txPower: f.tx == 127 ? nil : f.tx,
      primaryPHY: f.primaryPHY, secondaryPHY: f.secondaryPHY, sid: f.sid == 0xFF ? nil : f.sid,
      dataStatus: status, data: f.data)

    let key = FragmentKey(address: f.address, addressType: f.addressType, sid: f.sid)
    if status == .incomplete {
      stats.fragments += 1
      var buffer = fragments.removeValue(forKey: key) ?? []
      guard buffer.count + f.data.count <= Self.maxExtendedDataLength else {
        stats.malformedReports += 1
        return false
      }
      buffer.append(contentsOf: f.data)
      if fragments.count >= Self.maxPendingChains {
        fragments.remove(at: fragments.startIndex)
      }
      fragments[key] = buffer
      return false
    }
    if status == .truncated { stats.truncated += 1 }
    // Most reports are whole: skip the hash lookup when nothing is pending.
    if !fragments.isEmpty, var buffer = fragments.removeValue(forKey: key) {
      // Last fragment: deliver the joined data.
      buffer.append(contentsOf: f.data)
      stats.reports += 1
      buffer.withUnsafeBytes { joined in
        report.data = joined
        body(report)
      }
      return true
    }
    stats.reports += 1
    body(report)
    return true
  }

  private struct FragmentKey: Hashable {
    let address: BDAddress
    let addressType: UInt8
    let sid: UInt8
  }
}

/// Counters of what a decoder has seen; malformed input is counted, never fatal.
public struct DecodeStats: Sendable, Equatable {
  public var events = 0
  public var reports = 0
  public var malformedEvents = 0
  public var malformedReports = 0
  public var fragments = 0
  public var truncated = 0
  public init() {}
}

extension BDAddress {
  /// The address in the six little-endian bytes at `p`, which the caller
  /// has bounds-checked (a `ByteReader.next` that covers them).
  @inline(__always) fileprivate init(littleEndianAt p: UnsafeRawPointer) {
    let low = UInt64(UInt32(littleEndian: p.loadUnaligned(as: UInt32.self)))
    let high = UInt64(UInt16(littleEndian: p.loadUnaligned(fromByteOffset: 4, as: UInt16.self)))
    self.init(raw: low | high << 32)
  }
}

extension ByteReader {
  /// The start of the next `count` bytes, or `nil` if fewer remain; the
  /// reader moves past them. The one bounds check for a report's fixed
  /// fields, which are then loaded from the pointer unchecked.
  @inline(__always) fileprivate mutating func next(_ count: Int) -> UnsafeRawPointer? {
    guard count >= 0, count <= bytes.count &- offset, let base = bytes.baseAddress else {
      return nil
    }
    defer { offset &+= count }
    return base + offset
  }
}
