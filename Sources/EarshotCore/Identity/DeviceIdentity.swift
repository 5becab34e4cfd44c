/// A device a region can name: by its identity address (`device =`, or a
/// bond), by a key given by hand (`irk =`), or both when a bonded device's
/// key is also written in the config. Regions match on either part.
public struct DeviceIdentity: Hashable, Sendable, Comparable, CustomStringConvertible {
  /// The public or static random identity address, when known.
  public let address: BDAddress?
  /// The key that resolves its private addresses, when it has one.
  public let irk: IdentityResolvingKey?

  public init(address: BDAddress?, irk: IdentityResolvingKey?) {
    precondition(address != nil || irk != nil, "a device is known by an address or a key")
    self.address = address
    self.irk = irk
  }

  /// The identity address, or for a key given by hand a short tag that
  /// tells keys apart without printing the key (outputs and logs are less
  /// guarded than the config).
  public var description: String { address?.description ?? "irk#" + (irk?.tag ?? "") }

  public static func < (a: DeviceIdentity, b: DeviceIdentity) -> Bool {
    (a.address?.raw ?? .max, a.irk?.value.high ?? 0, a.irk?.value.low ?? 0)
      < (b.address?.raw ?? .max, b.irk?.value.high ?? 0, b.irk?.value.low ?? 0)
  }
}

extension IdentityResolvingKey {
  /// Eight hex digits of FNV-1a over the key: names a key in outputs and
  /// the state file without giving it away.
  public var tag: String {
    var h: UInt32 = 0x811C_9DC5
    for word in [value.high, value.low] {
      for shift in stride(from: 56, through: 0, by: -8) {
        h = (h ^ UInt32(truncatingIfNeeded: word >> UInt64(shift) & 0xFF)) &* 0x0100_0193
      }
    }
    let s = String(h, radix: 16)
    return String(repeating: "0", count: 8 - s.count) + s
  }
}

/// What the monitor tracks: an iBeacon identity, or a device.
public typealias TrackKey = BeaconOrDevice<DeviceIdentity>
