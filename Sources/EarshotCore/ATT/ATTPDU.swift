/// The few ATT PDUs a GATT client needs (Core spec Vol 3, Part F, 3.4):
/// MTU exchange, service and characteristic discovery, writes, and
/// notifications. Used by `earshot device --ble` over a raw L2CAP socket.
public enum ATT {
  public static let errorResponse: UInt8 = 0x01
  public static let mtuRequest: UInt8 = 0x02
  public static let mtuResponse: UInt8 = 0x03
  public static let findInformationRequest: UInt8 = 0x04
  public static let findInformationResponse: UInt8 = 0x05
  public static let findByTypeValueRequest: UInt8 = 0x06
  public static let findByTypeValueResponse: UInt8 = 0x07
  public static let readByTypeRequest: UInt8 = 0x08
  public static let readByTypeResponse: UInt8 = 0x09
  public static let readByGroupTypeRequest: UInt8 = 0x10
  public static let writeRequest: UInt8 = 0x12
  public static let writeResponse: UInt8 = 0x13
  /// Write Without Response: no answer, not even an error.
  public static let writeCommand: UInt8 = 0x52
  public static let notification: UInt8 = 0x1B
  public static let indication: UInt8 = 0x1D
  public static let confirmation: UInt8 = 0x1E

  public static let primaryService: UInt16 = 0x2800
  public static let characteristic: UInt16 = 0x2803
  public static let clientConfiguration: UInt16 = 0x2902

  /// Error codes (3.4.1.1).
  public static let attributeNotFound: UInt8 = 0x0A
  public static let requestNotSupported: UInt8 = 0x06

  /// Names for the common error codes, for output.
  public static func errorName(_ code: UInt8) -> String {
    switch code {
    case 0x01: "invalid_handle"
    case 0x02: "read_not_permitted"
    case 0x03: "write_not_permitted"
    case 0x05: "insufficient_authentication"
    case 0x06: "request_not_supported"
    case 0x07: "invalid_offset"
    case 0x08: "insufficient_authorization"
    case 0x0A: "attribute_not_found"
    case 0x0D: "invalid_attribute_value_length"
    case 0x0E: "unlikely_error"
    case 0x0F: "insufficient_encryption"
    case 0x80: "earshot_unknown_opcode"
    case 0x81: "earshot_value_out_of_range"
    case 0x82: "earshot_invalid_text"
    case 0x80...0x9F: "application_error"
    default: "error"
    }
  }

  /// A 128-bit UUID string as ATT carries it: 16 bytes, little-endian.
  public static func uuidBytes(_ text: String) -> [UInt8]? {
    guard let big = bytes(fromHex: text.filter { $0 != "-" }), big.count == 16 else { return nil }
    return big.reversed()
  }

  // MARK: Requests

  public static func exchangeMTU(_ mtu: UInt16) -> [UInt8] {
    var w = ByteWriter()
    w.u8(mtuRequest)
    w.u16le(mtu)
    return w.bytes
  }

  public static func findByTypeValue(start: UInt16, end: UInt16, type: UInt16, value: [UInt8])
    -> [UInt8]
  {
    var w = ByteWriter()
    w.u8(findByTypeValueRequest)
    w.u16le(start)
    w.u16le(end)
    w.u16le(type)
    w.append(value)
    return w.bytes
  }

  public static func readByType(start: UInt16, end: UInt16, type: UInt16) -> [UInt8] {
    var w = ByteWriter()
    w.u8(readByTypeRequest)
    w.u16le(start)
    w.u16le(end)
    w.u16le(type)
    return w.bytes
  }

  public static func findInformation(start: UInt16, end: UInt16) -> [UInt8] {
    var w = ByteWriter()
    w.u8(findInformationRequest)
    w.u16le(start)
    w.u16le(end)
    return w.bytes
  }

  public static func write(handle: UInt16, value: [UInt8]) -> [UInt8] {
    var w = ByteWriter()
    w.u8(writeRequest)
    w.u16le(handle)
    w.append(value)
    return w.bytes
  }

  public static func writeCommand(handle: UInt16, value: [UInt8]) -> [UInt8] {
    var w = ByteWriter()
    w.u8(writeCommand)
    w.u16le(handle)
    w.append(value)
    return w.bytes
  }

  public static func error(request: UInt8, handle: UInt16, code: UInt8) -> [UInt8] {
    var w = ByteWriter()
    w.u8(errorResponse)
    w.u8(request)
    w.u16le(handle)
    w.u8(code)
    return w.bytes
  }

