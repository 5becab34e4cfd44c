/// Encodes and decodes the link's frames (docs/link-protocol.md).
///
/// Request (write characteristic):   opcode u8 | seq u8 | payload
/// Response (notify characteristic): opcode|0x80 u8 | seq u8 | status u8 | body (status ok only)
/// Notification (notify):            code u8 (0x40...0x7F) | seq u8 | payload
///
/// Decoding is table-driven: one row per opcode gives the payload length it
/// takes and how to read it, so a length check always happens before a field
/// is read, and every malformed input maps to a `LinkDecodeError`.
public enum LinkCodec {
  public static let version: UInt8 = 1
  /// Longest play_media title in bytes (the request is then 242 bytes, which
  /// needs an ATT MTU of 245 or more).
  public static let maxTitleBytes = 240

  /// How many payload bytes an opcode takes.
  public enum Length: Sendable, Equatable {
    case exactly(Int)
    case between(Int, Int)

    func accepts(_ n: Int) -> Bool {
      switch self {
      case .exactly(let e): n == e
      case .between(let lo, let hi): n >= lo && n <= hi
      }
    }

    var text: String {
      switch self {
      case .exactly(let e): "\(e)"
      case .between(let lo, let hi): "\(lo) to \(hi)"
      }
    }
  }

  struct Row: Sendable {
    let length: Length
    /// Reads the payload; only called once the length is known to fit.
    let read: @Sendable (inout ByteReader) -> Result<LinkRequest, LinkDecodeError>
  }

  /// The request table, indexed by opcode byte.
  static let requests: [UInt8: Row] = [
    LinkOpcode.info.rawValue: Row(length: .exactly(0)) { _ in .success(.info) },
    LinkOpcode.findStart.rawValue: Row(length: .exactly(0)) { _ in .success(.findStart) },
    LinkOpcode.findStop.rawValue: Row(length: .exactly(0)) { _ in .success(.findStop) },
    LinkOpcode.noticeAck.rawValue: Row(length: .exactly(3)) { r in
      guard let notice = r.u16le(), let result = r.u8() else { return .failure(.tooShort(0)) }
      return .success(.noticeAck(notice: notice, result: result))
    },
    LinkOpcode.volumeGet.rawValue: Row(length: .exactly(0)) { _ in .success(.volumeGet) },
    LinkOpcode.volumeSet.rawValue: Row(length: .exactly(2)) { r in
      guard let level = r.u16le() else { return .failure(.tooShort(0)) }
      guard level <= LinkVolume.maxLevel else {
        return .failure(.outOfRange(field: "volume level (0...1000)", value: Int(level)))
      }
      return .success(.volumeSet(permille: level))
    },
    LinkOpcode.volumeMute.rawValue: Row(length: .exactly(1)) { r in
      guard let flag = r.u8() else { return .failure(.tooShort(0)) }
      guard flag <= 1 else {
        return .failure(.outOfRange(field: "mute flag (0 or 1)", value: Int(flag)))
      }
      return .success(.volumeMute(flag == 1))
    },
    LinkOpcode.shutter.rawValue: Row(length: .exactly(1)) { r in
      guard let event = r.u8() else { return .failure(.tooShort(0)) }
      return .success(.shutter(LinkShutterEvent(wire: event)))
    },
    LinkOpcode.playMedia.rawValue: Row(length: .between(1, maxTitleBytes)) { r in
      let raw = r.rest()
      guard let title = validUTF8(raw) else { return .failure(.invalidText(field: "title")) }
      return .success(.playMedia(title: title))
    },
  ]

  /// The payload length rule for an opcode (for docs and tests).
  public static func payloadLength(_ op: LinkOpcode) -> Length {
    requests[op.rawValue]!.length
  }

  // MARK: Requests

