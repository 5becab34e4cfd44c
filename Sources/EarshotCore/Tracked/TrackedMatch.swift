/// One tracked thing, or every thing of a kind sharing some of its
/// identity's fields, as a region, rooms' `track` and `earshot log --beacon`
/// name it. One parser and one matching rule for all three, from the kind's
/// row (`TrackedKind.table`):
/// - `UUID[:MAJOR[:MINOR]]` (or `ibeacon:UUID…`): iBeacons;
/// - `altbeacon:ID1[:ID2[:ID3]]`: AltBeacons, any company;
/// - `eddystone:NAMESPACE[:INSTANCE]`: Eddystone-UIDs (20 and 12 hex digits);
/// - any other kind: its name, then its fields, the leading ones given.
public struct TrackedMatch: Sendable, Equatable, CustomStringConvertible {
  public let kind: TrackedKind
  /// The given fields' bytes; zero in the others.
  public let id: TrackedID
  /// Which fields are given: bit `i` for field `i`.
  public let given: UInt32
  /// The given fields' bytes as a mask over `TrackedID`'s words: a match
  /// is three ANDs and compares, whatever the kind.
  @usableFromInline let maskHigh: UInt64
  @usableFromInline let maskLow: UInt64
  @usableFromInline let maskTail: UInt32

  /// `values[i]` is field `i`'s bytes, or `nil` where any value matches.
  public init(kind: TrackedKind, values: [[UInt8]?]) {
    let row = kind.row
    precondition(values.count == row.fields.count)
    var bytes = [UInt8](repeating: 0, count: row.size)
    var mask = [UInt8](repeating: 0, count: row.size)
    var given: UInt32 = 0
    for (i, v) in values.enumerated() {
      guard let v else { continue }
      precondition(v.count == row.fields[i].size)
      let start = row.offset(of: i)
      bytes.replaceSubrange(start..<start + v.count, with: v)
      mask.replaceSubrange(start..<start + v.count, with: repeatElement(0xFF, count: v.count))
      given |= 1 << UInt32(i)
    }
    let m = TrackedID(kind: kind, bytes: mask)
    self.kind = kind
    self.id = TrackedID(kind: kind, bytes: bytes)
    self.given = given
    maskHigh = m.high
    maskLow = m.low
    maskTail = m.tail
  }

  /// Exactly one thing.
  public init(_ id: TrackedID) {
    self.init(kind: id.kind, values: id.kind.row.fields.indices.map { id.field($0) })
  }

  /// A kind of iBeacon's shape: a UUID, and the numbers when given.
  public init(
    kind: TrackedKind = .iBeacon, uuid: BeaconUUID, major: UInt16? = nil, minor: UInt16? = nil
  ) {
    func be(_ n: UInt16?) -> [UInt8]? { n.map { [UInt8($0 >> 8), UInt8($0 & 0xFF)] } }
    self.init(kind: kind, values: [(0..<16).map { uuid.byte($0) }, be(major), be(minor)])
  }

  /// Every beacon of one Eddystone namespace, or one beacon of it.
  public init(eddystoneNamespace namespace: BeaconBytes, instance: BeaconBytes?) {
    self.init(
      kind: .eddystoneUID,
      values: [(0..<10).map { namespace[$0] }, instance.map { i in (0..<6).map { i[$0] } }])
  }

  @inlinable public func matches(_ other: TrackedID) -> Bool {
    other.kind == kind && other.high & maskHigh == id.high && other.low & maskLow == id.low
      && other.tail & maskTail == id.tail
  }

  /// Whether field `i` is given.
  public func gives(field i: Int) -> Bool { given & 1 << UInt32(i) != 0 }

  /// The one thing the match names, when it names exactly one.
  public var single: TrackedID? {
    given == (UInt32(1) << UInt32(kind.row.fields.count)) - 1 ? id : nil
  }

  /// Identifier bytes 0-15 when the match pins all of them (an index
  /// lookup can use them): iBeacon's UUID, an Eddystone namespace with its
  /// instance; `nil` for a namespace alone, whose instances vary.
  public var wholeUUID: BeaconUUID? {
    maskHigh == .max && maskLow == .max ? id.uuid : nil
  }

  // iBeacon's view, for kinds of its shape.
  public var uuid: BeaconUUID { id.uuid }
  public var major: UInt16? { gives(field: 1) ? id.major : nil }
  public var minor: UInt16? { gives(field: 2) ? id.minor : nil }

  /// As it is written: `parse(m.description) == m`.
  public var description: String {
    let row = kind.row
    let fields = row.fields.indices.prefix { gives(field: $0) }.map { id.text(field: $0) }
    return (row.bare ? "" : row.name + ":") + fields.joined(separator: ":")
  }

  /// Reads any of the forms above; the error says which form was expected.
  public static func parse(_ text: String) throws -> TrackedMatch {
    var kind = TrackedKind.iBeacon
    var rest = Substring(text)
    if let colon = text.firstIndex(of: ":"), let k = TrackedKind(name: text[..<colon]) {
      kind = k
      rest = text[text.index(after: colon)...]
    }
    return try parse(rest, as: kind)
  }

  /// The fields of one kind: `F1[:F2[:F3]]`, the leading ones given.
  public static func parse(_ text: some StringProtocol, as kind: TrackedKind) throws -> TrackedMatch
  {
    let row = kind.row
    let whole = String(text)
    let parts = whole.split(separator: ":", omittingEmptySubsequences: false).map {
      ConfigValue.trim($0)
    }
    guard (1...row.fields.count).contains(parts.count) else {
      throw ConfigValueError(
        row.bare
          ? "'\(whole)' is not a beacon: give "
            + TrackedKind.allCases.map { ($0.row.bare ? "" : $0.name + ":") + $0.row.form }
            .joined(separator: ", ")
          : "'\(whole)' is not \(row.form); e.g. \(row.example)")
    }
    var values: [[UInt8]?] = Array(repeating: nil, count: row.fields.count)
    for (i, p) in parts.enumerated() {
      let f = row.fields[i]
      guard let b = f.bytes(from: p) else {
        switch f.text {
        case .uuid: _ = try ConfigValue.uuid(p)  // throws its message
        case .decimal:
          throw ConfigValueError("'\(p)' in '\(whole)' is not a number from 0 to \(f.maximum)")
        case .hex:
          throw ConfigValueError(
            "'\(p)' is not a \(f.label.lowercased()): \(2 * f.size) hex digits, e.g. \(row.example)"
          )
        }
        throw ConfigValueError("'\(p)' is not a \(f.label.lowercased())")
      }
      values[i] = b
    }
    return TrackedMatch(kind: kind, values: values)
  }
}
