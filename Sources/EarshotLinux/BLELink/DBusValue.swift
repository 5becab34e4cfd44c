import CSystemd

#if canImport(Glibc)
  import Glibc
#endif

/// A D-Bus value with its type, for the few shapes BlueZ's API uses
/// (property dictionaries, object trees, byte arrays). sd-bus's variadic
/// append/read functions cannot be called from Swift, so values are written
/// and read one basic item or container at a time.
public indirect enum DBusValue: Equatable, Sendable {
  case byte(UInt8)
  case bool(Bool)
  case int16(Int16)
  case uint16(UInt16)
  case int32(Int32)
  case uint32(UInt32)
  case int64(Int64)
  case uint64(UInt64)
  case double(Double)
  case string(String)
  case objectPath(String)
  case signature(String)
  /// `h`. Written, sd-bus sends a duplicate and the caller keeps its own;
  /// read, it is a duplicate the reader owns and must close.
  case unixFD(Int32)
  /// `ay`, kept as bytes.
  case bytes([UInt8])
  /// An array whose elements have `element` as their signature.
  case array(element: String, [DBusValue])
  /// `a{KV}`: a dictionary, entries in order.
  case dict(key: String, value: String, [(DBusValue, DBusValue)])
  case variant(DBusValue)
  case structure([DBusValue])

  public var signature: String {
    switch self {
    case .byte: "y"
    case .bool: "b"
    case .int16: "n"
    case .uint16: "q"
    case .int32: "i"
    case .uint32: "u"
    case .int64: "x"
    case .uint64: "t"
    case .double: "d"
    case .string: "s"
    case .objectPath: "o"
    case .signature: "g"
    case .unixFD: "h"
    case .bytes: "ay"
    case .array(let e, _): "a" + e
    case .dict(let k, let v, _): "a{" + k + v + "}"
    case .variant: "v"
    case .structure(let items): "(" + items.map(\.signature).joined() + ")"
    }
  }

  public static func == (a: DBusValue, b: DBusValue) -> Bool {
    switch (a, b) {
    case (.byte(let x), .byte(let y)): x == y
    case (.bool(let x), .bool(let y)): x == y
    case (.int16(let x), .int16(let y)): x == y
    case (.uint16(let x), .uint16(let y)): x == y
    case (.int32(let x), .int32(let y)): x == y
    case (.uint32(let x), .uint32(let y)): x == y
    case (.int64(let x), .int64(let y)): x == y
    case (.uint64(let x), .uint64(let y)): x == y
    case (.double(let x), .double(let y)): x == y
    case (.string(let x), .string(let y)): x == y
    case (.objectPath(let x), .objectPath(let y)): x == y
    case (.signature(let x), .signature(let y)): x == y
    case (.unixFD(let x), .unixFD(let y)): x == y
    case (.bytes(let x), .bytes(let y)): x == y
    case (.array(let e1, let x), .array(let e2, let y)): e1 == e2 && x == y
    case (.dict(let k1, let v1, let x), .dict(let k2, let v2, let y)):
      k1 == k2 && v1 == v2 && x.count == y.count
        && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    case (.variant(let x), .variant(let y)): x == y
    case (.structure(let x), .structure(let y)): x == y
    default: false
    }
  }

  // MARK: Convenience

  /// `a{sv}` from pairs.
  public static func properties(_ pairs: [(String, DBusValue)]) -> DBusValue {
    .dict(key: "s", value: "v", pairs.map { (.string($0.0), .variant($0.1)) })
  }

  public static func strings(_ list: [String]) -> DBusValue {
    .array(element: "s", list.map { .string($0) })
  }

  /// Looks `key` up in a string-keyed dictionary, unwrapping a variant.
  public subscript(key: String) -> DBusValue? {
    guard case .dict(_, _, let entries) = self else { return nil }
    for (k, v) in entries {
      if case .string(let s) = k, s == key { return v.unwrapped }
      if case .objectPath(let s) = k, s == key { return v.unwrapped }
    }
    return nil
  }

  public var unwrapped: DBusValue {
    if case .variant(let inner) = self { return inner.unwrapped }
    return self
  }

  public var stringValue: String? {
    switch unwrapped {
    case .string(let s), .objectPath(let s), .signature(let s): s
    default: nil
    }
  }

  public var boolValue: Bool? {
    if case .bool(let b) = unwrapped { return b }
    return nil
  }

  public var uint16Value: UInt16? {
    if case .uint16(let v) = unwrapped { return v }
    return nil
  }

  public var bytesValue: [UInt8]? {
    switch unwrapped {
    case .bytes(let b): return b
    case .array("y", let items):
      return items.compactMap { if case .byte(let b) = $0 { return b } else { return nil } }
    default: return nil
    }
  }

  /// The entries of a dictionary keyed by strings or object paths.
  public var entries: [(String, DBusValue)] {
    guard case .dict(_, _, let entries) = self else { return [] }
    return entries.compactMap { k, v in k.stringValue.map { ($0, v) } }
  }

  public var arrayItems: [DBusValue] {
    if case .array(_, let items) = unwrapped { return items }
    return []
  }
}