  /// Decodes one write to the write characteristic. `offset` is the ATT
  /// write offset; the link only takes whole writes.
  public static func decodeRequest(_ bytes: UnsafeRawBufferPointer, offset: Int = 0)
    -> Result<LinkRequestFrame, LinkDecodeError>
  {
    guard offset == 0 else { return .failure(.nonZeroOffset(offset)) }
    var r = ByteReader(bytes)
    guard let op = r.u8(), let seq = r.u8() else { return .failure(.tooShort(bytes.count)) }
    guard let row = requests[op] else { return .failure(.unknownOpcode(op)) }
    guard row.length.accepts(r.remaining) else {
      return .failure(.badLength(opcode: op, got: r.remaining, expected: row.length.text))
    }
    return row.read(&r).map { LinkRequestFrame(seq: seq, request: $0) }
  }

  public static func decodeRequest(_ bytes: [UInt8], offset: Int = 0)
    -> Result<LinkRequestFrame, LinkDecodeError>
  {
    bytes.withUnsafeBytes { decodeRequest($0, offset: offset) }
  }

  public static func encode(_ frame: LinkRequestFrame) -> [UInt8] {
    var w = ByteWriter(capacity: 8)
    w.u8(frame.request.opcode.rawValue)
    w.u8(frame.seq)
    switch frame.request {
    case .info, .findStart, .findStop, .volumeGet: break
    case .noticeAck(let notice, let result):
      w.u16le(notice)
      w.u8(result)
    case .volumeSet(let level): w.u16le(level)
    case .volumeMute(let on): w.u8(on ? 1 : 0)
    case .shutter(let event): w.u8(event.wire)
    case .playMedia(let title): w.append(title.utf8.prefix(maxTitleBytes))
    }
    return w.bytes
  }

  // MARK: Responses and notifications

  public static func encode(_ response: LinkResponse) -> [UInt8] {
    var w = ByteWriter(capacity: 8)
    w.u8(response.opcode.rawValue | LinkOpcode.responseBit)
    w.u8(response.seq)
    w.u8(response.status.rawValue)
    guard response.status == .ok else { return w.bytes }
    switch response.body {
    case .none: break
    case .info(let version, let features):
      w.u8(version)
      w.u8(features.rawValue)
    case .findStart(let r): w.u8(r.rawValue)
    case .findStop(let r): w.u8(r.rawValue)
    case .volume(let v): writeVolume(v, &w)
    case .shutter(let s): w.u8(s.rawValue)
    }
    return w.bytes
  }

  public static func encode(_ notification: LinkNotification, seq: UInt8) -> [UInt8] {
    var w = ByteWriter(capacity: 8)
    w.u8(notification.code.rawValue)
    w.u8(seq)
    switch notification {
    case .phoneFound(let notice): w.u16le(notice)
    case .volumeChanged(let v): writeVolume(v, &w)
    case .shutterState(let s): w.u8(s.rawValue)
    case .findEnded(let reason): w.u8(reason.rawValue)
    }
    return w.bytes
  }

  /// The body an ok response to `op` carries, and its length.
  static func responseBodyLength(_ op: LinkOpcode) -> Int {
    switch op {
    case .info: 2
    case .findStart, .findStop, .shutter: 1
    case .volumeGet, .volumeSet, .volumeMute: 3
    case .noticeAck, .playMedia: 0
    }
  }

