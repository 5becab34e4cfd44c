import EarshotTestSupport
import XCTest

@testable import EarshotCore

final class LinkCodecTests: XCTestCase {
  private func decode(_ h: String) -> Result<LinkRequestFrame, LinkDecodeError> {
    LinkCodec.decodeRequest(hex(h))
  }

  private func assertError(
    _ h: String, _ expected: LinkDecodeError, att: UInt8, file: StaticString = #filePath,
    line: UInt = #line
  ) {
    switch decode(h) {
    case .success(let f): XCTFail("decoded \(f) from \(h)", file: file, line: line)
    case .failure(let e):
      XCTAssertEqual(e, expected, file: file, line: line)
      XCTAssertEqual(e.attErrorCode, att, file: file, line: line)
    }
  }

  // The byte-by-byte examples of docs/link-protocol.md.
  func testRequestGoldenVectors() {
    let table: [(String, LinkRequestFrame)] = [
      ("00 01", .init(seq: 1, request: .info)),
      ("01 07", .init(seq: 7, request: .findStart)),
      ("02 08", .init(seq: 8, request: .findStop)),
      ("03 09 2a 00 00", .init(seq: 9, request: .noticeAck(notice: 42, result: 0))),
      ("03 0a 01 01 05", .init(seq: 10, request: .noticeAck(notice: 257, result: 5))),
      ("10 ff", .init(seq: 255, request: .volumeGet)),
      ("11 0b f4 01", .init(seq: 11, request: .volumeSet(permille: 500))),
      ("11 0c e8 03", .init(seq: 12, request: .volumeSet(permille: 1000))),
      ("12 0d 01", .init(seq: 13, request: .volumeMute(true))),
      ("12 0e 00", .init(seq: 14, request: .volumeMute(false))),
      ("20 0f 01", .init(seq: 15, request: .shutter(.enter))),
      ("20 10 02", .init(seq: 16, request: .shutter(.capture))),
      ("20 11 00", .init(seq: 17, request: .shutter(.exit))),
      ("20 12 ff", .init(seq: 18, request: .shutter(.unknown(0xFF)))),
      ("30 13 4a 61 7a 7a", .init(seq: 19, request: .playMedia(title: "Jazz"))),
      ("30 14 43 61 66 c3 a9", .init(seq: 20, request: .playMedia(title: "Café"))),
    ]
    for (h, frame) in table {
      XCTAssertEqual(try decode(h).get(), frame, h)
      XCTAssertEqual(LinkCodec.encode(frame), hex(h), h)
    }
  }

  func testEveryOpcodeHasARowAndAName() {
    for op in LinkOpcode.allCases {
      XCTAssertNotNil(LinkCodec.requests[op.rawValue], op.name)
      XCTAssertEqual(op.rawValue & LinkOpcode.responseBit, 0)
    }
    XCTAssertEqual(LinkCodec.requests.count, LinkOpcode.allCases.count)
    // Notification codes and response codes never collide with each other.
    for n in LinkNotificationCode.allCases {
      XCTAssertTrue((0x40...0x7F).contains(n.rawValue))
      XCTAssertNil(LinkOpcode(rawValue: n.rawValue))
    }
  }

