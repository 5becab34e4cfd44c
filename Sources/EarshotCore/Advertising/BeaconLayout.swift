/// One beacon format as a table row, in the spirit of BlueZ's monitor/packet.c
/// tables: where the frame lives, the bytes that say "this is the format",
/// and the byte ranges of its fields. Built-in formats are rows of
/// `BeaconLayout.builtIn`; a user's format is a row parsed from an
/// AltBeacon-library layout string (`BeaconLayout(parsing:)`).
///
/// Offsets count the way the Android Beacon Library counts them: from the
/// first byte of the AD structure's value. For manufacturer data that is the
/// 2-byte company id (so the AltBeacon code `beac` is at 2-3); for service
/// data it is the 2-byte service UUID (so an Eddystone frame type is at 2).
/// The library's `Pdu.getStartIndex()` is the byte after the AD type for both,
/// and every layout offset is added to it.
public struct BeaconLayout: Hashable, Sendable, CustomStringConvertible {
  /// Where the frame lives in the advertising data.
  public enum Carrier: Hashable, Sendable {
    /// Manufacturer-specific data (AD 0xFF); bytes 0-1 are the company id.
    case manufacturerData
    /// Service data for a 16-bit UUID (AD 0x16). The UUID is little-endian
    /// on the air, as the Core Specification Supplement has it: 0xFEAA is
    /// sent `aa fe`, and written `s:0-1=feaa` in a layout string.
    case serviceData16(UInt16)
  }

  /// What a decoded frame becomes: a typed built-in, or `.custom`.
  public enum Kind: Hashable, Sendable {
    case iBeacon, altBeacon, eddystoneUID, eddystoneURL, eddystoneTLM, eddystoneEncryptedTLM
    case eddystoneEID, custom
  }

  /// An inclusive byte range, as `i:4-19` writes it.
  public struct Field: Hashable, Sendable {
    public let start: Int
    public let end: Int
    /// `l`: stored least significant byte first (decoded values are always
    /// given most significant byte first).
    public let littleEndian: Bool
    /// `v`: may stop early at the end of the frame (at least one byte).
    public let variableLength: Bool

    public init(_ start: Int, _ end: Int, littleEndian: Bool = false, variableLength: Bool = false)
    {
      self.start = start
      self.end = end
      self.littleEndian = littleEndian
      self.variableLength = variableLength
    }

    public var count: Int { end - start + 1 }
  }

  /// Bytes that must be at an offset (`m:2-3=beac`).
  public struct Match: Hashable, Sendable {
    public let offset: Int
    public let bytes: [UInt8]

    public init(offset: Int, bytes: [UInt8]) {
      self.offset = offset
      self.bytes = bytes
    }
  }

  /// The frame sizes (bytes of the AD value) a row accepts.
  public enum Length: Hashable, Sendable {
    case exactly(Int)
    /// Eddystone-UID: 20 bytes, or 22 with the two reserved bytes.
    case either(Int, Int)
    case within(ClosedRange<Int>)

    @inlinable public func accepts(_ n: Int) -> Bool {
      switch self {
      case .exactly(let a): n == a
      case .either(let a, let b): n == a || n == b
      case .within(let r): r.contains(n)
      }
    }
  }

  public let name: String
  public let kind: Kind
  public let carrier: Carrier
  public let matches: [Match]
  public let identifiers: [Field]
  public let power: Field?
  /// Added to the power byte (`p:3-3:-41`): Eddystone sends the power at
  /// 0 m, and 41 dB is the loss over the first metre.
  public let powerCorrection: Int
  public let data: [Field]
  /// `x`: a frame with no identity of its own (telemetry), shown with the
  /// beacon that sends it from the same address.
  public let isExtraFrame: Bool
  public let length: Length
  /// The layout string, for messages and the docs.
  public let layoutString: String

  public var description: String { "\(name) (\(layoutString))" }

  /// Whether an AD value has this row's frame: right carrier, right length,
  /// match bytes in place. The fields are not read.
  @inlinable public func accepts(type: UInt8, value v: UnsafeRawBufferPointer) -> Bool {
    switch carrier {
    case .manufacturerData:
      guard type == ADType.manufacturerData else { return false }
    case .serviceData16(let uuid):
      guard type == ADType.serviceData16, v.count >= 2,
        UInt16(v[0]) | UInt16(v[1]) << 8 == uuid
      else { return false }
    }
    guard length.accepts(v.count) else { return false }
    for m in matches {
      guard m.offset + m.bytes.count <= v.count else { return false }
      for (i, b) in m.bytes.enumerated() where v[m.offset + i] != b { return false }
    }
    return true
  }
}

// MARK: - The built-in rows

