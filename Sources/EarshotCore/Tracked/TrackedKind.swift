/// A kind of tracked thing (a beacon format today, a tracker protocol next)
/// as one row of `TrackedKind.table`: its name, and its identity's fields
/// with their sizes and how people write them. Everything that names a
/// tracked thing (descriptions, JSON lines, region and `track` matches,
/// MQTT slugs, the log) works from the row, so a new kind is a new row,
/// the decoder that finds its frames, and (for the simulators) its encoder.
public struct TrackedKind: Hashable, Comparable, Sendable, CustomStringConvertible {
  /// The row's index in `table`.
  public let code: UInt8

  @inlinable init(code: UInt8) { self.code = code }

  public static let iBeacon = TrackedKind(code: 0)
  /// AltBeacon: id1 is a UUID, id2 and id3 16-bit numbers (iBeacon's shape).
  public static let altBeacon = TrackedKind(code: 1)
  /// Eddystone-UID: a 10-byte namespace and a 6-byte instance.
  public static let eddystoneUID = TrackedKind(code: 2)

  /// The built-in kinds, then those user layouts registered (`register`).
  public static var allCases: [TrackedKind] {
    (0..<table.count + layoutRows.count).map { TrackedKind(code: UInt8($0)) }
  }

  public var row: Row {
    Int(code) < Self.table.count ? Self.table[Int(code)] : Self.layoutRow(code: Int(code))
  }
  /// As configs, events and the CLI name it (`ibeacon`, `altbeacon`, `eddystone`).
  public var name: String { row.name }
  public var description: String { name }
  /// Bytes of identity, all fields together (at most `TrackedID.capacity`).
  public var size: Int { row.size }

  /// The kind a name gives (`ibeacon`, a user layout's name; any case),
  /// or `nil`. Of two user layouts of one name, the one met last.
  public init?(name: some StringProtocol) {
    let lower = name.lowercased()
    if let i = Self.table.firstIndex(where: { $0.name == lower }) {
      code = UInt8(i)
      return
    }
    guard let kind = Self.layoutKind(named: lower) else { return nil }
    code = kind.code
  }

  /// Whether its identity is iBeacon's shape (a UUID and two 16-bit
  /// numbers), so that the `uuid`, `major` and `minor` views mean something.
  public var hasUUIDShape: Bool {
    let f = row.fields
    return f.count == 3 && f[0].text == .uuid && f[1].size == 2 && f[2].size == 2
  }

  public static func < (a: TrackedKind, b: TrackedKind) -> Bool { a.code < b.code }
}

extension TrackedKind {
  /// One field of an identity: consecutive bytes, most significant first.
  public struct Field: Sendable {
    /// How the field is written in text.
    public enum Text: Sendable {
      /// 16 bytes as `8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182` (upper case;
      /// read in any case, dashes optional).
      case uuid
      /// Lower-case hex digits, two per byte (read in any case).
      case hex
      /// An unsigned number in decimal (at most 8 bytes).
      case decimal
    }

    /// Its key in JSON lines.
    public let name: String
    /// What people call it in messages (`ID2`, `NAMESPACE`).
    public let label: String
    public let size: Int
    public let text: Text

    public init(_ name: String, label: String, size: Int, _ text: Text) {
      precondition(text != .uuid || size == 16)
      precondition(text != .decimal || size <= 8)
      self.name = name
      self.label = label
      self.size = size
      self.text = text
    }
  }

  /// One kind as a table row.
  public struct Row: Sendable {
    public let name: String
    /// Written without its name first: iBeacons, as since the first release
    /// (`UUID:MAJOR:MINOR`, `uuid-major-minor`, no `format` in JSON).
    public let bare: Bool
    public let fields: [Field]
    /// An example of the whole identity as `TrackedMatch.parse` reads it
    /// (without the kind's name), for messages.
    public let example: String
    /// Its name in Home Assistant's entity names (`Beacon 1/10`).
    public let label: @Sendable (TrackedID) -> String
    /// AD data (flags first) holding the frame, as the simulators send it.
    public let advertisingData: @Sendable (TrackedBeacon) -> [UInt8]

    public var size: Int { fields.reduce(0) { $0 + $1.size } }

    /// Byte offset of field `i` in the identity.
    public func offset(of i: Int) -> Int { fields[..<i].reduce(0) { $0 + $1.size } }

    /// `ID1[:ID2[:ID3]]`: the form a match is written in.
    public var form: String {
      let labels = fields.map(\.label)
      return labels[0] + labels.dropFirst().map { "[:" + $0 }.joined()
        + String(repeating: "]", count: labels.count - 1)
    }
  }

  private static let uuidShape = [
    Field("uuid", label: "UUID", size: 16, .uuid),
    Field("major", label: "MAJOR", size: 2, .decimal),
    Field("minor", label: "MINOR", size: 2, .decimal),
  ]

  /// The kinds. A row's position is its code: append, never reorder.
  public static let table: [Row] = [
    Row(
      name: "ibeacon", bare: true, fields: uuidShape,
      example: "8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182:1:10",
      label: { "Beacon \($0.major)/\($0.minor)" },
      advertisingData: HCIEventEncoder.iBeaconAdvertisingData),
    Row(
      name: "altbeacon", bare: false,
      fields: [
        Field("uuid", label: "ID1", size: 16, .uuid),
        Field("major", label: "ID2", size: 2, .decimal),
        Field("minor", label: "ID3", size: 2, .decimal),
      ],
      example: "2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6:1:2",
      label: { "Beacon \($0.major)/\($0.minor)" },
      advertisingData: HCIEventEncoder.altBeaconAdvertisingData),
    Row(
      name: "eddystone", bare: false,
      fields: [
        Field("namespace", label: "NAMESPACE", size: 10, .hex),
        Field("instance", label: "INSTANCE", size: 6, .hex),
      ],
      example: "8f2c1a3e5b7d4e90a1c2:000000000001",
      label: { "Eddystone \($0.text(field: 1))" },
      advertisingData: HCIEventEncoder.eddystoneUIDAdvertisingData),
  ]
}