// MARK: Writing and reading sd-bus messages

/// Appends values to an sd-bus message. Errors are negative errno values.
struct DBusWriter {
  let message: OpaquePointer

  func append(_ values: [DBusValue]) throws {
    for v in values { try append(v) }
  }

  func append(_ value: DBusValue) throws {
    func basic<T: BitwiseCopyable>(_ type: Character, _ v: T) throws {
      var copy = v
      try check(sd_bus_message_append_basic(message, ccode(type), &copy), "append")
    }
    switch value {
    case .byte(let v): try basic("y", v)
    case .bool(let v): try basic("b", Int32(v ? 1 : 0))
    case .int16(let v): try basic("n", v)
    case .uint16(let v): try basic("q", v)
    case .int32(let v): try basic("i", v)
    case .uint32(let v): try basic("u", v)
    case .int64(let v): try basic("x", v)
    case .uint64(let v): try basic("t", v)
    case .double(let v): try basic("d", v)
    case .unixFD(let fd): try basic("h", fd)
    case .string(let s), .objectPath(let s), .signature(let s):
      let type: Character =
        if case .string = value { "s" } else if case .objectPath = value { "o" } else { "g" }
      try check(
        s.withCString { sd_bus_message_append_basic(message, ccode(type), $0) }, "append string")
    case .bytes(let b):
      try check(
        b.withUnsafeBytes {
          sd_bus_message_append_array(
            message, ccode("y"), $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), $0.count)
        }, "append bytes")
    case .array(let element, let items):
      try container("a", element) { for i in items { try append(i) } }
    case .dict(let k, let v, let entries):
      try container("a", "{" + k + v + "}") {
        for (key, val) in entries {
          try container("e", k + v) {
            try append(key)
            try append(val)
          }
        }
      }
    case .variant(let inner):
      try container("v", inner.signature) { try append(inner) }
    case .structure(let items):
      try container("r", items.map(\.signature).joined()) { for i in items { try append(i) } }
    }
  }

  private func container(_ type: Character, _ contents: String, _ body: () throws -> Void) throws {
    try check(
      contents.withCString { sd_bus_message_open_container(message, ccode(type), $0) }, "open")
    try body()
    try check(sd_bus_message_close_container(message), "close")
  }
}

/// Reads a whole message (or the rest of it) into `DBusValue`s.
struct DBusReader {
  let message: OpaquePointer

  /// Every remaining value at this level.
  func readAll() throws -> [DBusValue] {
    var out: [DBusValue] = []
    while let v = try readNext() { out.append(v) }
    return out
  }

