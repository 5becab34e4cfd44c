import Synchronization

/// Kinds that a config adds: each `[layout "NAME"]` section whose identity
/// fits a `TrackedID` becomes a `TrackedKind` of its own, after the
/// built-in rows, so a region, rooms' `track`, MQTT slugs, the log and the
/// simulators name its beacons as they name an AltBeacon's
/// (`acme:010203040506:002a`).
///
/// The kinds are interned: the same layout (name and string) gives the
/// same kind for the life of the process, and a kind once given never
/// changes meaning, so ids made before a config was read again stay
/// valid. The layout of a name met last (registered or read again: the
/// config just read) takes the name; an earlier kind keeps its row. At most
/// `TrackedKind.maxCodes` kinds in all.
extension TrackedKind {
  /// Codes available: `code` is a byte.
  public static let maxCodes = 256

  /// The kind of a user layout, registered on first use; `nil` with the
  /// reason when the layout cannot name a tracked thing.
  public static func register(_ layout: BeaconLayout) -> Result<TrackedKind, LayoutKindError> {
    if let why = layout.trackingProblem { return .failure(LayoutKindError(reason: why)) }
    return registry.withLock { r in
      let name = layout.name.lowercased()
      if let code = r.codes[layout] {
        r.latest[name] = code
        return .success(TrackedKind(code: code))
      }
      let code = table.count + r.rows.count
      guard code < maxCodes else {
        return .failure(
          LayoutKindError(
            reason: "more than \(maxCodes - table.count) formats of your own read since the "
              + "agent started; restart it"))
      }
      r.rows.append(Row(layout: layout))
      r.codes[layout] = UInt8(code)
      r.latest[name] = UInt8(code)
      return .success(TrackedKind(code: UInt8(code)))
    }
  }

  /// The rows registered so far, in code order after `table`.
  static var layoutRows: [Row] { registry.withLock { $0.rows } }

  /// The kind a user layout's name gives: the layout of that name
  /// registered (or met again) last.
  static func layoutKind(named name: String) -> TrackedKind? {
    registry.withLock { $0.latest[name.lowercased()].map { TrackedKind(code: $0) } }
  }

  /// The user layout's row for a code past the built-in table.
  static func layoutRow(code: Int) -> Row {
    registry.withLock { $0.rows[code - table.count] }
  }

  private struct Registry: Sendable {
    var rows: [Row] = []
    var codes: [BeaconLayout: UInt8] = [:]
    /// Lower-cased name to the code of the layout of that name met last.
    var latest: [String: UInt8] = [:]
  }
  private static let registry = Mutex(Registry())
}

/// Why a layout of the user's cannot name tracked things.
public struct LayoutKindError: Error, Equatable, Sendable, CustomStringConvertible {
  public let reason: String
  public var description: String { reason }
}

