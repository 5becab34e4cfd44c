/// Remembers each advertiser's last scannable advertisement so that a
/// SCAN_RSP can be shown together with the ADV_IND / ADV_SCAN_IND it
/// answers (a beacon may put its iBeacon frame in either).
///
/// Memory is bounded: past `capacity` advertisers the oldest half is forgotten.
public struct ScanResponseMerger {
  private var last: [BDAddress: [UInt8]] = [:]
  public let capacity: Int

  public init(capacity: Int = 4096) { self.capacity = capacity }

  /// Advertisers remembered now (never more than `capacity`).
  public var count: Int { last.count }

  /// Records an advertisement; for a scan response, calls `body` with the
  /// advertiser's previous advertising data (empty if none was seen).
  public mutating func observe(
    _ report: AdvertisingReport, _ body: (UnsafeRawBufferPointer) -> Void
  ) {
    if report.pdu.isScanResponse {
      if let previous = last[report.address] {
        previous.withUnsafeBytes(body)
      } else {
        body(UnsafeRawBufferPointer(start: nil, count: 0))
      }
      return
    }
    guard report.pdu.isScannable else { return }
    if last.count >= capacity, last[report.address] == nil {
      for key in last.keys.prefix(capacity / 2) { last.removeValue(forKey: key) }
    }
    // Reuse the stored array's capacity: no allocation once an advertiser is known.
    last[report.address, default: []].replaceSubrange(0..., with: report.data)
  }
}