  func testMalformedWritesMapToATTErrors() {
    assertError("", .tooShort(0), att: 0x0D)
    assertError("01", .tooShort(1), att: 0x0D)
    assertError("05 01", .unknownOpcode(0x05), att: 0x80)
    assertError("81 01", .unknownOpcode(0x81), att: 0x80)
    assertError("40 01 00 00", .unknownOpcode(0x40), att: 0x80)
    assertError("01 01 00", .badLength(opcode: 0x01, got: 1, expected: "0"), att: 0x0D)
    assertError("03 01 2a 00", .badLength(opcode: 0x03, got: 2, expected: "3"), att: 0x0D)
    assertError("11 01 f4", .badLength(opcode: 0x11, got: 1, expected: "2"), att: 0x0D)
    assertError("11 01 f4 01 00", .badLength(opcode: 0x11, got: 3, expected: "2"), att: 0x0D)
    assertError(
      "11 01 e9 03", .outOfRange(field: "volume level (0...1000)", value: 1001), att: 0x81)
    assertError("12 01 02", .outOfRange(field: "mute flag (0 or 1)", value: 2), att: 0x81)
    assertError("20 01", .badLength(opcode: 0x20, got: 0, expected: "1"), att: 0x0D)
    assertError("30 01", .badLength(opcode: 0x30, got: 0, expected: "1 to 240"), att: 0x0D)
    assertError("30 01 c3", .invalidText(field: "title"), att: 0x82)
    assertError("30 01 ff fe", .invalidText(field: "title"), att: 0x82)
    // Overlong encoding of "/" is not UTF-8.
    assertError("30 01 c0 af", .invalidText(field: "title"), att: 0x82)
    let long = [UInt8](repeating: 0x41, count: 241)
    XCTAssertEqual(
      LinkCodec.decodeRequest([0x30, 1] + long),
      .failure(.badLength(opcode: 0x30, got: 241, expected: "1 to 240")))
    XCTAssertEqual(
      LinkCodec.decodeRequest([0x30, 1] + long.dropLast()),
      .success(.init(seq: 1, request: .playMedia(title: String(repeating: "A", count: 240)))))
    XCTAssertEqual(LinkCodec.decodeRequest(hex("01 01"), offset: 3), .failure(.nonZeroOffset(3)))
    XCTAssertEqual(LinkDecodeError.nonZeroOffset(3).attErrorCode, 0x07)
  }

  /// How each ATT code travels through BlueZ's WriteValue error.
  func testBlueZErrorMapping() {
    XCTAssertEqual(
      BlueZGattError.dbusError(forATT: 0x0D).name, "org.bluez.Error.InvalidValueLength")
    XCTAssertEqual(BlueZGattError.dbusError(forATT: 0x07).name, "org.bluez.Error.InvalidOffset")
    XCTAssertEqual(BlueZGattError.dbusError(forATT: 0x08).name, "org.bluez.Error.NotAuthorized")
    XCTAssertEqual(BlueZGattError.dbusError(forATT: 0x81).name, "org.bluez.Error.Failed")
    XCTAssertEqual(BlueZGattError.dbusError(forATT: 0x81).message, "0x81")
    XCTAssertEqual(BlueZGattError.dbusError(forATT: 0x9F).message, "0x9f")
    // Every decode error's code has a route.
    for e: LinkDecodeError in [
      .tooShort(0), .unknownOpcode(5), .outOfRange(field: "x", value: 1),
      .invalidText(field: "t"), .nonZeroOffset(1), .legacyNotFinite,
    ] {
      XCTAssertTrue(
        BlueZGattError.dbusError(forATT: e.attErrorCode).name.hasPrefix("org.bluez.Error."))
    }
  }

  func testErrorMessagesSayWhatIsWrong() {
    XCTAssertEqual(
      LinkDecodeError.unknownOpcode(0x05).description,
      "unknown opcode 0x05; see docs/link-protocol.md for the opcodes")
    XCTAssertEqual(
      LinkDecodeError.badLength(opcode: 0x11, got: 1, expected: "2").description,
      "opcode 0x11 takes 2 payload bytes, got 1")
  }

