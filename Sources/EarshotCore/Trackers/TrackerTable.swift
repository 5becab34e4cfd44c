// MARK: - The rows

extension TrackerProtocol {
  /// The tracker protocols Earshot knows, tried in this order; the first row
  /// an AD structure of a report matches decodes it. Service data rows come
  /// before the service-UUID-list rows of the same protocol, so a frame that
  /// carries both is read from its data.
  public static let table: [TrackerProtocol] = [
    // Apple Find My, separated: 0x12, length 0x19, status, key bytes 6-27,
    // the key's top two bits, a hint (25 bytes after the length byte; the
    // first six key bytes are the address). Heinrich et al., "Who Can Find
    // My Devices?" (PETS 2021); OpenHaystack; AirGuard AppleFindMy.kt reads
    // length 0x19 as "overmature offline", anything else as "connected".
    TrackerProtocol(
      name: "Find My (separated)", family: .findMy, carrier: .manufacturerData(company: 0x004C),
      matches: [Match(2, 0x12), Match(3, 0x19)], length: .exactly(29), identity: .address,
      source: "Heinrich et al. PETS 2021; OpenHaystack; AirGuard AppleFindMy.kt",
      decode: { appleStatus($0, state: .separated) }),
    // Apple Find My, near its owner: 0x12, length 0x02, status, hint. The
    // address rotates with the key (every 15 minutes): no handle.
    TrackerProtocol(
      name: "Find My (near owner)", family: .findMy, carrier: .manufacturerData(company: 0x004C),
      matches: [Match(2, 0x12), Match(3, 0x02)], length: .exactly(6), identity: .none,
      source: "Heinrich et al. PETS 2021; AirGuard AppleFindMy.kt",
      decode: { appleStatus($0, state: .nearOwner) }),
    // Google Find Hub (FMDN): Eddystone's UUID with frame type exactly 0x40
    // (normal) or 0x41 (unwanted-tracking protection mode), a 20-byte EID
    // (32 with a 256-bit curve: nRF Connect SDK's
    // CONFIG_BT_FAST_PAIR_FMDN_ECC_LEN) and the hashed flags byte, which
    // needs the owner's key to read (so no battery here). AirGuard-iOS
    // FMDN.swift reads the type's low bit as separated (0x41) or connected
    // (0x40), but takes every 0xFEAA frame, Eddystone beacons included.
    TrackerProtocol(
      name: "Find Hub", family: .findHub, carrier: .serviceData16(0xFEAA),
      matches: [Match(2, 0x40)], length: .either(24, 36), identity: .none,
      source: "Google Find Hub Network accessory spec; nRF Connect SDK fp_fmdn_state.c",
      decode: { _ in Fields(kind: .findHubTag, state: .nearOwner) }),
    // In 0x41 mode the EID still rotates but the address stays for ~24 h.
    TrackerProtocol(
      name: "Find Hub (separated)", family: .findHub, carrier: .serviceData16(0xFEAA),
      matches: [Match(2, 0x41)], length: .either(24, 36), identity: .address,
      source: "Google Find Hub Network accessory spec; nRF Connect SDK fp_fmdn_state.c",
      decode: { _ in Fields(kind: .findHubTag, state: .separated) }),
    // DULT (draft-ietf-dult-accessory-protocol): service data 0xFCB2, the
    // network id first (1 Apple, 2 Google). Where the draft puts the
    // near-owner bit could not be confirmed from a source at hand: unknown.
    TrackerProtocol(
      name: "DULT (Apple network)", family: .dult, carrier: .serviceData16(0xFCB2),
      matches: [Match(2, 0x01)], length: .within(3...29), identity: .none,
      source: "draft-ietf-dult-accessory-protocol",
      decode: { _ in Fields(kind: .dultApple, state: .unknown) }),
    TrackerProtocol(
      name: "DULT (Google network)", family: .dult, carrier: .serviceData16(0xFCB2),
      matches: [Match(2, 0x02)], length: .within(3...29), identity: .none,
      source: "draft-ietf-dult-accessory-protocol",
      decode: { _ in Fields(kind: .dultGoogle, state: .unknown) }),
    // Samsung SmartTag: service data 0xFD5A; byte 2 is 0b00010sss (AirGuard's
    // scan filter: 0x10 under mask 0xF8), sss the offline state; bytes 3-5
    // the aging counter (little-endian), 6-13 the rotating id, 14 the flags
    // (battery in bits 0-1) where present. AirGuard SamsungTracker.kt and
    // AirGuard-iOS SmartTag.swift.
    TrackerProtocol(
      name: "SmartTag", family: .smartTag, carrier: .serviceData16(0xFD5A),
      matches: [Match(2, 0x10, mask: 0xF8)], length: .within(14...29), identity: .agingCounter,
      source: "AirGuard SamsungTracker.kt; AirGuard-iOS SmartTag.swift",
      decode: smartTag),
    // Tile: its service (0xFEED, or 0xFEEC) as data or in a UUID list. The
    // payload's layout is not published; the address is static (AirGuard
    // Tile.kt, AirGuard-iOS Tile.swift), and the frame says no state.
    serviceDataRow("Tile", .tile, 0xFEED, kind: .tile),
    serviceDataRow("Tile", .tile, 0xFEEC, kind: .tile),
    // Chipolo (0xFE33): bit 0 of the first byte after the UUID is set when
    // the owner has not been seen for 30 minutes (AirGuard Chipolo.kt). A
    // clear bit means "seen within 30 minutes", not "near now": unknown.
    TrackerProtocol(
      name: "Chipolo", family: .chipolo, carrier: .serviceData16(0xFE33),
      matches: [], length: .within(4...29), identity: .address,
      source: "AirGuard Chipolo.kt; AirGuard-iOS Chipolo.swift",
      decode: { v in
        var r = ByteReader(v, offset: 3)
        return r.u8().map { Fields(kind: .chipolo, state: $0 & 0x01 != 0 ? .separated : .unknown) }
      }),
    // Pebblebee (0xFA25): static address, no state in the frame
    // (AirGuard PebbleBee.kt, AirGuard-iOS Pebblebee.swift).
    serviceDataRow("Pebblebee", .pebblebee, 0xFA25, kind: .pebblebee),
    uuidListRow("Tile", .tile, 0xFEED, kind: .tile),
    uuidListRow("Tile", .tile, 0xFEEC, kind: .tile),
    uuidListRow("Chipolo", .chipolo, 0xFE33, kind: .chipolo),
    uuidListRow("Pebblebee", .pebblebee, 0xFA25, kind: .pebblebee),
  ]

