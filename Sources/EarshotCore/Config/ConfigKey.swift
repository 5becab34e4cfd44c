/// One key of a config section: its name, what it means, how to parse a
/// value into the section, and how to print the effective value. Defaults
/// live in each section's initializer, so `show(Section())` is the default.
public struct ConfigKey<Section>: Sendable {
  public let name: String
  public let help: String
  let set: @Sendable (inout Section, String) throws -> Void
  let show: @Sendable (Section) -> String

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

/// A section with one instance (`[scanner]`, `[audio]`, ...), erased to
/// closures over the whole `Config` so that all sections sit in one table.
public struct SectionTable: Sendable {
  public let name: String
  public let summary: String
  /// (key, help, default as printed)
  public let keys: [(name: String, help: String, defaultValue: String)]
  let set: @Sendable (inout Config, String, String) throws -> Bool
  let render: @Sendable (Config) -> [(String, String)]

  static func make<S>(
    _ name: String, _ summary: String, _ keys: [ConfigKey<S>], initial: S,
    get: @escaping @Sendable (Config) -> S, put: @escaping @Sendable (inout Config, S) -> Void
  ) -> SectionTable {
    let byName = Dictionary(uniqueKeysWithValues: keys.map { ($0.name, $0) })
    return SectionTable(
      name: name, summary: summary,
      keys: keys.map { ($0.name, $0.help, $0.show(initial)) },
      set: { config, key, value in
        guard let k = byName[key] else { return false }
        var s = get(config)
        try k.set(&s, value)
        put(&config, s)
        return true
      },
      render: { config in keys.map { ($0.name, $0.show(get(config))) } })
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
      throw ConfigValueError("expected a number, got '\(v)'")
    }
    guard range.contains(d) else {
      throw ConfigValueError(
        "\(v) is out of range; expected \(show(range.lowerBound)) to \(show(range.upperBound))")
    }
    return d
  }

  public static func integer(_ v: String, in range: ClosedRange<Int>) throws -> Int {
    guard let i = Int(v) else { throw ConfigValueError("expected a whole number, got '\(v)'") }
    guard range.contains(i) else {
      throw ConfigValueError(
        "\(v) is out of range; expected \(range.lowerBound) to \(range.upperBound)")
    }
    return i
  }

  public static func choice(_ v: String, _ allowed: [String]) throws -> String {
    guard allowed.contains(v) else {
      throw ConfigValueError(
        "expected one of \(allowed.joined(separator: ", ")), got '\(v)'")
    }
    return v
  }

  public static func nonEmpty(_ v: String) throws -> String {
    guard !v.isEmpty else { throw ConfigValueError("must not be empty") }
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
