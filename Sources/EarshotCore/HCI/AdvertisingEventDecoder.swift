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

  // MARK: LE Advertising Report (0x02)

  // Each report is laid out whole, one after another: event type, address
  // type, address, data length, data, RSSI. This is what Linux and real
  // controllers send for Num_Reports > 1 (the captures hold such events).
  // Data longer than the 31 bytes a legacy PDU can carry is accepted when
  // it fits the event: some tools write ADV and SCAN_RSP data joined.
  private mutating func decodeLegacy(
    _ params: UnsafeRawBufferPointer, _ body: (AdvertisingReport) -> Void
  ) -> Outcome {
    var r = ByteReader(params)
    guard let count = r.u8(), count >= 1 else {
      return .malformed("no reports in advertising report event")
    }
    // First pass: every report must fit exactly.
    var probe = r
    for _ in 0..<count {
      guard probe.skip(8), let len = probe.u8() else {
        return .malformed("advertising report truncated")
      }
      guard probe.skip(Int(len) + 1) else {
        return .malformed("advertising data overruns the event")
      }
    }
    guard probe.isAtEnd else { return .malformed("bytes left over after the last report") }

    var delivered = 0
    for _ in 0..<count {
      // Bounds were proven above; the optionals cannot fail here.
      let type = r.u8()!
      let addrType = r.u8()!
      let address = r.address()!
      let len = Int(r.u8()!)
      let data = r.take(len)!
      let rssiRaw = r.i8()!
      guard let pdu = AdvertisingPDU(legacyEventType: type),
        let at = AddressType(rawValue: addrType)
      else {
        stats.malformedReports += 1
        continue
      }
      stats.reports += 1
      delivered += 1
      body(
        AdvertisingReport(
          pdu: pdu, address: address, addressType: at,
          rssi: ReportRSSI.decode(rssiRaw, in: .legacy), data: data))
    }
    return .reports(delivered)
  }

  // MARK: LE Directed Advertising Report (0x0B)

  private mutating func decodeDirected(
    _ params: UnsafeRawBufferPointer, _ body: (AdvertisingReport) -> Void
  ) -> Outcome {
    var r = ByteReader(params)
    guard let count = r.u8(), count >= 1 else {
      return .malformed("no reports in directed report event")
    }
    guard r.remaining == Int(count) * 16 else {
      return .malformed("directed report event has the wrong size")
    }
    var delivered = 0
    for _ in 0..<count {
      let type = r.u8()!
      let addrType = r.u8()!
      let address = r.address()!
      _ = r.u8()!  // direct address type
      let direct = r.address()!
      let rssiRaw = r.i8()!
      guard type == 1, let at = AddressType(rawValue: addrType) else {
        stats.malformedReports += 1
        continue
      }
      stats.reports += 1
      delivered += 1
      body(
        AdvertisingReport(
          pdu: .advDirectInd, address: address, addressType: at, directAddress: direct,
          rssi: ReportRSSI.decode(rssiRaw, in: .directed),
          data: UnsafeRawBufferPointer(start: nil, count: 0)))
    }
    return .reports(delivered)
  }

  // MARK: LE Extended Advertising Report (0x0D)

  private static let extendedFixed = 24

  private mutating func decodeExtended(
    _ params: UnsafeRawBufferPointer, _ body: (AdvertisingReport) -> Void
  ) -> Outcome {
    var r = ByteReader(params)
    guard let count = r.u8(), count >= 1 else {
      return .malformed("no reports in extended report event")
    }
    var probe = r
    for _ in 0..<count {
      guard probe.skip(Self.extendedFixed - 1), let len = probe.u8() else {
        return .malformed("extended report truncated")
      }
      guard probe.skip(Int(len)) else {
        return .malformed("extended advertising data overruns the event")
      }
    }
    guard probe.isAtEnd else { return .malformed("bytes left over after the last report") }

    var delivered = 0
    for _ in 0..<count {
      let eventType = r.u16le()!
      let addrType = r.u8()!
      let address = r.address()!
      let primaryPHY = r.u8()!
      let secondaryPHY = r.u8()!
      let sid = r.u8()!
      let tx = r.i8()!
      let rssiRaw = r.i8()!
      _ = r.u16le()!  // periodic advertising interval
      _ = r.u8()!  // direct address type
      let direct = r.address()!
      let len = Int(r.u8()!)
      let data = r.take(len)!

      guard let pdu = AdvertisingPDU(extendedEventType: eventType),
        let at = AddressType(rawValue: addrType),
        let status = DataStatus(rawValue: UInt8((eventType >> 5) & 0x3))
      else {
        stats.malformedReports += 1
        continue
      }
      var report = AdvertisingReport(
        pdu: pdu, address: address, addressType: at,
        directAddress: (eventType & 0x04) != 0 ? direct : nil,
        rssi: ReportRSSI.decode(rssiRaw, in: .extended), txPower: tx == 127 ? nil : tx,
        primaryPHY: primaryPHY, secondaryPHY: secondaryPHY, sid: sid == 0xFF ? nil : sid,
        dataStatus: status, data: data)

      let key = FragmentKey(address: address, addressType: addrType, sid: sid)
      if status == .incomplete {
        stats.fragments += 1
        var buffer = fragments.removeValue(forKey: key) ?? []
        guard buffer.count + len <= Self.maxExtendedDataLength else {
          stats.malformedReports += 1
          continue
        }
        buffer.append(contentsOf: data)
        if fragments.count >= Self.maxPendingChains {
          fragments.remove(at: fragments.startIndex)
        }
        fragments[key] = buffer
        continue
      }
      if status == .truncated { stats.truncated += 1 }
      // Most reports are whole: skip the hash lookup when nothing is pending.
      if !fragments.isEmpty, var buffer = fragments.removeValue(forKey: key) {
        // Last fragment: deliver the joined data.
        buffer.append(contentsOf: data)
        stats.reports += 1
        delivered += 1
        buffer.withUnsafeBytes { joined in
          report.data = joined
          body(report)
        }
        continue
      }
      stats.reports += 1
      delivered += 1
      body(report)
    }
    return .reports(delivered)
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
