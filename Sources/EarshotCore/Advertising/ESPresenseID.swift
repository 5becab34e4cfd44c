/// The device ids the ESPresense firmware gives beacons, so a beacon shows
/// under the same name in Earshot and in an ESPresense house.
///
/// Read from ESPresense v4.0.6, src/BleFingerprint.cpp
/// (`BleFingerprint::fingerprintManufactureData` and
/// `fingerprintServiceData`), built with NimBLE-Arduino 1.4.0. Its quirks,
/// kept on purpose because the ids are what people have in their configs:
///
/// - iBeacon: `iBeacon:<uuid>-<major>-<minor>`, the UUID lower case with
///   dashes (NimBLE's `ble_uuid_to_str`), major and minor in decimal. Only
///   Apple's exact layout (company 0x004C, 02 15, 25 bytes) gets it.
/// - AltBeacon: `altBeacon:<id1>-<id2>-<id3>`, but the firmware compares the
///   *company id* with `beac` (it prints bytes 1 and 0 of the manufacturer
///   data as hex), not the beacon code at bytes 2-3. So only an AltBeacon
///   whose company id is 0xBEAC (sent `ac be`) gets this id; with any real
///   company id the firmware makes a generic `md:<company>:26` id instead,
///   and this function returns `nil`. id1 is bytes 4-19 as a UUID, id2 and
///   id3 bytes 20-23 big-endian in decimal (it reuses its iBeacon decoder
///   on the first 25 bytes).
/// - Eddystone-UID: `eddy:<namespace>-<instance>` in lower-case hex, except
///   that the firmware's format arguments repeat the namespace's fifth byte:
///   the namespace part is 11 bytes long (bytes 0-4, byte 4 again, 5-9). The
///   firmware checks only the frame type; Earshot gives the id only for a
///   frame that decodes.
/// - Eddystone-URL, TLM, encrypted TLM and EID get no id of their own (the
///   firmware reads the power or telemetry and keeps the address's id).
///
/// The firmware hands the service-data bytes to `%02x` as plain `char`;
/// these ids assume two hex digits per byte, which is what it prints where
/// `char` is unsigned.
public enum ESPresenseID {
  /// The id ESPresense gives this frame, or `nil` where it gives the frame
  /// no beacon id (see above). Custom layouts have none.
  public static func id(for frame: BeaconFrame) -> String? {
    switch frame {
    case .iBeacon(let b):
      return iBeacon(b.id)
    case .altBeacon(let a):
      guard a.companyID == 0xBEAC else { return nil }
      return "altBeacon:\(a.id1.description.lowercased())-\(a.id2)-\(a.id3)"
    case .eddystoneUID(let u):
      return eddystone(namespace: u.namespace.description, instance: u.instance.description)
    case .eddystoneURL, .eddystoneTLM, .eddystoneEncryptedTLM, .eddystoneEID, .custom:
      return nil
    }
  }

  /// `iBeacon:<uuid, lower case, dashed>-<major>-<minor>`.
  public static func iBeacon(_ id: TrackedID) -> String {
    "iBeacon:\(id.uuid.description.lowercased())-\(id.major)-\(id.minor)"
  }

  /// `eddy:<namespace>-<instance>` from their lower-case hex (20 and 12
  /// digits), the namespace's fifth byte printed twice as the firmware does.
  public static func eddystone(namespace ns: String, instance: String) -> String {
    let cut = ns.index(ns.startIndex, offsetBy: 10)
    let fifth = ns[ns.index(cut, offsetBy: -2)..<cut]
    return "eddy:\(ns[..<cut])\(fifth)\(ns[cut...])-\(instance)"
  }
}