  private static func serviceDataRow(
    _ name: String, _ family: Family, _ uuid: UInt16, kind: TrackerKind
  ) -> TrackerProtocol {
    TrackerProtocol(
      name: name, family: family, carrier: .serviceData16(uuid), matches: [],
      length: .within(2...29), identity: .address, source: "AirGuard (Android and iOS)",
      decode: { _ in Fields(kind: kind, state: .unknown) })
  }

  private static func uuidListRow(
    _ name: String, _ family: Family, _ uuid: UInt16, kind: TrackerKind
  ) -> TrackerProtocol {
    TrackerProtocol(
      name: name + " (service list)", family: family, carrier: .serviceUUID16(uuid), matches: [],
      length: .within(2...BeaconLayout.maximumFrameLength), identity: .address,
      source: "AirGuard (Android and iOS)",
      decode: { _ in Fields(kind: kind, state: .unknown) })
  }

  /// Apple's status byte (value byte 4): bits 4-5 the kind, bits 6-7 the
  /// battery (0 full .. 3 very low).
  static func appleStatus(_ v: UnsafeRawBufferPointer, state: TrackerState) -> Fields? {
    var r = ByteReader(v, offset: 4)
    guard let status = r.u8() else { return nil }
    let kinds: [TrackerKind] = [.appleDevice, .airTag, .findMyAccessory, .airPods]
    return Fields(
      kind: kinds[Int(status >> 4 & 0x03)], state: state,
      battery: TrackerBattery.allCases[Int(status >> 6)])
  }

  /// SmartTag's offline state (the low three bits of byte 2), as AirGuard
  /// reads them: 1 premature offline (just lost its owner), 2 offline, 3
  /// overmature offline, 5 connected. Premature offline and the values no
  /// source names stay unknown.
  static func smartTag(_ v: UnsafeRawBufferPointer) -> Fields? {
    var r = ByteReader(v, offset: 2)
    guard let head = r.u8(), let a0 = r.u8(), let a1 = r.u8(), let a2 = r.u8(),
      let id = r.u64be()
    else { return nil }
    let state: TrackerState =
      switch head & 0x07 {
      case 2, 3: .separated
      case 5: .nearOwner
      default: .unknown
      }
    // Flags: bits 0-1 the battery, 3 full down to 0 very low.
    let battery = r.u8().map { TrackerBattery.allCases[3 - Int($0 & 0x03)] }
    let counter = UInt32(a0) | UInt32(a1) << 8 | UInt32(a2) << 16
    return Fields(
      kind: .smartTag, state: state, battery: battery,
      aging: SmartTagAging(counter: counter, id: id))
  }
}