  func testResponseGoldenVectors() {
    let table: [(LinkResponse, String)] = [
      (
        LinkResponse(
          opcode: .info, seq: 1, status: .ok,
          body: .info(version: 1, features: [.find, .volume, .shutter, .media])),
        "80 01 00 01 0f"
      ),
      (
        LinkResponse(opcode: .findStart, seq: 7, status: .ok, body: .findStart(.ringing)),
        "81 07 00 00"
      ),
      (
        LinkResponse(opcode: .findStart, seq: 7, status: .ok, body: .findStart(.joined)),
        "81 07 00 01"
      ),
      (
        LinkResponse(opcode: .findStop, seq: 8, status: .ok, body: .findStop(.stopped)),
        "82 08 00 00"
      ),
      (LinkResponse(opcode: .noticeAck, seq: 9, status: .ok), "83 09 00"),
      (LinkResponse(opcode: .noticeAck, seq: 9, status: .unknownNotice), "83 09 08"),
      (
        LinkResponse(
          opcode: .volumeGet, seq: 3, status: .ok, body: .volume(.init(permille: 420, muted: true))),
        "90 03 00 a4 01 01"
      ),
      (
        LinkResponse(
          opcode: .volumeSet, seq: 11, status: .ok,
          body: .volume(.init(permille: 500, muted: false))),
        "91 0b 00 f4 01 00"
      ),
      (LinkResponse(opcode: .volumeSet, seq: 11, status: .unavailable), "91 0b 04"),
      (
        LinkResponse(opcode: .shutter, seq: 15, status: .ok, body: .shutter(.enteredPhotoMode)),
        "a0 0f 00 01"
      ),
      (LinkResponse(opcode: .shutter, seq: 18, status: .unknownEvent), "a0 12 09"),
      (LinkResponse(opcode: .playMedia, seq: 19, status: .ok), "b0 13 00"),
      (LinkResponse(opcode: .playMedia, seq: 19, status: .notFound), "b0 13 05"),
      (LinkResponse(opcode: .playMedia, seq: 19, status: .playerNotRunning), "b0 13 07"),
    ]
    for (response, h) in table {
      XCTAssertEqual(LinkCodec.encode(response), hex(h), h)
      XCTAssertEqual(try LinkCodec.decodeIncoming(hex(h)).get(), .response(response), h)
    }
  }

  func testAnErrorResponseCarriesNoBody() {
    let r = LinkResponse(
      opcode: .volumeGet, seq: 2, status: .busy, body: .volume(.init(permille: 1, muted: false)))
    XCTAssertEqual(r.body, .none)
    XCTAssertEqual(LinkCodec.encode(r), hex("90 02 02"))
  }

  func testNotificationGoldenVectors() {
    let table: [(LinkNotification, UInt8, String)] = [
      (.phoneFound(notice: 42), 1, "40 01 2a 00"),
      (.volumeChanged(.init(permille: 900, muted: false)), 2, "41 02 84 03 00"),
      (.shutterState(.photoSuccess), 3, "42 03 02"),
      (.findEnded(.timeout), 4, "43 04 02"),
    ]
    for (n, seq, h) in table {
      XCTAssertEqual(LinkCodec.encode(n, seq: seq), hex(h), h)
      XCTAssertEqual(try LinkCodec.decodeIncoming(hex(h)).get(), .notification(seq: seq, n), h)
    }
  }

  func testMalformedIncomingIsAnErrorNotACrash() {
    XCTAssertEqual(LinkCodec.decodeIncoming(hex("40")), .failure(.tooShort(1)))
    XCTAssertEqual(LinkCodec.decodeIncoming(hex("85 01 00")), .failure(.unknownOpcode(0x85)))
    XCTAssertEqual(
      LinkCodec.decodeIncoming(hex("81 01 7f")),
      .failure(.unknownCode(field: "status", value: 0x7F)))
    XCTAssertEqual(
      LinkCodec.decodeIncoming(hex("81 01 00")),
      .failure(.badLength(opcode: 0x81, got: 0, expected: "1")))
    XCTAssertEqual(
      LinkCodec.decodeIncoming(hex("81 01 00 09")),
      .failure(.unknownCode(field: "find_start result", value: 9)))
    XCTAssertEqual(
      LinkCodec.decodeIncoming(hex("41 01 e9 03 00")),
      .failure(.outOfRange(field: "volume level (0...1000)", value: 1001)))
    XCTAssertEqual(
      LinkCodec.decodeIncoming(hex("7f 01")),
      .failure(.unknownCode(field: "notification", value: 0x7F)))
  }

