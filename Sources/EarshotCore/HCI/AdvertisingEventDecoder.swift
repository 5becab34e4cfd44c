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
    let params = r.rest()
    let outcome: Outcome
    switch LESubeventCode(rawValue: subevent) {
    case .advertisingReport: outcome = decodeLegacy(params, body)
    case .extendedAdvertisingReport: outcome = decodeExtended(params, body)
    case .directedAdvertisingReport: outcome = decodeDirected(params, body)
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

  /// One report's fields as read, before they are judged.
  private protocol Fields {
    /// The fewest bytes a report takes.
    static var minSize: Int { get }
    init(_ r: inout ByteReader) throws(Malformed)
  }

  /// Reads all `count` reports of an event, then hands them to `deliver`,
  /// which returns how many it delivered. One pass decides: a read that
  /// comes back short, or bytes left over, make the whole event malformed
  /// before anything is delivered.
  ///
  /// A report takes at least `minSize` bytes, so the parameters (at most
  /// 253 bytes) hold few of them: the buffer stays small enough for the
  /// stack, and a count the bytes cannot hold fails on a read.
  @inline(__always)
  private static func readAll<Report: Fields>(
    _ count: UInt8, from r: inout ByteReader,
    leftOver: StaticString = "bytes left over after the last report",
    deliver: (UnsafeBufferPointer<Report>) -> Int
  ) -> Outcome {
    // Most events carry one report: no buffer then.
    if count == 1 {
      let report: Report
      do throws(Malformed) { report = try Report(&r) } catch { return .malformed(error.reason) }
      guard r.isAtEnd else { return .malformed(leftOver) }
      return .reports(
        withUnsafePointer(to: report) { deliver(UnsafeBufferPointer(start: $0, count: 1)) })
    }
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
      guard r.isAtEnd else { return .malformed(leftOver) }
      return .reports(deliver(UnsafeBufferPointer(rebasing: buffer[..<n])))
    }
  }

  // MARK: LE Advertising Report (0x02)

  // Each report is laid out whole, one after another: event type, address
  // type, address, data length, data, RSSI. This is what Linux and real
  // controllers send for Num_Reports > 1 (the captures hold such events).
  // Data longer than the 31 bytes a legacy PDU can carry is accepted when
  // it fits the event: some tools write ADV and SCAN_RSP data joined.
  private struct LegacyFields: Fields {
    static var minSize: Int { 10 }
    var type: UInt8
    var addressType: UInt8
    var rssi: Int8
    var address: BDAddress
    var data: UnsafeRawBufferPointer

    @inline(__always) init(_ r: inout ByteReader) throws(Malformed) {
      guard let type = r.u8(), let addressType = r.u8(), let address = r.address(),
        let length = r.u8()
      else { throw Malformed("advertising report truncated") }
      guard let data = r.take(Int(length)), let rssi = r.i8() else {
        throw Malformed("advertising data overruns the event")
      }
      self.type = type
      self.addressType = addressType
      self.rssi = rssi
      self.address = address
      self.data = data
    }
  }

  private mutating func decodeLegacy(
    _ params: UnsafeRawBufferPointer, _ body: (AdvertisingReport) -> Void
  ) -> Outcome {
    var r = ByteReader(params)
    guard let count = r.u8(), count >= 1 else {
      return .malformed("no reports in advertising report event")
    }
    return Self.readAll(count, from: &r) { (reports: UnsafeBufferPointer<LegacyFields>) in
      var delivered = 0
      for f in reports {
        guard let pdu = AdvertisingPDU(legacyEventType: f.type),
          let at = AddressType(rawValue: f.addressType)
        else {
          stats.malformedReports += 1
          continue
        }
        stats.reports += 1
        delivered += 1
        body(
          AdvertisingReport(
            pdu: pdu, address: f.address, addressType: at,
            rssi: ReportRSSI.decode(f.rssi, in: .legacy), data: f.data))
      }
      return delivered
    }
  }

  // MARK: LE Directed Advertising Report (0x0B)

  // Fixed 16-byte reports: event type, address type, address, direct
  // address type, direct address, RSSI.
  private struct DirectedFields: Fields {
    static var minSize: Int { 16 }
    var type: UInt8
    var addressType: UInt8
    var rssi: Int8
    var address: BDAddress
    var direct: BDAddress

    @inline(__always) init(_ r: inout ByteReader) throws(Malformed) {
      guard let type = r.u8(), let addressType = r.u8(), let address = r.address(),
        r.skip(1),  // direct address type
        let direct = r.address(), let rssi = r.i8()
      else { throw Malformed("directed report event has the wrong size") }
      self.type = type
      self.addressType = addressType
      self.rssi = rssi
      self.address = address
      self.direct = direct
    }
  }

  private mutating func decodeDirected(
    _ params: UnsafeRawBufferPointer, _ body: (AdvertisingReport) -> Void
  ) -> Outcome {
    var r = ByteReader(params)
    guard let count = r.u8(), count >= 1 else {
      return .malformed("no reports in directed report event")
    }
    return Self.readAll(count, from: &r, leftOver: "directed report event has the wrong size") {
      (reports: UnsafeBufferPointer<DirectedFields>) in
      var delivered = 0
      for f in reports {
        guard f.type == 1, let at = AddressType(rawValue: f.addressType) else {
          stats.malformedReports += 1
          continue
        }
        stats.reports += 1
        delivered += 1
        body(
          AdvertisingReport(
            pdu: .advDirectInd, address: f.address, addressType: at, directAddress: f.direct,
            rssi: ReportRSSI.decode(f.rssi, in: .directed),
            data: UnsafeRawBufferPointer(start: nil, count: 0)))
      }
      return delivered
    }
  }

  // MARK: LE Extended Advertising Report (0x0D)

  // 24 fixed bytes, then the data: event type (2), address type, address,
  // primary PHY, secondary PHY, SID, TX power, RSSI, periodic advertising
  // interval (2), direct address type, direct address, data length.
  private struct ExtendedFields: Fields {
    static var minSize: Int { 24 }
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

    @inline(__always) init(_ r: inout ByteReader) throws(Malformed) {
      guard let eventType = r.u16le(), let addressType = r.u8(), let address = r.address(),
        let primaryPHY = r.u8(), let secondaryPHY = r.u8(), let sid = r.u8(), let tx = r.i8(),
        let rssi = r.i8(),
        r.skip(3),  // periodic advertising interval, direct address type
        let direct = r.address(), let length = r.u8()
      else { throw Malformed("extended report truncated") }
      guard let data = r.take(Int(length)) else {
        throw Malformed("extended advertising data overruns the event")
      }
      self.eventType = eventType
      self.addressType = addressType
      self.primaryPHY = primaryPHY
      self.secondaryPHY = secondaryPHY
      self.sid = sid
      self.tx = tx
      self.rssi = rssi
      self.address = address
      self.direct = direct
      self.data = data
    }
  }

  private mutating func decodeExtended(
    _ params: UnsafeRawBufferPointer, _ body: (AdvertisingReport) -> Void
  ) -> Outcome {
    var r = ByteReader(params)
    guard let count = r.u8(), count >= 1 else {
      return .malformed("no reports in extended report event")
    }
    return Self.readAll(count, from: &r) { (reports: UnsafeBufferPointer<ExtendedFields>) in
      var delivered = 0
      for f in reports {
        if deliverExtended(f, body) { delivered += 1 }
      }
      return delivered
    }
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