  /// Decodes what arrives on the notify characteristic (the central's side).
  public static func decodeIncoming(_ bytes: UnsafeRawBufferPointer)
    -> Result<LinkIncoming, LinkDecodeError>
  {
    var r = ByteReader(bytes)
    guard let code = r.u8(), let seq = r.u8() else { return .failure(.tooShort(bytes.count)) }
    if code & LinkOpcode.responseBit != 0 {
      guard let op = LinkOpcode(rawValue: code & ~LinkOpcode.responseBit) else {
        return .failure(.unknownOpcode(code))
      }
      guard let statusByte = r.u8() else { return .failure(.tooShort(bytes.count)) }
      guard let status = LinkStatus(rawValue: statusByte) else {
        return .failure(.unknownCode(field: "status", value: statusByte))
      }
      let want = status == .ok ? responseBodyLength(op) : 0
      guard r.remaining == want else {
        return .failure(.badLength(opcode: code, got: r.remaining, expected: "\(want)"))
      }
      var body = LinkResponseBody.none
      if status == .ok {
        switch op {
        case .info:
          body = .info(version: r.u8()!, features: LinkFeatures(rawValue: r.u8()!))
        case .findStart:
          let b = r.u8()!
          guard let v = LinkFindStartResult(rawValue: b) else {
            return .failure(.unknownCode(field: "find_start result", value: b))
          }
          body = .findStart(v)
        case .findStop:
          let b = r.u8()!
          guard let v = LinkFindStopResult(rawValue: b) else {
            return .failure(.unknownCode(field: "find_stop result", value: b))
          }
          body = .findStop(v)
        case .volumeGet, .volumeSet, .volumeMute:
          switch readVolume(&r) {
          case .success(let v): body = .volume(v)
          case .failure(let e): return .failure(e)
          }
        case .shutter:
          let b = r.u8()!
          guard let v = LinkShutterState(rawValue: b) else {
            return .failure(.unknownCode(field: "shutter state", value: b))
          }
          body = .shutter(v)
        case .noticeAck, .playMedia: break
        }
      }
      return .success(.response(LinkResponse(opcode: op, seq: seq, status: status, body: body)))
    }
    guard let kind = LinkNotificationCode(rawValue: code) else {
      return .failure(.unknownCode(field: "notification", value: code))
    }
    let want: Int
    switch kind {
    case .phoneFound: want = 2
    case .volumeChanged: want = 3
    case .shutterState, .findEnded: want = 1
    }
    guard r.remaining == want else {
      return .failure(.badLength(opcode: code, got: r.remaining, expected: "\(want)"))
    }
    let n: LinkNotification
    switch kind {
    case .phoneFound: n = .phoneFound(notice: r.u16le()!)
    case .volumeChanged:
      switch readVolume(&r) {
      case .success(let v): n = .volumeChanged(v)
      case .failure(let e): return .failure(e)
      }
    case .shutterState:
      let b = r.u8()!
      guard let s = LinkShutterState(rawValue: b) else {
        return .failure(.unknownCode(field: "shutter state", value: b))
      }
      n = .shutterState(s)
    case .findEnded:
      let b = r.u8()!
      guard let s = LinkFindEndReason(rawValue: b) else {
        return .failure(.unknownCode(field: "find_ended reason", value: b))
      }
      n = .findEnded(s)
    }
    return .success(.notification(seq: seq, n))
  }

  public static func decodeIncoming(_ bytes: [UInt8]) -> Result<LinkIncoming, LinkDecodeError> {
    bytes.withUnsafeBytes { decodeIncoming($0) }
  }

  // MARK: Helpers

  private static func writeVolume(_ v: LinkVolume, _ w: inout ByteWriter) {
    w.u16le(v.permille)
    w.u8(v.muted ? 1 : 0)
  }

  private static func readVolume(_ r: inout ByteReader) -> Result<LinkVolume, LinkDecodeError> {
    guard let level = r.u16le(), let flags = r.u8() else { return .failure(.tooShort(0)) }
    guard level <= LinkVolume.maxLevel else {
      return .failure(.outOfRange(field: "volume level (0...1000)", value: Int(level)))
    }
    guard flags <= 1 else { return .failure(.outOfRange(field: "volume flags", value: Int(flags))) }
    return .success(LinkVolume(permille: level, muted: flags == 1))
  }

  /// The bytes as a String if they are non-empty, valid UTF-8 (the
  /// String(decoding:) initialiser would silently repair them instead).
  static func validUTF8(_ raw: UnsafeRawBufferPointer) -> String? {
    guard !raw.isEmpty else { return nil }
    var it = raw.makeIterator()
    var decoder = UTF8()
    var scalars = String.UnicodeScalarView()
    loop: while true {
      switch decoder.decode(&it) {
      case .scalarValue(let s): scalars.append(s)
      case .emptyInput: break loop
      case .error: return nil
      }
    }
    return String(scalars)
  }
}
