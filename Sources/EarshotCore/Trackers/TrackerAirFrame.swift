/// Advertising data of made-up tracker frames, as the rows of
/// `TrackerProtocol.table` read them (the simulators' frames).
public enum TrackerAirFrame {
  /// Find My, separated: status (kind in bits 4-5), 22 key bytes, bits, hint.
  public static func findMySeparated(kind: UInt8, key: UInt64) -> [UInt8] {
    var v: [UInt8] = [0x4C, 0x00, 0x12, 0x19, (kind & 3) << 4]
    for i in 0..<22 { v.append(UInt8(truncatingIfNeeded: key >> (8 * UInt64(i % 8)) &+ UInt64(i))) }
    v += [0x01, 0x00]
    return [UInt8(v.count + 1), 0xFF] + v
  }

  /// Find My near its owner: status and hint.
  public static func findMyNearOwner(kind: UInt8) -> [UInt8] {
    [0x07, 0xFF, 0x4C, 0x00, 0x12, 0x02, (kind & 3) << 4, 0x00]
  }

  /// Find Hub: frame type 0x41 (separated) or 0x40, a 20-byte EID, flags.
  public static func findHub(separated: Bool, eid: UInt64) -> [UInt8] {
    var v: [UInt8] = [0xAA, 0xFE, separated ? 0x41 : 0x40]
    for i in 0..<20 { v.append(UInt8(truncatingIfNeeded: eid >> (8 * UInt64(i % 8)) ^ UInt64(i))) }
    v.append(0x00)
    return [UInt8(v.count + 1), 0x16] + v
  }

  /// SmartTag: offline state (2, 3 separated; 5 connected), aging counter, id, flags.
  public static func smartTag(state: UInt8, counter: UInt32, id: UInt64) -> [UInt8] {
    var v: [UInt8] = [0x5A, 0xFD, 0x10 | (state & 7)]
    v += [UInt8(counter & 0xFF), UInt8(counter >> 8 & 0xFF), UInt8(counter >> 16 & 0xFF)]
    for i in (0..<8).reversed() { v.append(UInt8(truncatingIfNeeded: id >> (8 * UInt64(i)))) }
    v.append(0x03)
    return [UInt8(v.count + 1), 0x16] + v
  }

  /// Chipolo: bit 0 set when its owner was not seen for 30 minutes.
  public static func chipolo(separated: Bool) -> [UInt8] {
    [0x05, 0x16, 0x33, 0xFE, separated ? 0x01 : 0x00, 0x00]
  }

  /// Tile: its service UUID in a complete list.
  public static let tile: [UInt8] = [0x03, 0x03, 0xED, 0xFE]
}
