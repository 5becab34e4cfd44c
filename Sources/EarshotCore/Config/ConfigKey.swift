/// One key of a config section: its name, what it means, how to parse a
/// value into the section, and how to print the effective value. Defaults
/// live in each section's initializer, so `show(Section())` is the default.
public struct ConfigKey<Section>: Sendable {
  public let name: String
  public let help: String
  let set: @Sendable (inout Section, String) throws -> Void
  /// The value as `check-config` prints it; `show(Section())` is the default.
  public let show: @Sendable (Section) -> String

  public init(
    _ name: String, _ help: String,
    set: @escaping @Sendable (inout Section, String) throws -> Void,
    show: @escaping @Sendable (Section) -> String
  ) {
    self.name = name
    self.help = help
    self.set = set
    self.show = show
  }
}

/// The keys most sections are made of, each one line in a table.
extension ConfigKey {
  /// Text that must not be empty (`example` goes in the message if it is).
  public static func text(
    _ name: String, _ help: String, _ field: WritableKeyPath<Section, String> & Sendable,
    example: String? = nil
  ) -> ConfigKey {
    .init(
      name, help, set: { s, v in s[keyPath: field] = try ConfigValue.nonEmpty(v, example: example) }
    ) {
      $0[keyPath: field]
    }
  }

  /// Text whose absence (an empty value, `nil`) means a default worked out
  /// elsewhere, which the help names.
  public static func optionalText(
    _ name: String, _ help: String, _ field: WritableKeyPath<Section, String?> & Sendable
  ) -> ConfigKey {
    .init(name, help, set: { s, v in s[keyPath: field] = v.isEmpty ? nil : v }) {
      $0[keyPath: field] ?? ""
    }
  }

  public static func bool(
    _ name: String, _ help: String, _ field: WritableKeyPath<Section, Bool> & Sendable
  ) -> ConfigKey {
    .init(name, help, set: { s, v in s[keyPath: field] = try ConfigValue.bool(v) }) {
      String($0[keyPath: field])
    }
  }

  public static func number(
    _ name: String, _ help: String, _ field: WritableKeyPath<Section, Double> & Sendable,
    in range: ClosedRange<Double>
  ) -> ConfigKey {
    .init(name, help, set: { s, v in s[keyPath: field] = try ConfigValue.double(v, in: range) }) {
      ConfigValue.show($0[keyPath: field])
    }
  }

  /// Seconds above zero, up to `max`.
  public static func seconds(
    _ name: String, _ help: String, _ field: WritableKeyPath<Section, Double> & Sendable,
    upTo max: Double
  ) -> ConfigKey {
    .init(name, help, set: { s, v in s[keyPath: field] = try ConfigValue.seconds(v, upTo: max) }) {
      ConfigValue.show($0[keyPath: field])
    }
  }

  public static func integer(
    _ name: String, _ help: String, _ field: WritableKeyPath<Section, Int> & Sendable,
    in range: ClosedRange<Int>
  ) -> ConfigKey {
    .init(name, help, set: { s, v in s[keyPath: field] = try ConfigValue.integer(v, in: range) }) {
      String($0[keyPath: field])
    }
  }

  /// One of an enum's raw values.
  public static func choice<E: RawRepresentable & CaseIterable & Sendable>(
    _ name: String, _ help: String, _ field: WritableKeyPath<Section, E> & Sendable
  ) -> ConfigKey where E.RawValue == String {
    .init(name, help, set: { s, v in s[keyPath: field] = try ConfigValue.choice(v, E.self) }) {
      $0[keyPath: field].rawValue
    }
  }
}

/// A section with one instance (`[scanner]`, `[link]`, ...): its name, a
/// summary and its key table. `set(_:_:)` and `init(values:)` parse keys the
/// way a config file does, for the command line and for tests.
public protocol ConfigSection: Sendable {
  static var section: String { get }
  static var summary: String { get }
  static var keys: [ConfigKey<Self>] { get }
  init()
}

extension ConfigSection {
  /// Sets one key from its text; an unknown key or a bad value throws a
  /// `ConfigValueError` saying what to write instead.
  public mutating func set(_ key: String, _ value: String) throws {
    guard let k = Self.keys.first(where: { $0.name == key }) else {
      throw ConfigValueError(
        "unknown key '\(key)' in [\(Self.section)]; keys: \(Self.keys.map(\.name).joined(separator: ", "))"
      )
    }
    try k.set(&self, value)
  }