  public static func mtuReply(_ mtu: UInt16) -> [UInt8] {
    var w = ByteWriter()
    w.u8(mtuResponse)
    w.u16le(mtu)
    return w.bytes
  }

  // MARK: What arrives

  public struct Characteristic: Equatable, Sendable {
    public var declaration: UInt16
    public var properties: UInt8
    public var valueHandle: UInt16
    /// 2 or 16 bytes, little-endian as on the wire.
    public var uuid: [UInt8]
  }

  public enum PDU: Equatable, Sendable {
    case error(request: UInt8, handle: UInt16, code: UInt8)
    case mtu(UInt16)
    /// (found handle, group end handle)
    case servicesFound([(UInt16, UInt16)])
    case characteristics([Characteristic])
    /// (handle, 16-bit UUID or nil for a 128-bit one)
    case information([(UInt16, UInt16?)])
    case written
    case notification(handle: UInt16, value: [UInt8])
    case indication(handle: UInt16, value: [UInt8])
    /// A request from the peer's own client: it needs an answer.
    case peerRequest(opcode: UInt8)
    /// A command or anything else that needs no answer.
    case other(opcode: UInt8)

    public static func == (a: PDU, b: PDU) -> Bool {
      switch (a, b) {
      case (.error(let r1, let h1, let c1), .error(let r2, let h2, let c2)):
        r1 == r2 && h1 == h2 && c1 == c2
      case (.mtu(let x), .mtu(let y)): x == y
      case (.servicesFound(let x), .servicesFound(let y)):
        x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
      case (.characteristics(let x), .characteristics(let y)): x == y
      case (.information(let x), .information(let y)):
        x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
      case (.written, .written): true
      case (.notification(let h1, let v1), .notification(let h2, let v2)): h1 == h2 && v1 == v2
      case (.indication(let h1, let v1), .indication(let h2, let v2)): h1 == h2 && v1 == v2
      case (.peerRequest(let x), .peerRequest(let y)): x == y
      case (.other(let x), .other(let y)): x == y
      default: false
      }
    }
  }

  /// Decodes one PDU; `nil` when it is malformed.
  public static func decode(_ bytes: [UInt8]) -> PDU? {
    bytes.withUnsafeBytes { raw -> PDU? in
      var r = ByteReader(raw)
      guard let op = r.u8() else { return nil }
      switch op {
      case errorResponse:
        guard let req = r.u8(), let h = r.u16le(), let code = r.u8() else { return nil }
        return .error(request: req, handle: h, code: code)
      case mtuResponse:
        guard let m = r.u16le() else { return nil }
        return .mtu(m)
      case findByTypeValueResponse:
        var out: [(UInt16, UInt16)] = []
        while r.remaining >= 4 { out.append((r.u16le()!, r.u16le()!)) }
        return r.isAtEnd && !out.isEmpty ? .servicesFound(out) : nil
      case readByTypeResponse:
        guard let len = r.u8(), len == 7 || len == 21 else { return nil }
        var out: [Characteristic] = []
        while r.remaining >= Int(len) {
          let decl = r.u16le()!
          let props = r.u8()!
          let value = r.u16le()!
          let uuid = Array(r.take(Int(len) - 5)!)
          out.append(
            Characteristic(declaration: decl, properties: props, valueHandle: value, uuid: uuid))
        }
        return r.isAtEnd && !out.isEmpty ? .characteristics(out) : nil
      case findInformationResponse:
        guard let format = r.u8(), format == 1 || format == 2 else { return nil }
        let size = format == 1 ? 4 : 18
        var out: [(UInt16, UInt16?)] = []
        while r.remaining >= size {
          let h = r.u16le()!
          if format == 1 {
            out.append((h, r.u16le()!))
          } else {
            _ = r.skip(16)
            out.append((h, nil))
          }
        }
        return r.isAtEnd && !out.isEmpty ? .information(out) : nil
      case writeResponse:
        return .written
      case notification, indication:
        guard let h = r.u16le() else { return nil }
        let value = Array(r.rest())
        return op == notification
          ? .notification(handle: h, value: value) : .indication(handle: h, value: value)
      default:
        // Requests have bit 6 (command) clear and are not responses.
        let isCommand = op & 0x40 != 0
        let isResponse = [0x01, 0x03, 0x05, 0x07, 0x09, 0x0B, 0x0D, 0x0F, 0x11, 0x13, 0x17, 0x19]
          .contains(op)
        if !isCommand && !isResponse && op != confirmation { return .peerRequest(opcode: op) }
        return .other(opcode: op)
      }
    }
  }
}
