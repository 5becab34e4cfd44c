/// A strict JSON parser (RFC 8259) over a line's bytes, with a nesting
/// limit so a hostile line cannot exhaust the stack.
public enum JSONParser {
  public struct Failure: Error, Equatable, Sendable, CustomStringConvertible {
    public let offset: Int
    public let reason: String
    public var description: String { "\(reason) at byte \(offset)" }
  }

  public static let maxDepth = 64

  public static func parse(_ text: String) throws -> JSONValue {
    try parse(Array(text.utf8))
  }

  public static func parse(_ bytes: [UInt8]) throws -> JSONValue {
    var p = Cursor(bytes: bytes)
    p.skipSpace()
    let v = try p.value(depth: 0)
    p.skipSpace()
    guard p.i == bytes.count else { throw p.fail("unexpected text after the value") }
    return v
  }

  private struct Cursor {
    let bytes: [UInt8]
    var i = 0

    func fail(_ reason: String) -> Failure { Failure(offset: i, reason: reason) }

    mutating func skipSpace() {
      while i < bytes.count,
        bytes[i] == 0x20 || bytes[i] == 0x09 || bytes[i] == 0x0A
          || bytes[i] == 0x0D
      {
        i += 1
      }
    }

    mutating func literal(_ word: StaticString, _ v: JSONValue) throws -> JSONValue {
      let w = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
      guard i + w.count <= bytes.count, bytes[i..<i + w.count].elementsEqual(w) else {
        throw fail("invalid literal")
      }
      i += w.count
      return v
    }

    mutating func value(depth: Int) throws -> JSONValue {
      guard depth < JSONParser.maxDepth else { throw fail("nested too deeply") }
      guard i < bytes.count else { throw fail("unexpected end of input") }
      switch bytes[i] {
      case UInt8(ascii: "{"): return try object(depth: depth)
      case UInt8(ascii: "["): return try array(depth: depth)
      case UInt8(ascii: "\""): return .string(try string())
      case UInt8(ascii: "t"): return try literal("true", .bool(true))
      case UInt8(ascii: "f"): return try literal("false", .bool(false))
      case UInt8(ascii: "n"): return try literal("null", .null)
      case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
      default: throw fail("unexpected character")
      }
    }

    mutating func object(depth: Int) throws -> JSONValue {
      i += 1
      var fields: [(String, JSONValue)] = []
      skipSpace()
      if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
        i += 1
        return .object(fields)
      }
      while true {
        skipSpace()
        guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else {
          throw fail("expected a string key")
        }
        let key = try string()
        skipSpace()
        guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
        i += 1
        skipSpace()
        fields.append((key, try value(depth: depth + 1)))
        skipSpace()
        guard i < bytes.count else { throw fail("unexpected end of input") }
        if bytes[i] == UInt8(ascii: ",") {
          i += 1
          continue
        }
        guard bytes[i] == UInt8(ascii: "}") else { throw fail("expected ',' or '}'") }
        i += 1
        return .object(fields)
      }
    }

    mutating func array(depth: Int) throws -> JSONValue {
      i += 1
      var items: [JSONValue] = []
      skipSpace()
      if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
        i += 1
        return .array(items)
      }
      while true {
        skipSpace()
        items.append(try value(depth: depth + 1))
        skipSpace()
        guard i < bytes.count else { throw fail("unexpected end of input") }
        if bytes[i] == UInt8(ascii: ",") {
          i += 1
          continue
        }
        guard bytes[i] == UInt8(ascii: "]") else { throw fail("expected ',' or ']'") }
        i += 1
        return .array(items)
      }
    }

    mutating func hex4() throws -> UInt32 {
      guard i + 4 <= bytes.count else { throw fail("short \\u escape") }
      var v: UInt32 = 0
      for _ in 0..<4 {
        let c = bytes[i]
        let d: UInt32
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
        default: throw fail("bad \\u escape")
        }
        v = v << 4 | d
        i += 1
      }
      return v
    }

    mutating func string() throws -> String {
      i += 1
      var out = [UInt8]()
      while true {
        guard i < bytes.count else { throw fail("unterminated string") }
        let c = bytes[i]
        if c == UInt8(ascii: "\"") {
          i += 1
          break
        }
        if c < 0x20 { throw fail("control character in string") }
        if c != UInt8(ascii: "\\") {
          out.append(c)
          i += 1
          continue
        }
        i += 1
        guard i < bytes.count else { throw fail("unterminated escape") }
        let e = bytes[i]
        i += 1
        switch e {
        case UInt8(ascii: "\""): out.append(0x22)
        case UInt8(ascii: "\\"): out.append(0x5C)
        case UInt8(ascii: "/"): out.append(0x2F)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
          var scalar = try hex4()
          if (0xD800...0xDBFF).contains(scalar) {
            guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"),
              bytes[i + 1] == UInt8(ascii: "u")
            else { throw fail("lone surrogate") }
            i += 2
            let low = try hex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw fail("lone surrogate") }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
          } else if (0xDC00...0xDFFF).contains(scalar) {
            throw fail("lone surrogate")
          }
          guard let u = Unicode.Scalar(scalar) else { throw fail("bad \\u escape") }
          out.append(contentsOf: Array(String(Character(u)).utf8))
        default: throw fail("unknown escape")
        }
      }
      guard let s = String(validating: out, as: UTF8.self) else {
        throw fail("string is not valid UTF-8")
      }
      return s
    }

    mutating func number() throws -> JSONValue {
      let start = i
      if bytes[i] == UInt8(ascii: "-") { i += 1 }
      func digits(_ c: inout Cursor) -> Int {
        let s = c.i
        while c.i < c.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c.bytes[c.i]) {
          c.i += 1
        }
        return c.i - s
      }
      guard i < bytes.count else { throw fail("bad number") }
      if bytes[i] == UInt8(ascii: "0") {
        i += 1
      } else if digits(&self) == 0 {
        throw fail("bad number")
      }
      if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
        i += 1
        guard digits(&self) > 0 else { throw fail("bad number") }
      }
      if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
        i += 1
        if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") {
          i += 1
        }
        guard digits(&self) > 0 else { throw fail("bad number") }
      }
      let text = String(decoding: bytes[start..<i], as: UTF8.self)
      guard let v = Double(text), v.isFinite else { throw fail("number out of range") }
      return .number(v)
    }
  }
}