extension BeaconLayout {
  /// The formats Earshot knows, tried in this order; the first row that
  /// matches an AD structure decodes it. User layouts come after them, so a
  /// user's row can never change how an iBeacon decodes.
  public static let builtIn: [BeaconLayout] = [
    // Apple's exact layout: company 0x004C, type 0x02, length 0x15, nothing
    // after the measured power (TrackedBeacon.iBeacon(manufacturerData:)).
    row("iBeacon", .iBeacon, "m:0-3=4c000215,i:4-19,i:20-21,i:22-23,p:24-24", .exactly(25)),
    // AltBeacon spec: any company id, code 0xBEAC, 26 bytes (AD length 0x1B).
    row("AltBeacon", .altBeacon, "m:2-3=beac,i:4-19,i:20-21,i:22-23,p:24-24,d:25-25", .exactly(26)),
    // Eddystone (github.com/google/eddystone, protocol-specification.md).
    // UID: type, tx at 0 m, 10-byte namespace, 6-byte instance, 2 reserved
    // bytes many beacons leave out.
    row(
      "Eddystone-UID", .eddystoneUID, "s:0-1=feaa,m:2-2=00,p:3-3:-41,i:4-13,i:14-19",
      .either(20, 22)),
    // URL: type, tx, scheme prefix, 0-17 bytes of encoded URL.
    row("Eddystone-URL", .eddystoneURL, "s:0-1=feaa,m:2-2=10,p:3-3:-41,i:4-21v", .within(5...22)),
    // TLM version 0: battery mV, 8.8 temperature, advertising count, uptime.
    row(
      "Eddystone-TLM", .eddystoneTLM, "x,s:0-1=feaa,m:2-3=2000,d:4-5,d:6-7,d:8-11,d:12-15",
      .exactly(16)),
    // TLM version 1: 12 encrypted bytes, salt, MIC (tlm-encrypted.md).
    row(
      "Eddystone-eTLM", .eddystoneEncryptedTLM, "x,s:0-1=feaa,m:2-3=2001,d:4-15,d:16-17,d:18-19",
      .exactly(20)),
    // EID: type, tx, 8-byte ephemeral id (rotates; needs a resolver).
    row("Eddystone-EID", .eddystoneEID, "s:0-1=feaa,m:2-2=30,p:3-3:-41,i:4-11", .exactly(12)),
  ]

  /// The built-in row of a kind (every kind but `.custom` has one).
  public static func builtIn(_ kind: Kind) -> BeaconLayout? {
    builtIn.first { $0.kind == kind }
  }

  private static func row(_ name: String, _ kind: Kind, _ layout: String, _ length: Length)
    -> BeaconLayout
  {
    // The strings above are fixed; a mistake in them fails every test.
    guard let parsed = try? BeaconLayout(parsing: layout, name: name) else {
      preconditionFailure("built-in beacon layout \(name) does not parse")
    }
    return BeaconLayout(copying: parsed, kind: kind, length: length)
  }

  private init(copying p: BeaconLayout, kind: Kind, length: Length) {
    name = p.name
    self.kind = kind
    carrier = p.carrier
    matches = p.matches
    identifiers = p.identifiers
    power = p.power
    powerCorrection = p.powerCorrection
    data = p.data
    isExtraFrame = p.isExtraFrame
    self.length = length
    layoutString = p.layoutString
  }
}

// MARK: - Layout strings

/// Why a layout string was refused: the term, and what is wrong with it.
public struct BeaconLayoutError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The offending term as written (empty for a rule about the whole string).
  public let term: String
  public let reason: String

  public init(term: String, reason: String) {
    self.term = term
    self.reason = reason
  }

  public var description: String {
    term.isEmpty ? "beacon layout: \(reason)" : "beacon layout term '\(term)': \(reason)"
  }
}

extension BeaconLayout {
  /// The largest AD value: a length byte of 255 less the type byte.
  public static let maximumFrameLength = 254