  public init(values: [(key: String, value: String)]) throws {
    self.init()
    for (key, value) in values { try set(key, value) }
  }
}

/// A section erased to closures over the whole `Config`, so that all
/// sections sit in one table (`Config.sections`).
public struct SectionTable: Sendable {
  public let name: String
  public let summary: String
  /// (key, help, default as printed for the system service)
  public let keys: [(name: String, help: String, defaultValue: String)]
  let set: @Sendable (inout Config, String, String) throws -> Bool
  let render: @Sendable (Config) -> [(String, String)]

  static func make<S: ConfigSection>(
    _ get: @escaping @Sendable (Config) -> S, _ put: @escaping @Sendable (inout Config, S) -> Void
  ) -> SectionTable {
    let byName = Dictionary(uniqueKeysWithValues: S.keys.map { ($0.name, $0) })
    let initial = get(Config(paths: .system))
    return SectionTable(
      name: S.section, summary: S.summary,
      keys: S.keys.map { ($0.name, $0.help, $0.show(initial)) },
      set: { config, key, value in
        guard let k = byName[key] else { return false }
        var s = get(config)
        try k.set(&s, value)
        put(&config, s)
        return true
      },
      render: { config in S.keys.map { ($0.name, $0.show(get(config))) } })
  }
}

/// Value parsers shared by the key tables. Messages say what is expected.
public enum ConfigValue {
  public static func bool(_ v: String) throws -> Bool {
    switch v.lowercased() {
    case "true", "yes", "on", "1": return true
    case "false", "no", "off", "0": return false
    default: throw ConfigValueError("expected true or false, got '\(v)'")
    }
  }

  public static func double(_ v: String, in range: ClosedRange<Double>) throws -> Double {
    guard let d = Double(v), d.isFinite else {
      throw ConfigValueError(
        "expected a number from \(show(range.lowerBound)) to \(show(range.upperBound)), got '\(v)'")
    }
    guard range.contains(d) else {
      throw ConfigValueError(
        "\(v) is out of range; expected \(show(range.lowerBound)) to \(show(range.upperBound))")
    }
    return d
  }

  public static func integer(_ v: String, in range: ClosedRange<Int>) throws -> Int {
    guard let i = Int(v) else {
      throw ConfigValueError(
        "expected a whole number from \(range.lowerBound) to \(range.upperBound), got '\(v)'")
    }
    guard range.contains(i) else {
      throw ConfigValueError(
        "\(v) is out of range; expected \(range.lowerBound) to \(range.upperBound)")
    }
    return i
  }

  public static func choice<E: RawRepresentable & CaseIterable>(_ v: String, _: E.Type) throws -> E
  where E.RawValue == String {
    guard let e = E(rawValue: v) else {
      throw ConfigValueError(
        "expected one of \(E.allCases.map(\.rawValue).joined(separator: ", ")), got '\(v)'")
    }
    return e
  }

  /// Seconds above zero, at most `max` (a timeout of 0 would never wait).
  public static func seconds(_ v: String, upTo max: Double) throws -> Double {
    guard let d = Double(v), d.isFinite else {
      throw ConfigValueError("expected a number of seconds, got '\(v)'")
    }
    guard d > 0, d <= max else {
      throw ConfigValueError("\(v) is out of range; expected seconds above 0, at most \(show(max))")
    }
    return d
  }

  public static func nonEmpty(_ v: String, example: String? = nil) throws -> String {
    guard !v.isEmpty else {
      throw ConfigValueError("must not be empty" + (example.map { "; e.g. \($0)" } ?? ""))
    }
    return v
  }

  /// A comma-separated list; empty items are dropped.
  public static func list(_ v: String) -> [String] {
    v.split(separator: ",").map { trim($0) }.filter { !$0.isEmpty }
  }

  public static func uuid(_ v: String) throws -> BeaconUUID {
    guard let u = BeaconUUID(v) else {
      throw ConfigValueError(
        "'\(v)' is not a UUID; write 32 hex digits as 8-4-4-4-12, e.g. 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182"
      )
    }
    return u
  }