extension BeaconLayout {
  /// Why this layout's frames cannot be tracked, or `nil`: a tracked
  /// thing needs a fixed identity of at most `TrackedID.capacity` bytes,
  /// and a name that can stand before a `:` and in an MQTT topic.
  public var trackingProblem: String? {
    if isExtraFrame { return "it is a telemetry layout ('x'): it names no beacon" }
    if identifiers.isEmpty { return "it has no identifier ('i' term)" }
    if identifiers.contains(where: \.variableLength) {
      return "a variable-length identifier ('v') is no fixed identity"
    }
    let size = identifiers.reduce(0) { $0 + $1.count }
    if size > TrackedID.capacity {
      return
        "its identifiers take \(size) bytes; a tracked beacon has at most \(TrackedID.capacity)"
    }
    let allowed = name.unicodeScalars.allSatisfy {
      $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_")
    }
    if !allowed || name.isEmpty {
      return "its name '\(name)' is not letters, digits and '_' (it is written before a ':' "
        + "and in MQTT topics)"
    }
    if name.utf8.allSatisfy({
      ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66)
    }) {
      return
        "its name '\(name)' is all hex digits (read back, it would be taken for an iBeacon's UUID)"
    }
    if TrackedKind.table.contains(where: { $0.name == name.lowercased() }) {
      return "'\(name)' is a built-in format's name"
    }
    return nil
  }

  /// The tracked beacon in one AD structure this layout accepts: the
  /// identifiers most significant byte first, the power at 1 m as the
  /// layout says (its byte plus its correction, clamped to a byte).
  func trackedBeacon(kind: TrackedKind, value v: UnsafeRawBufferPointer) -> TrackedBeacon {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(kind.size)
    for f in identifiers {
      let field = v[f.start...f.end]
      if f.littleEndian { bytes += field.reversed() } else { bytes += field }
    }
    let raw = Int(Int8(bitPattern: v[power!.start])) + powerCorrection
    return TrackedBeacon(
      id: TrackedID(kind: kind, bytes: bytes),
      measuredPower: Int8(clamping: raw))
  }

  /// AD data (flags first) holding `b`'s frame in this layout, the shortest
  /// the layout accepts: what the simulators send for a user kind. Bytes
  /// no term names are 0, but for a manufacturer frame's company id,
  /// 0xFFFF (the id the Bluetooth SIG keeps for tests) unless matched.
  func advertisingData(_ b: TrackedBeacon) -> [UInt8] {
    guard case .within(let sizes) = length else { preconditionFailure("a user layout's length") }
    var value = [UInt8](repeating: 0, count: sizes.lowerBound)
    let type: UInt8
    switch carrier {
    case .manufacturerData:
      type = ADType.manufacturerData
      value[0] = 0xFF
      value[1] = 0xFF
    case .serviceData16(let uuid):
      type = ADType.serviceData16
      value[0] = UInt8(uuid & 0xFF)
      value[1] = UInt8(uuid >> 8)
    }
    for m in matches { value.replaceSubrange(m.offset..<m.offset + m.bytes.count, with: m.bytes) }
    var offset = 0
    let id = b.id.bytes
    for f in identifiers {
      let field = Array(id[offset..<offset + f.count])
      value.replaceSubrange(f.start...f.end, with: f.littleEndian ? field.reversed() : field)
      offset += f.count
    }
    if let p = power {
      value[p.start] = UInt8(bitPattern: Int8(clamping: Int(b.measuredPower) - powerCorrection))
    }
    return [2, ADType.flags, 0x06, UInt8(value.count + 1), type] + value
  }
}

extension TrackedKind.Row {
  /// A user layout's row: its identifiers as hex fields `id1`, `id2`, …
  init(layout: BeaconLayout) {
    let fields = layout.identifiers.enumerated().map { i, f in
      TrackedKind.Field("id\(i + 1)", label: "ID\(i + 1)", size: f.count, .hex)
    }
    let name = layout.name
    self.init(
      name: name, bare: false, fields: fields,
      example: fields.map { String(repeating: "0", count: 2 * $0.size) }.joined(separator: ":"),
      label: { id in
        "\(name) " + id.kind.row.fields.indices.map { id.text(field: $0) }.joined(separator: "/")
      },
      advertisingData: { layout.advertisingData($0) })
  }
}

/// The user layouts a monitor tracks, each with its kind: tried after the
/// built-in formats, in file order, on reports the built-ins do not claim.
public struct LayoutKinds: Sendable {
  public let rows: [(layout: BeaconLayout, kind: TrackedKind)]

  public init(_ rows: [(layout: BeaconLayout, kind: TrackedKind)] = []) { self.rows = rows }

  public static let none = LayoutKinds()

  public var isEmpty: Bool { rows.isEmpty }

  /// The first tracked beacon a user layout finds in clean AD data.
  public func beacon(in data: UnsafeRawBufferPointer) -> TrackedBeacon? {
    guard !rows.isEmpty, ADWalker.isWellFormed(data) else { return nil }
    for ad in ADWalker(data) {
      // A structure a built-in row claims is that format's, as in
      // `BeaconClassifier`: a user row never takes it.
      if BeaconLayout.builtIn.contains(where: { $0.accepts(type: ad.type, value: ad.value) }) {
        continue
      }
      for row in rows where row.layout.accepts(type: ad.type, value: ad.value) {
        return row.layout.trackedBeacon(kind: row.kind, value: ad.value)
      }
    }
    return nil
  }
}