  /// Parses an Android Beacon Library layout string, e.g.
  /// `m:2-3=beac,i:4-19,i:20-21,i:22-23,p:24-24,d:25-25` or
  /// `s:0-1=feaa,m:2-2=00,p:3-3:-41,i:4-13,i:14-19`.
  ///
  /// Terms: `m:A-B=HEX` bytes to match (the library takes one; several must
  /// all match here), `s:0-1=HEX` a 16-bit service UUID (service data; else
  /// the frame is manufacturer data), `i:A-B[l][v]` an identifier, `p:A-A[:N]`
  /// the one-byte signed power plus a correction N, `d:A-B[l]` a data field,
  /// `x` a frame with no identity. Stricter than the library: the hex must
  /// fill its range exactly, the power is one byte, a `v` field is last, and
  /// a frame shorter than the layout is refused rather than zero-padded. A
  /// frame longer than the layout is accepted; the bytes past it are ignored,
  /// as the library ignores them.
  public init(parsing text: String, name: String = "custom") throws {
    var matches: [Match] = []
    var service: UInt16? = nil
    var identifiers: [Field] = []
    var data: [Field] = []
    var power: Field? = nil
    var correction = 0
    var extra = false
    // Every field with its term as written, for the checks across terms.
    var written: [(term: String, field: Field)] = []

    let terms = text.split(separator: ",", omittingEmptySubsequences: false).map(\.trimmingSpaces)
    for term in terms {
      func fail(_ why: String) -> BeaconLayoutError { BeaconLayoutError(term: term, reason: why) }
      if term == "x" {
        guard !extra else { throw fail("'x' given twice") }
        extra = true
        continue
      }
      guard term.count >= 2, let key = term.first, term.dropFirst().first == ":" else {
        throw fail(term.isEmpty ? "empty term" : "expected m:, s:, i:, p:, d: or x")
      }
      var body = Substring(term.dropFirst(2))
      switch key {
      case "m", "s":
        let parts = body.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw fail("expected a range, '=' and hex bytes") }
        body = parts[0]
        let (start, end) = try Self.range(&body, term)
        guard body.isEmpty else { throw fail("unexpected '\(body)' after the range") }
        guard !parts[1].isEmpty, let bytes = hexDecoded(parts[1]),
          parts[1].allSatisfy(\.isHexDigit)
        else { throw fail("'\(parts[1])' is not hex bytes") }
        guard bytes.count == end - start + 1 else {
          throw fail("\(bytes.count) bytes of hex for a range of \(end - start + 1)")
        }
        if key == "m" {
          matches.append(Match(offset: start, bytes: bytes))
          written.append((term, Field(start, end)))
        } else {
          guard service == nil else { throw fail("a second service UUID") }
          guard start == 0, end == 1 else {
            throw fail("only a 16-bit service UUID at 0-1 is supported")
          }
          // Written most significant byte first; sent little-endian.
          service = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        }
      case "i", "d":
        let (start, end) = try Self.range(&body, term)
        var little = false
        var variable = false
        for c in body {
          switch c {
          case "l" where !little: little = true
          case "v" where key == "i" && !variable: variable = true
          default: throw fail("unknown suffix '\(body)' (i takes l and v, d takes l)")
          }
        }
        let field = Field(start, end, littleEndian: little, variableLength: variable)
        if key == "i" { identifiers.append(field) } else { data.append(field) }
        written.append((term, field))
      case "p":
        guard power == nil else { throw fail("a second power field") }
        let (start, end) = try Self.range(&body, term)
        guard start == end else { throw fail("the power is one signed byte") }
        if !body.isEmpty {
          guard body.first == ":", let n = Int(body.dropFirst()), (-255...255).contains(n) else {
            throw fail("the correction after ':' must be a whole number of dB")
          }
          correction = n
        }
        power = Field(start, end)
        written.append((term, Field(start, end)))
      default:
        throw fail("unknown term '\(key)' (expected m, s, i, p, d or x)")
      }
    }

    guard !matches.isEmpty else {
      throw BeaconLayoutError(term: "", reason: "no 'm' term: a layout must match some bytes")
    }
    if !extra {
      guard !identifiers.isEmpty else {
        throw BeaconLayoutError(term: "", reason: "no 'i' term: a beacon needs an identifier")
      }
      guard power != nil else {
        throw BeaconLayoutError(term: "", reason: "no 'p' term: a beacon needs a power byte")
      }
    }
    let reserved = service == nil ? 0..<0 : 0..<2
    var minimum = 2
    for (term, f) in written {
      if reserved.contains(f.start) {
        throw BeaconLayoutError(term: term, reason: "bytes 0-1 are the service UUID")
      }
      minimum = max(minimum, f.variableLength ? f.start + 1 : f.end + 1)
    }
    for (i, v) in written.enumerated() where v.field.variableLength {
      let later = written.enumerated().first {
        $0.offset != i && $0.element.field.end >= v.field.start
      }
      if let later {
        throw BeaconLayoutError(
          term: v.term,
          reason: "a variable-length identifier must be the last field ('\(later.element.term)' "
            + "ends at \(later.element.field.end))")
      }
    }

    self.name = name
    kind = .custom
    carrier = service.map { .serviceData16($0) } ?? .manufacturerData
    self.matches = matches
    self.identifiers = identifiers
    self.power = power
    powerCorrection = correction
    self.data = data
    isExtraFrame = extra
    length = .within(minimum...Self.maximumFrameLength)
    layoutString = text
  }

  /// Reads `A-B` off the front of `body`: decimal, A <= B, inside an AD.
  private static func range(_ body: inout Substring, _ term: String) throws -> (Int, Int) {
    func fail(_ why: String) -> BeaconLayoutError { BeaconLayoutError(term: term, reason: why) }
    let a = body.prefix(while: \.isASCIIDigit)
    guard !a.isEmpty, body.dropFirst(a.count).first == "-" else {
      throw fail("expected a byte range START-END")
    }
    let rest = body.dropFirst(a.count + 1)
    let b = rest.prefix(while: \.isASCIIDigit)
    guard !b.isEmpty else { throw fail("expected a byte range START-END") }
    guard a.count <= 3, b.count <= 3, let start = Int(a), let end = Int(b),
      end < maximumFrameLength
    else { throw fail("offsets must be below \(maximumFrameLength)") }
    guard start <= end else { throw fail("the range ends before it starts") }
    body = rest.dropFirst(b.count)
    return (start, end)
  }
}

extension Character {
  fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
