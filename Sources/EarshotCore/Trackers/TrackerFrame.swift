/// One tracker frame, decoded by a row of `TrackerProtocol.table`.
public struct TrackerFrame: Hashable, Sendable, CustomStringConvertible {
  /// The row's index in `TrackerProtocol.table`.
  public let rowIndex: Int
  public let kind: TrackerKind
  public let state: TrackerState
  public let battery: TrackerBattery?
  /// The handle that outlives the frame's rotations, where the protocol has
  /// one and the frame is in the state that keeps it.
  public let identity: TrackerIdentity?

  public var row: TrackerProtocol { TrackerProtocol.table[rowIndex] }
  public var family: TrackerProtocol.Family { row.family }

  public var description: String {
    var text = "\(row.name): \(kind.rawValue) \(state.rawValue)"
    if let battery { text += " battery \(battery.rawValue)" }
    if let identity { text += " \(identity)" }
    return text
  }

  /// The tracker frame in a report's advertising data, or `nil`. Data that
  /// does not walk cleanly is not trusted, whatever it holds; of several
  /// structures that match, the earliest row in the table wins.
  public static func decode(advertisingData data: UnsafeRawBufferPointer, address: BDAddress)
    -> TrackerFrame?
  {
    var walker = ADWalker(data)
    var best: (row: Int, fields: TrackerProtocol.Fields)? = nil
    while let ad = walker.next() {
      for (i, row) in TrackerProtocol.table.enumerated() where i < (best?.row ?? .max) {
        guard row.accepts(type: ad.type, value: ad.value), let f = row.decode(ad.value) else {
          continue
        }
        best = (i, f)
        break
      }
    }
    guard !walker.isMalformed, let best else { return nil }
    let row = TrackerProtocol.table[best.row]
    let identity: TrackerIdentity? =
      switch row.identity {
      case .none: nil
      case .agingCounter: best.fields.aging.map { .smartTag($0) }
      case .address:
        // Apple's separated address is random static (top bits 11) and
        // holds key bytes; any other address is not the key's.
        row.family == .findMy && address.raw >> 46 != 0b11 ? nil : .address(address)
      }
    return TrackerFrame(
      rowIndex: best.row, kind: best.fields.kind, state: best.fields.state,
      battery: best.fields.battery, identity: identity)
  }

  public static func decode(advertisingData data: [UInt8], address: BDAddress) -> TrackerFrame? {
    data.withUnsafeBytes { decode(advertisingData: $0, address: address) }
  }
}