  /// The next value, or nil at the end of the current container.
  func readNext() throws -> DBusValue? {
    var type: CChar = 0
    var contents: UnsafePointer<CChar>? = nil
    let r = sd_bus_message_peek_type(message, &type, &contents)
    try check(r, "peek")
    if r == 0 { return nil }
    let inner = contents.map { String(cString: $0) } ?? ""
    switch UInt8(bitPattern: type) {
    case UInt8(ascii: "a"):
      if inner == "y" {
        var ptr: UnsafeRawPointer? = nil
        var size = 0
        try check(sd_bus_message_read_array(message, ccode("y"), &ptr, &size), "read bytes")
        guard let ptr, size > 0 else { return .bytes([]) }
        return .bytes(Array(UnsafeRawBufferPointer(start: ptr, count: size)))
      }
      try check(sd_bus_message_enter_container(message, ccode("a"), inner), "enter array")
      defer { sd_bus_message_exit_container(message) }
      if inner.hasPrefix("{") {
        let kv = inner.dropFirst().dropLast()
        let keySig = String(kv.prefix(1))
        let valSig = String(kv.dropFirst())
        var entries: [(DBusValue, DBusValue)] = []
        while try check(
          sd_bus_message_enter_container(message, ccode("e"), String(kv)), "enter entry") > 0
        {
          guard let k = try readNext(), let v = try readNext() else {
            throw DBusError.malformed("dictionary entry")
          }
          entries.append((k, v))
          try check(sd_bus_message_exit_container(message), "exit entry")
        }
        return .dict(key: keySig, value: valSig, entries)
      }
      return .array(element: inner, try readAll())
    case UInt8(ascii: "v"):
      try check(sd_bus_message_enter_container(message, ccode("v"), inner), "enter variant")
      defer { sd_bus_message_exit_container(message) }
      guard let v = try readNext() else { throw DBusError.malformed("empty variant") }
      return .variant(v)
    case UInt8(ascii: "r"):
      try check(sd_bus_message_enter_container(message, ccode("r"), inner), "enter struct")
      defer { sd_bus_message_exit_container(message) }
      return .structure(try readAll())
    case UInt8(ascii: "y"): return .byte(try basic(UInt8(0), type))
    case UInt8(ascii: "b"): return .bool(try basic(Int32(0), type) != 0)
    case UInt8(ascii: "n"): return .int16(try basic(Int16(0), type))
    case UInt8(ascii: "q"): return .uint16(try basic(UInt16(0), type))
    case UInt8(ascii: "i"): return .int32(try basic(Int32(0), type))
    case UInt8(ascii: "u"): return .uint32(try basic(UInt32(0), type))
    case UInt8(ascii: "x"): return .int64(try basic(Int64(0), type))
    case UInt8(ascii: "t"): return .uint64(try basic(UInt64(0), type))
    case UInt8(ascii: "d"): return .double(try basic(Double(0), type))
    case UInt8(ascii: "h"):
      // The message owns the descriptor it carries; the value gets its own.
      let fd = fcntl(try basic(Int32(0), type), F_DUPFD_CLOEXEC, 3)
      guard fd >= 0 else { throw DBusError.errno(errno, "dup of a received descriptor") }
      return .unixFD(fd)
    case UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"):
      var p: UnsafePointer<CChar>? = nil
      try check(sd_bus_message_read_basic(message, type, &p), "read string")
      let s = p.map { String(cString: $0) } ?? ""
      switch UInt8(bitPattern: type) {
      case UInt8(ascii: "s"): return .string(s)
      case UInt8(ascii: "o"): return .objectPath(s)
      default: return .signature(s)
      }
    default:
      throw DBusError.malformed(
        "unsupported D-Bus type '\(Character(UnicodeScalar(UInt8(bitPattern: type))))'")
    }
  }

  private func basic<T: BitwiseCopyable>(_ initial: T, _ type: CChar) throws -> T {
    var v = initial
    try check(sd_bus_message_read_basic(message, type, &v), "read")
    return v
  }
}

public enum DBusError: Error, CustomStringConvertible {
  case errno(Int32, String)
  case malformed(String)
  /// The peer answered with a D-Bus error.
  case remote(name: String, message: String)
  /// A service we rely on left the bus (bluetoothd stopped or crashed).
  case serviceGone(String)

  /// Whether the peer answered with the D-Bus error `name`.
  public func isRemote(_ name: String) -> Bool {
    if case .remote(let n, _) = self { return n == name }
    return false
  }

  public var description: String {
    switch self {
    case .serviceGone(let name): "\(name) left the bus"
    case .errno(let e, let what): "D-Bus \(what): \(String(cString: strerror(e)))"
    case .malformed(let what): "malformed D-Bus message: \(what)"
    case .remote(let name, let message): "\(name): \(message)"
    }
  }
}

@inline(__always) func ccode(_ c: Character) -> CChar { CChar(bitPattern: c.asciiValue!) }

@discardableResult
func check(_ r: Int32, _ what: String) throws -> Int32 {
  if r < 0 { throw DBusError.errno(-r, what) }
  return r
}