  func testVolumeConversions() {
    XCTAssertEqual(LinkVolume(level: 0.5, muted: false).permille, 500)
    XCTAssertEqual(LinkVolume(level: 0.0004, muted: false).permille, 0)
    XCTAssertEqual(LinkVolume(level: 0.0005, muted: false).permille, 1)
    XCTAssertEqual(LinkVolume(level: 2, muted: false).permille, 1000)
    XCTAssertEqual(LinkVolume(level: -1, muted: false).permille, 0)
    XCTAssertEqual(LinkVolume(level: .nan, muted: true).permille, 0)
    XCTAssertEqual(LinkVolume(permille: 5000, muted: false).permille, 1000)
    XCTAssertEqual(LinkVolume(permille: 250, muted: false).level, 0.25)
    // Every per-mille value survives level and back.
    for p in UInt16(0)...1000 {
      XCTAssertEqual(
        LinkVolume(level: LinkVolume(permille: p, muted: false).level, muted: false).permille, p)
    }
  }

  func testShutterEventWireValues() {
    XCTAssertEqual(LinkShutterEvent(wire: 0), .exit)
    XCTAssertEqual(LinkShutterEvent(wire: 1), .enter)
    XCTAssertEqual(LinkShutterEvent(wire: 2), .capture)
    for b in UInt8(3)...255 { XCTAssertEqual(LinkShutterEvent(wire: b), .unknown(b)) }
    for b in UInt8(0)...255 { XCTAssertEqual(LinkShutterEvent(wire: b).wire, b) }
    XCTAssertEqual(LinkShutterState.allCases.map(\.rawValue), [0, 1, 2, 3])
  }

  /// Random bytes never crash either decoder, and whatever decodes encodes
  /// back to the same bytes (the encoding is canonical).
  func testRandomInputRobustness() {
    var rng = SplitMix64(seed: 0x5EED_1234)
    var decodedRequests = 0
    var decodedIncoming = 0
    for i in 0..<50_000 {
      let length = i % 2 == 0 ? 2 + Int(rng.next() % 5) : Int(rng.next() % 12)
      var bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
      // Bias the first byte towards real codes so deeper paths run.
      if !bytes.isEmpty, i % 2 == 0 {
        let codes: [UInt8] =
          LinkOpcode.allCases.map(\.rawValue)
          + LinkOpcode.allCases.map { $0.rawValue | 0x80 }
          + LinkNotificationCode.allCases.map(\.rawValue)
        bytes[0] = codes[Int(rng.next() % UInt64(codes.count))]
        // Mostly small values after the sequence number: statuses, enums, flags.
        for j in 2..<bytes.count where rng.next() % 4 != 0 { bytes[j] = UInt8(rng.next() % 4) }
      }
      if case .success(let frame) = LinkCodec.decodeRequest(bytes) {
        decodedRequests += 1
        XCTAssertEqual(LinkCodec.encode(frame), bytes)
      }
      if case .success(let incoming) = LinkCodec.decodeIncoming(bytes) {
        decodedIncoming += 1
        switch incoming {
        case .response(let r): XCTAssertEqual(LinkCodec.encode(r), bytes)
        case .notification(let seq, let n): XCTAssertEqual(LinkCodec.encode(n, seq: seq), bytes)
        }
      }
      switch LegacyRemoteVolume.decode(bytes) {
      case .success(.setVolume(let v)): XCTAssertTrue((0...1).contains(v))
      default: break
      }
    }
    // The bias makes sure both decoders accepted a good share.
    XCTAssertGreaterThan(decodedRequests, 2_000, "\(decodedRequests)")
    XCTAssertGreaterThan(decodedIncoming, 2_000, "\(decodedIncoming)")
  }
}

