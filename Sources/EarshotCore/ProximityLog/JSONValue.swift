/// A small JSON reader for the lines Earshot's own commands print (the log
/// imports `earshot monitor` output). Strict RFC 8259 values; numbers as
/// Double.
public enum JSONValue: Sendable, Equatable {
  case null
  case bool(Bool)
  case number(Double)
  case string(String)
  case array([JSONValue])
  case object([String: JSONValue])

  public struct SyntaxError: Error, CustomStringConvertible, Equatable {
    public let offset: Int
    public let reason: String
    public var description: String { "\(reason) at character \(offset + 1)" }
  }

  public static func parse(_ text: String) throws -> JSONValue {
    var p = Parser(bytes: Array(text.utf8))
    p.skipSpace()
    let v = try p.value(depth: 0)
    p.skipSpace()
    guard p.i == p.bytes.count else { throw p.error("text after the JSON value") }
    return v
  }

  public subscript(key: String) -> JSONValue? {
    if case .object(let o) = self { return o[key] }
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
  public var isNull: Bool { self == .null }

  private struct Parser {
    let bytes: [UInt8]
    var i = 0

    func error(_ reason: String) -> SyntaxError { SyntaxError(offset: i, reason: reason) }

    mutating func skipSpace() {
      while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1 }
    }

    mutating func literal(_ word: String, _ v: JSONValue) throws -> JSONValue {
      let w = Array(word.utf8)
      guard i + w.count <= bytes.count, Array(bytes[i..<(i + w.count)]) == w else {
        throw error("unexpected character")
      }
      i += w.count
      return v
    }

    mutating func value(depth: Int) throws -> JSONValue {
      guard depth < 64 else { throw error("nested too deeply") }
      guard i < bytes.count else { throw error("unexpected end") }
      switch bytes[i] {
      case UInt8(ascii: "{"):
        i += 1
        var o: [String: JSONValue] = [:]
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
          i += 1
          return .object(o)
        }
        while true {
          skipSpace()
          guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else {
            throw error("expected a key")
          }
          let k = try string()
          skipSpace()
          guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw error("expected ':'") }
          i += 1
          skipSpace()
          o[k] = try value(depth: depth + 1)
          skipSpace()
          guard i < bytes.count else { throw error("unexpected end") }
          if bytes[i] == UInt8(ascii: ",") {
            i += 1
            continue
          }
          guard bytes[i] == UInt8(ascii: "}") else { throw error("expected ',' or '}'") }
          i += 1
          return .object(o)
        }
      case UInt8(ascii: "["):
        i += 1
        var a: [JSONValue] = []
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
          i += 1
          return .array(a)
        }
        while true {
          skipSpace()
          a.append(try value(depth: depth + 1))
          skipSpace()
          guard i < bytes.count else { throw error("unexpected end") }
          if bytes[i] == UInt8(ascii: ",") {
            i += 1
            continue
          }
          guard bytes[i] == UInt8(ascii: "]") else { throw error("expected ',' or ']'") }
          i += 1
          return .array(a)
        }
      case UInt8(ascii: "\""): return .string(try string())
      case UInt8(ascii: "t"): return try literal("true", .bool(true))
      case UInt8(ascii: "f"): return try literal("false", .bool(false))
      case UInt8(ascii: "n"): return try literal("null", .null)
      default: return .number(try number())
      }
    }

    mutating func number() throws -> Double {
      let start = i
      if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
      func digits() -> Int {
        let s = i
        while i < bytes.count, bytes[i] >= 48, bytes[i] <= 57 { i += 1 }
        return i - s
      }
      guard digits() > 0 else { throw error("unexpected character") }
      if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
        i += 1
        guard digits() > 0 else { throw error("digits expected after '.'") }
      }
      if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
        i += 1
        if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") {
          i += 1
        }
        guard digits() > 0 else { throw error("digits expected in exponent") }
      }
      guard let v = Double(String(decoding: bytes[start..<i], as: UTF8.self)) else {
        throw error("bad number")
      }
      return v
    }

    mutating func string() throws -> String {
      i += 1  // opening quote
      var out: [UInt8] = []
      while true {
        guard i < bytes.count else { throw error("unterminated string") }
        let c = bytes[i]
        i += 1
        if c == UInt8(ascii: "\"") { break }
        guard c >= 0x20 else { throw error("control character in string") }
        guard c == UInt8(ascii: "\\") else {
          out.append(c)
          continue
        }
        guard i < bytes.count else { throw error("unterminated string") }
        let e = bytes[i]
        i += 1
        switch e {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
          var code = try hex4()
          if (0xD800..<0xDC00).contains(code) {
            guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"),
              bytes[i + 1] == UInt8(ascii: "u")
            else { throw error("lone surrogate") }
            i += 2
            let low = try hex4()
            guard (0xDC00..<0xE000).contains(low) else { throw error("bad surrogate pair") }
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
          }
          guard let scalar = Unicode.Scalar(code) else { throw error("bad \\u escape") }
          out.append(contentsOf: Array(String(Character(scalar)).utf8))
        default: throw error("bad escape")
        }
      }
      return String(decoding: out, as: UTF8.self)
    }

    mutating func hex4() throws -> UInt32 {
      guard i + 4 <= bytes.count,
        let v = UInt32(String(decoding: bytes[i..<(i + 4)], as: UTF8.self), radix: 16)
      else { throw error("bad \\u escape") }
      i += 4
      return v
    }
  }
}
