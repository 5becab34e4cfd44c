/// Tracker protocols as table rows, in the spirit of BlueZ's monitor/packet.c
/// tables and `BeaconLayout.builtIn`: where a tracker's frame lives (its
/// carrier), the bytes and length that say "this is the protocol", the
/// identity handle it keeps across rotations, and a decoder of its fields
/// (state, kind, battery). docs/trackers.md is the same table in prose, with
/// its sources and the facts that could not be confirmed.
///
/// Offsets count as `BeaconLayout` counts them: from the first byte of the AD
/// structure's value, so a company id or a 16-bit service UUID is at 0-1.
public struct TrackerProtocol: Sendable, CustomStringConvertible {
  /// The protocol family a row belongs to (several rows may share one).
  public enum Family: String, Hashable, Sendable, CaseIterable {
    case findMy = "find_my"
    case findHub = "find_hub"
    case dult
    case smartTag = "smarttag"
    case tile
    case chipolo
    case pebblebee
  }

  /// Where the frame lives in the advertising data.
  public enum Carrier: Hashable, Sendable {
    /// Manufacturer data (AD 0xFF) with this company id (bytes 0-1, little-endian).
    case manufacturerData(company: UInt16)
    /// Service data for a 16-bit UUID (AD 0x16; the UUID at bytes 0-1, little-endian).
    case serviceData16(UInt16)
    /// A 16-bit UUID in a service UUID list (AD 0x02 or 0x03): the frame
    /// names the service and carries no data of it.
    case serviceUUID16(UInt16)
  }

  /// Bits that must be at an offset: `value[offset] & mask == bits`.
  public struct Match: Hashable, Sendable {
    public let offset: Int
    public let bits: UInt8
    public let mask: UInt8

    public init(_ offset: Int, _ bits: UInt8, mask: UInt8 = 0xFF) {
      self.offset = offset
      self.bits = bits
      self.mask = mask
    }
  }

  /// Where a row's identity handle comes from, if it has one.
  public enum IdentityRule: Hashable, Sendable {
    /// No handle: the address and the payload rotate together.
    case none
    /// The advertiser's address, stable while the frame says this state.
    case address
    /// SmartTag: the aging counter with the rotating id.
    case agingCounter
  }

  /// What a row's decoder reads from a matching frame.
  public struct Fields: Hashable, Sendable {
    public var kind: TrackerKind
    public var state: TrackerState
    public var battery: TrackerBattery?
    public var aging: SmartTagAging?

    public init(
      kind: TrackerKind, state: TrackerState, battery: TrackerBattery? = nil,
      aging: SmartTagAging? = nil
    ) {
      self.kind = kind
      self.state = state
      self.battery = battery
      self.aging = aging
    }
  }

  public let name: String
  public let family: Family
  public let carrier: Carrier
  public let matches: [Match]
  /// The AD value sizes the row accepts (a service UUID list: any even size).
  public let length: BeaconLayout.Length
  public let identity: IdentityRule
  /// Where the row's facts come from (docs/trackers.md has the details).
  public let source: String
  /// Reads the fields of a value the row accepts; `nil` refuses it.
  public let decode: @Sendable (UnsafeRawBufferPointer) -> Fields?

  public var description: String { name }

  /// Whether an AD structure carries this row's frame: right carrier, right
  /// length, match bits in place. The fields are not read.
  public func accepts(type: UInt8, value v: UnsafeRawBufferPointer) -> Bool {
    switch carrier {
    case .manufacturerData(let company):
      guard type == ADType.manufacturerData, v.count >= 2,
        UInt16(v[0]) | UInt16(v[1]) << 8 == company
      else { return false }
    case .serviceData16(let uuid):
      guard type == ADType.serviceData16, v.count >= 2,
        UInt16(v[0]) | UInt16(v[1]) << 8 == uuid
      else { return false }
    case .serviceUUID16(let uuid):
      // 0x02 incomplete and 0x03 complete lists: UUIDs, two bytes each.
      guard type == 0x02 || type == 0x03, v.count % 2 == 0 else { return false }
      return stride(from: 0, to: v.count, by: 2).contains {
        UInt16(v[$0]) | UInt16(v[$0 + 1]) << 8 == uuid
      }
    }
    guard length.accepts(v.count) else { return false }
    for m in matches {
      guard m.offset < v.count, v[m.offset] & m.mask == m.bits else { return false }
    }
    return true
  }
}

/// Whether the tracker says it is with its owner.
public enum TrackerState: String, Hashable, Sendable, CaseIterable {
  /// Away from its owner's devices: the state in which a tracker can follow
  /// someone else.
  case separated
  /// With (or recently with) its owner's devices.
  case nearOwner = "near_owner"
  /// The frame does not say, or its bits could not be confirmed.
  case unknown
}

/// What sort of device the frame says it is.
public enum TrackerKind: String, Hashable, Sendable, CaseIterable {
  case appleDevice = "apple_device"
  case airTag = "airtag"
  case findMyAccessory = "find_my_accessory"
  case airPods = "airpods"
  case findHubTag = "find_hub_tag"
  case dultApple = "dult_apple"
  case dultGoogle = "dult_google"
  case smartTag = "smarttag"
  case tile
  case chipolo
  case pebblebee
}

/// A battery level as the frames carry it: four steps.
public enum TrackerBattery: String, Hashable, Sendable, CaseIterable {
  case full, medium, low
  case veryLow = "very_low"
}

/// SmartTag's handle across rotations: the aging counter (one up at each
/// rotation) and the 8-byte id it was sent with.
public struct SmartTagAging: Hashable, Sendable {
  public let counter: UInt32
  public let id: UInt64

  public init(counter: UInt32, id: UInt64) {
    self.counter = counter
    self.id = id
  }
}

/// One physical tracker's handle across its rotations, where its protocol
/// has one (docs/trackers.md, "One identity per tracker", says the limits).
public enum TrackerIdentity: Hashable, Sendable, CustomStringConvertible {
  case address(BDAddress)
  case smartTag(SmartTagAging)

  public var description: String {
    switch self {
    case .address(let a): "address \(a)"
    case .smartTag(let s):
      "aging \(s.counter) id " + String(s.id, radix: 16, uppercase: true)
    }
  }
}