/// A small deterministic generator, so a failing random case reproduces.
struct SplitMix64 {
  var state: UInt64
  init(seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

final class LegacyRemoteVolumeTests: XCTestCase {
  func testRequests() {
    XCTAssertEqual(LegacyRemoteVolume.decode(Array("REQ_NAME".utf8)), .success(.name))
    XCTAssertEqual(LegacyRemoteVolume.decode(Array("REQ_VOLUME".utf8)), .success(.volume))
    XCTAssertEqual(
      LegacyRemoteVolume.decode(hex("00 00 00 00 00 00 e0 3f")), .success(.setVolume(0.5)))
    XCTAssertEqual(
      LegacyRemoteVolume.decode(hex("00 00 00 00 00 00 00 00")), .success(.setVolume(0)))
    XCTAssertEqual(
      LegacyRemoteVolume.decode(hex("00 00 00 00 00 00 f0 3f")), .success(.setVolume(1)))
    // Lower case is not the command: 10 bytes, so not a volume either.
    XCTAssertEqual(LegacyRemoteVolume.decode(Array("req_volume".utf8)), .failure(.legacyLength(10)))
  }

  func testRejectedWrites() {
    let cases: [([UInt8], LinkDecodeError)] = [
      ([], .legacyLength(0)),
      (hex("00 00 00 00 00 00 e0"), .legacyLength(7)),
      (hex("00 00 00 00 00 00 e0 3f 00"), .legacyLength(9)),
      (LegacyRemoteVolume.encodeVolume(.nan), .legacyNotFinite),
      (LegacyRemoteVolume.encodeVolume(.infinity), .legacyNotFinite),
      (LegacyRemoteVolume.encodeVolume(-.infinity), .legacyNotFinite),
      (LegacyRemoteVolume.encodeVolume(-0.1), .legacyOutOfRange(-0.1)),
      (LegacyRemoteVolume.encodeVolume(1.0000001), .legacyOutOfRange(1.0000001)),
      (LegacyRemoteVolume.encodeVolume(50), .legacyOutOfRange(50)),
    ]
    for (bytes, error) in cases {
      XCTAssertEqual(LegacyRemoteVolume.decode(bytes), .failure(error), "\(bytes)")
    }
    XCTAssertEqual(LinkDecodeError.legacyLength(7).attErrorCode, 0x0D)
    XCTAssertEqual(LinkDecodeError.legacyNotFinite.attErrorCode, 0x81)
    XCTAssertEqual(LinkDecodeError.legacyOutOfRange(2).attErrorCode, 0x81)
    XCTAssertEqual(LegacyRemoteVolume.decode(hex("00"), offset: 1), .failure(.nonZeroOffset(1)))
  }

  func testNotifications() {
    XCTAssertEqual(LegacyRemoteVolume.encodeVolume(0.5), hex("00 00 00 00 00 00 e0 3f"))
    XCTAssertEqual(LegacyRemoteVolume.decodeVolume(hex("9a 99 99 99 99 99 d9 3f")), 0.4)
    XCTAssertEqual(LegacyRemoteVolume.decodeVolume(LegacyRemoteVolume.encodeVolume(0.73)), 0.73)
    XCTAssertNil(LegacyRemoteVolume.decodeVolume([1, 2, 3]))
    XCTAssertEqual(LegacyRemoteVolume.encodeName("lab-laptop"), Array("lab-laptop".utf8))
    // Cut at a character boundary, never inside "é" (2 bytes).
    XCTAssertEqual(LegacyRemoteVolume.encodeName("aaaaaaaaaaaaaaaaaaaé", maxBytes: 20).count, 19)
    XCTAssertEqual(LegacyRemoteVolume.encodeName("ééé", maxBytes: 5), Array("éé".utf8))
  }
}
