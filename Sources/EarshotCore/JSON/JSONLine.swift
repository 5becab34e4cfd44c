/// Builds one JSON object on one line, fields in the order they are added.
/// Hand-rolled because Earshot prints a line per report and the output
/// shape is fixed; Foundation's encoder would allocate far more.
public struct JSONLine {
  public private(set) var text: String
  private var first = true

  public init() {
    text = "{"
    text.reserveCapacity(256)
  }

  private mutating func key(_ k: String) {
    if !first { text += "," }
    first = false
    text += "\""
    text += k
    text += "\":"
  }

  public mutating func add(_ k: String, _ v: String) {
    key(k)
    JSONLine.appendQuoted(v, to: &text)
  }
  public mutating func add(_ k: String, _ v: Int) {
    key(k)
    text += String(v)
  }
  public mutating func add(_ k: String, _ v: Bool) {
    key(k)
    text += v ? "true" : "false"
  }
  /// A number with a fixed count of decimals (no exponent, no locale).
  public mutating func add(_ k: String, _ v: Double, decimals: Int) {
    key(k)
    text += JSONLine.format(v, decimals: decimals)
  }
  public mutating func addNull(_ k: String) {
    key(k)
    text += "null"
  }
  /// Inserts already-encoded JSON (an array or object built elsewhere).
  public mutating func addRaw(_ k: String, _ json: String) {
    key(k)
    text += json
  }

  public var line: String { text + "}" }

  public static func appendQuoted(_ s: String, to out: inout String) {
    out += "\""
    for scalar in s.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      case _ where scalar.value < 0x20:
        let hex = String(scalar.value, radix: 16)
        out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
      default: out.unicodeScalars.append(scalar)
      }
    }
    out += "\""
  }

  public static func quoted(_ s: String) -> String {
    var out = ""
    appendQuoted(s, to: &out)
    return out
  }

  /// Formats without Foundation: rounds half away from zero.
  public static func format(_ v: Double, decimals: Int) -> String {
    guard v.isFinite else { return "null" }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let scaled = (abs(v) * scale).rounded()
    guard scaled < 9e15 else { return String(v) }
    let n = Int64(scaled)
    let sign = v < 0 && n != 0 ? "-" : ""
    let whole = n / Int64(scale)
    guard decimals > 0 else { return sign + String(whole) }
    var frac = String(n % Int64(scale))
    frac = String(repeating: "0", count: decimals - frac.count) + frac
    return sign + String(whole) + "." + frac
  }
}
