/// The identity of one tracked thing: its kind and its identifier bytes
/// (up to 20, most significant first, zero after the kind's size). Several
/// advertisers sending the same identity are one thing (a beacon may rotate
/// its address). The iBeacon triple is one view of it (`uuid`, `major`,
/// `minor`, meaningful for the kinds of iBeacon's shape).
///
/// Kept as three integers so hashing and comparing cost what iBeacon's
/// triple did: the monitor looks one up per report.
public struct TrackedID: Hashable, Comparable, Sendable, CustomStringConvertible {
  /// Bytes 0-7, 8-15 and 16-19. (The kind last: 24 bytes in all, as
  /// iBeacon's triple took.)
  @usableFromInline let high: UInt64
  @usableFromInline let low: UInt64
  @usableFromInline let tail: UInt32
  public let kind: TrackedKind

  /// The most identifier bytes a kind may have.
  public static let capacity = 20

  @inlinable init(kind: TrackedKind, high: UInt64, low: UInt64, tail: UInt32) {
    self.kind = kind
    self.high = high
    self.low = low
    self.tail = tail
  }

  /// A kind of iBeacon's shape: a UUID and two 16-bit numbers.
  @inlinable public init(
    kind: TrackedKind = .iBeacon, uuid: BeaconUUID, major: UInt16, minor: UInt16
  ) {
    self.init(kind: kind, high: uuid.high, low: uuid.low, tail: UInt32(major) << 16 | UInt32(minor))
  }

  /// Any kind from its identifier bytes (`kind.size` of them).
  public init(kind: TrackedKind, bytes: some Collection<UInt8>) {
    precondition(bytes.count == kind.size && bytes.count <= Self.capacity)
    var h: UInt64 = 0
    var l: UInt64 = 0
    var t: UInt32 = 0
    for (i, b) in bytes.enumerated() {
      switch i {
      case 0..<8: h |= UInt64(b) << UInt64(8 * (7 - i))
      case 8..<16: l |= UInt64(b) << UInt64(8 * (15 - i))
      default: t |= UInt32(b) << UInt32(8 * (19 - i))
      }
    }
    self.init(kind: kind, high: h, low: l, tail: t)
  }

  /// An Eddystone-UID's identity: `namespace` (10 bytes), `instance` (6).
  public init(eddystoneNamespace namespace: BeaconBytes, instance: BeaconBytes) {
    precondition(namespace.count == 10 && instance.count == 6)
    self.init(
      kind: .eddystoneUID, bytes: (0..<16).map { $0 < 10 ? namespace[$0] : instance[$0 - 10] })
  }

  /// Identifier byte `i` (0 past the kind's size).
  public func byte(_ i: Int) -> UInt8 {
    switch i {
    case 0..<8: UInt8(truncatingIfNeeded: high >> UInt64(8 * (7 - i)))
    case 8..<16: UInt8(truncatingIfNeeded: low >> UInt64(8 * (15 - i)))
    case 16..<20: UInt8(truncatingIfNeeded: tail >> UInt32(8 * (19 - i)))
    default: 0
    }
  }

  /// The identifier bytes.
  public var bytes: [UInt8] { (0..<kind.size).map(byte) }

  /// Field `i`'s bytes.
  public func field(_ i: Int) -> [UInt8] {
    let row = kind.row
    let start = row.offset(of: i)
    return (start..<start + row.fields[i].size).map(byte)
  }

  // MARK: iBeacon's view

  /// Bytes 0-15: iBeacon's UUID, AltBeacon's id1, Eddystone's namespace
  /// then instance.
  @inlinable public var uuid: BeaconUUID { BeaconUUID(high: high, low: low) }
  /// Bytes 16-17: iBeacon's major, AltBeacon's id2.
  @inlinable public var major: UInt16 { UInt16(truncatingIfNeeded: tail >> 16) }
  /// Bytes 18-19: iBeacon's minor, AltBeacon's id3.
  @inlinable public var minor: UInt16 { UInt16(truncatingIfNeeded: tail) }

  // MARK: Text

