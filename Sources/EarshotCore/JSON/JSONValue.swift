/// A JSON value, for the control socket's messages.
///
/// Earshot parses JSON itself rather than with Foundation's
/// JSONSerialization: the core stays free of Foundation, requests are
/// validated by pure code the unit tests reach directly, and on Linux
/// JSONSerialization returns NSNumber for both `true` and `1`, which would
/// let `{"level":true}` pass as a volume.
public enum JSONValue: Equatable, Sendable {
  case null
  case bool(Bool)
  case number(Double)
  case string(String)
  case array([JSONValue])
  /// Keys in the order given (so encoded output is stable and readable).
  case object([(String, JSONValue)])

  public static func == (a: JSONValue, b: JSONValue) -> Bool {
    switch (a, b) {
    case (.null, .null): return true
    case (.bool(let x), .bool(let y)): return x == y
    case (.number(let x), .number(let y)): return x == y
    case (.string(let x), .string(let y)): return x == y
    case (.array(let x), .array(let y)): return x == y
    case (.object(let x), .object(let y)):
      return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    default: return false
    }
  }

  public subscript(key: String) -> JSONValue? {
    guard case .object(let fields) = self else { return nil }
    return fields.last(where: { $0.0 == key })?.1
  }

  /// An object's fields in order; nil for anything else.
  public var objectFields: [(String, JSONValue)]? {
    if case .object(let f) = self { return f }
    return nil
  }
  public var string: String? {
    if case .string(let s) = self { return s }
    return nil
  }
  public var number: Double? {
    if case .number(let n) = self { return n }
    return nil
  }
  public var bool: Bool? {
    if case .bool(let b) = self { return b }
    return nil
  }
  public var array: [JSONValue]? {
    if case .array(let a) = self { return a }
    return nil
  }
  /// An integer that JSON carried exactly.
  public var integer: Int64? {
    guard case .number(let n) = self, n.rounded() == n, abs(n) <= 9_007_199_254_740_992 else {
      return nil
    }
    return Int64(n)
  }

  public static func int<T: BinaryInteger>(_ v: T) -> JSONValue { .number(Double(v)) }

  // MARK: Encoding

  /// Compact JSON on one line (never contains a newline).
  public var encoded: String {
    var out = ""
    encode(into: &out)
    return out
  }

  public func encode(into out: inout String) {
    switch self {
    case .null: out += "null"
    case .bool(let b): out += b ? "true" : "false"
    case .number(let n): out += JSONValue.formatNumber(n)
    case .string(let s): JSONLine.appendQuoted(s, to: &out)
    case .array(let items):
      out += "["
      for (i, item) in items.enumerated() {
        if i > 0 { out += "," }
        item.encode(into: &out)
      }
      out += "]"
    case .object(let fields):
      out += "{"
      for (i, (k, v)) in fields.enumerated() {
        if i > 0 { out += "," }
        JSONLine.appendQuoted(k, to: &out)
        out += ":"
        v.encode(into: &out)
      }
      out += "}"
    }
  }

  /// Integers without a fraction; other numbers with up to 6 decimals.
  static func formatNumber(_ n: Double) -> String {
    guard n.isFinite else { return "null" }
    if n.rounded() == n && abs(n) < 1e15 { return String(Int64(n)) }
    var s = JSONLine.format(n, decimals: 6)
    while s.hasSuffix("0") { s.removeLast() }
    if s.hasSuffix(".") { s.removeLast() }
    return s
  }
}