  /// `ID1[:ID2[:ID3]]`: an AltBeacon's identifiers (a UUID, then two
  /// numbers 0-65535), as a region or a scenario names them.
  public static func altBeacon(_ v: String) throws -> (uuid: BeaconUUID, id2: UInt16?, id3: UInt16?)
  {
    let parts = v.split(separator: ":", omittingEmptySubsequences: false).map { trim($0) }
    guard (1...3).contains(parts.count) else {
      throw ConfigValueError(
        "'\(v)' is not ID1[:ID2[:ID3]]; e.g. 2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6:1:2")
    }
    let uuid = try uuid(parts[0])
    func number(_ i: Int) throws -> UInt16? {
      guard i < parts.count else { return nil }
      guard let n = UInt16(parts[i]) else {
        throw ConfigValueError("'\(parts[i])' in '\(v)' is not a number from 0 to 65535")
      }
      return n
    }
    return (uuid, try number(1), try number(2))
  }

  /// `NAMESPACE[:INSTANCE]`: an Eddystone-UID's 20 hex digits of namespace
  /// and 12 of instance.
  public static func eddystone(_ v: String) throws -> (
    namespace: BeaconBytes, instance: BeaconBytes?
  ) {
    let parts = v.split(separator: ":", omittingEmptySubsequences: false).map { trim($0) }
    let example = "e.g. 8f2c1a3e5b7d4e90a1c2:000000000001"
    guard (1...2).contains(parts.count), parts[0].count == 20, let ns = BeaconBytes(hex: parts[0])
    else {
      throw ConfigValueError(
        "'\(v)' is not NAMESPACE[:INSTANCE]; the namespace is 20 hex digits, \(example)")
    }
    guard parts.count == 2 else { return (ns, nil) }
    guard parts[1].count == 12, let instance = BeaconBytes(hex: parts[1]) else {
      throw ConfigValueError("'\(parts[1])' is not an instance: 12 hex digits, \(example)")
    }
    return (ns, instance)
  }

  /// Bluetooth addresses separated by spaces (or commas), at least one.
  /// `tag = keys bag`: tag names (checked against the `[tag]` sections
  /// once the whole file is read), each once.
  public static func tagNames(_ v: String) throws -> [String] {
    let words = v.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," }).map(String.init)
    guard !words.isEmpty else {
      throw ConfigValueError("expected the name of a [tag \"NAME\"] section")
    }
    var out: [String] = []
    for w in words where !out.contains(w) { out.append(w) }
    return out
  }

  public static func addresses(_ v: String) throws -> [BDAddress] {
    let words = v.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," })
    guard !words.isEmpty else {
      throw ConfigValueError("expected an address such as AA:BB:CC:DD:EE:FF")
    }
    var out: [BDAddress] = []
    for w in words {
      guard let a = BDAddress(w) else {
        throw ConfigValueError(
          "'\(w)' is not a Bluetooth address; write six hex pairs separated by colons, e.g. AA:BB:CC:DD:EE:FF"
        )
      }
      if !out.contains(a) { out.append(a) }
    }
    return out
  }

  /// Identity resolving keys separated by spaces (or commas), at least one.
  public static func identityKeys(_ v: String) throws -> [IdentityResolvingKey] {
    let words = v.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," })
    guard !words.isEmpty else {
      throw ConfigValueError("expected a key of 32 hex digits, most significant byte first")
    }
    var out: [IdentityResolvingKey] = []
    for (n, w) in words.enumerated() {
      do {
        let k = try IdentityResolvingKey(hex: w)
        if !out.contains(k) { out.append(k) }
      } catch {
        let which = words.count > 1 ? "key \(n + 1): " : ""
        throw ConfigValueError(which + error.description)
      }
    }
    return out
  }

  /// A command line split the way a shell would, without expansion.
  public static func command(_ v: String) throws -> [String] {
    do {
      let argv = try ShellWords.split(v)
      guard !argv.isEmpty else { throw ConfigValueError("names no program") }
      return argv
    } catch let e as ShellWords.SplitError {
      throw ConfigValueError(e.description)
    }
  }

  /// Prints a number without a needless ".0" (30, 2.5).
  public static func show(_ d: Double) -> String {
    if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) }
    return String(d)
  }

  static func trim(_ s: Substring) -> String {
    var t = s
    while let f = t.first, f == " " || f == "\t" { t.removeFirst() }
    while let l = t.last, l == " " || l == "\t" { t.removeLast() }
    return String(t)
  }
}