  /// Field `i` as it is written (see `TrackedKind.Field.Text`).
  public func text(field i: Int) -> String {
    let f = kind.row.fields[i]
    let b = field(i)
    switch f.text {
    case .uuid:
      return BeaconUUID(bytes: b).description
    case .hex:
      return b.withUnsafeBytes { $0.hexString }
    case .decimal:
      return String(b.reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
    }
  }

  /// iBeacons as `UUID:MAJOR:MINOR` (unchanged since the first release);
  /// the others with their kind first: `altbeacon:ID1:ID2:ID3`,
  /// `eddystone:NAMESPACE:INSTANCE`.
  public var description: String {
    let row = kind.row
    let fields = row.fields.indices.map { text(field: $0) }.joined(separator: ":")
    return row.bare ? fields : row.name + ":" + fields
  }

  /// The identity's fields in a JSON line: iBeacons `uuid`, `major`,
  /// `minor` as always; the others the same after `"format":KIND`, with
  /// their own field names (Eddystone's `namespace` and `instance`).
  public func addFields(to j: inout JSONLine) {
    let row = kind.row
    if !row.bare { j.add("format", row.name) }
    for (i, f) in row.fields.enumerated() {
      if f.text == .decimal {
        j.add(f.name, Int(text(field: i))!)
      } else {
        j.add(f.name, text(field: i))
      }
    }
  }

  /// Its name in MQTT topics and Home Assistant ids (before
  /// `MQTTTopics.slug` makes it safe): the fields joined by `-`, the kind's
  /// name first unless bare (`uuid-major-minor`, `altbeacon-uuid-id2-id3`,
  /// `eddystone-namespace-instance`).
  public var slugText: String {
    let row = kind.row
    let fields = row.fields.indices.map { text(field: $0) }
    return ((row.bare ? [] : [row.name]) + fields).joined(separator: "-")
  }

  /// Reads back what `slugText` gave after `MQTTTopics.slug` (lower case):
  /// `nil` for anything else.
  public init?(slug: some StringProtocol) {
    var rest = Substring(slug)
    var kind = TrackedKind.iBeacon
    for k in TrackedKind.allCases.reversed()
    where !k.row.bare && rest.hasPrefix(k.name.lowercased() + "-") {
      kind = TrackedKind(name: k.name) ?? k  // a user layout's name: the one met last
      rest = rest.dropFirst(k.name.count + 1)
      break
    }
    var bytes: [UInt8] = []
    let fields = kind.row.fields
    for (i, f) in fields.enumerated() {
      let last = i == fields.count - 1
      let text: Substring
      switch f.text {
      case .uuid:
        guard rest.utf8.count >= 36 else { return nil }
        text = rest.prefix(36)
      case .hex:
        guard rest.utf8.count >= 2 * f.size else { return nil }
        text = rest.prefix(2 * f.size)
        guard text == text.lowercased()[...] else { return nil }
      case .decimal:
        text = rest.prefix { $0 != "-" }
      }
      rest = rest.dropFirst(text.count)
      guard let b = f.bytes(from: text) else { return nil }
      bytes += b
      if !last {
        guard rest.first == "-" else { return nil }
        rest = rest.dropFirst()
      }
    }
    guard rest.isEmpty else { return nil }
    self.init(kind: kind, bytes: bytes)
  }

  /// One thing as `description` prints it; `nil` for anything else, a
  /// match of several things included.
  public static func parse(_ text: String) -> TrackedID? {
    (try? TrackedMatch.parse(text))?.single
  }

  public static func < (a: TrackedID, b: TrackedID) -> Bool {
    (a.kind, a.high, a.low, a.tail) < (b.kind, b.high, b.low, b.tail)
  }
}

extension TrackedKind.Field {
  /// The field's bytes from its text; `nil` unless it is exactly one value
  /// of the field's size.
  func bytes(from text: some StringProtocol) -> [UInt8]? {
    switch self.text {
    case .uuid:
      guard let u = BeaconUUID(text) else { return nil }
      return (0..<16).map { u.byte($0) }
    case .hex:
      guard text.utf8.count == 2 * size, let b = hexDecoded(text), b.count == size else {
        return nil
      }
      return b
    case .decimal:
      guard text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let n = UInt64(text),
        size == 8 || n < UInt64(1) << UInt64(8 * size)
      else { return nil }
      return (0..<size).map { UInt8(truncatingIfNeeded: n >> UInt64(8 * (size - 1 - $0))) }
    }
  }

  /// The largest value of a decimal field.
  var maximum: UInt64 { size == 8 ? .max : (UInt64(1) << UInt64(8 * size)) - 1 }
}

extension BeaconUUID {
  /// From 16 bytes, most significant first.
  init(bytes b: [UInt8]) {
    precondition(b.count == 16)
    var h: UInt64 = 0
    var l: UInt64 = 0
    for i in 0..<8 { h = h << 8 | UInt64(b[i]) }
    for i in 8..<16 { l = l << 8 | UInt64(b[i]) }
    self.init(high: h, low: l)
  }

  /// Byte `i` (0-15), most significant first.
  func byte(_ i: Int) -> UInt8 {
    UInt8(truncatingIfNeeded: (i < 8 ? high : low) >> UInt64(8 * (7 - i % 8)))
  }
}
