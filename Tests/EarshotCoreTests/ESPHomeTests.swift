import EarshotCore
import EarshotTestSupport
import XCTest

/// The proxy's pure parts: protobuf wire, frames, messages, batches and the
/// session's guarantees (bounded queue, oldest dropped, errors close).
final class ESPHomeTests: XCTestCase {
  func testVarintsAndZigzag() {
    var out: [UInt8] = []
    ProtobufWire.appendVarint(300, to: &out)
    XCTAssertEqual(out, [0xAC, 0x02])
    out.withUnsafeBytes { raw in
      var i = 0
      XCTAssertEqual(ProtobufWire.readVarint(raw, at: &i), 300)
      XCTAssertEqual(i, 2)
    }
    XCTAssertEqual(ProtobufWire.zigzag(-1), 1)
    XCTAssertEqual(ProtobufWire.zigzag(-70), 139)
    for v: Int32 in [0, 1, -1, -127, 127, .min, .max] {
      XCTAssertEqual(ProtobufWire.unzigzag(ProtobufWire.zigzag(v)), v)
    }
  }

  func testFieldsAreCheckedWholeBeforeAnyIsDelivered() throws {
    // Field 1 varint 150, field 2 "hi".
    XCTAssertEqual(try protobufFields([0x08, 0x96, 0x01, 0x12, 0x02, 0x68, 0x69]).count, 2)
    XCTAssertThrowsError(try protobufFields([0x08, 0x96, 0x01, 0x12, 0x05, 0x68]))
    XCTAssertThrowsError(try protobufFields([0x08, 0x96]))
    XCTAssertThrowsError(try protobufFields([0x0B]))  // wire type 3 (groups)
  }

  func testPlaintextFramesArriveWholeWhateverTheSplit() throws {
    // HelloRequest (type 1) with client_info "x", then PingRequest (7).
    let wire: [UInt8] = [0x00, 0x03, 0x01, 0x0A, 0x01, 0x78, 0x00, 0x00, 0x07]
    var d = ESPHomeFrameDecoder(framing: .plaintext)
    var frames: [ESPHomeFrame] = []
    for b in wire { frames += try d.push([b]) }
    XCTAssertEqual(
      frames, [.plaintext(type: 1, body: [0x0A, 0x01, 0x78]), .plaintext(type: 7, body: [])])
  }

  func testBadFramesAreErrors() {
    var noise = ESPHomeFrameDecoder(framing: .noise, maxFrame: 100)
    XCTAssertThrowsError(try noise.push([0x00, 0x00, 0x00])) {
      XCTAssertEqual($0 as? ESPHomeFrameError, .badIndicator(0))
    }
    var big = ESPHomeFrameDecoder(framing: .noise, maxFrame: 100)
    XCTAssertThrowsError(try big.push([0x01, 0x01, 0x00])) {
      XCTAssertEqual($0 as? ESPHomeFrameError, .oversized(256))
    }
    var plain = ESPHomeFrameDecoder(framing: .plaintext)
    XCTAssertThrowsError(try plain.push(Array("GET /".utf8)))
  }

  func testDeviceInfoSaysPassiveScanRawAdvertisementsAndStateAndMode() throws {
    let info = Self.info(encrypted: true)
    let fields = try protobufFields(ESPHomeServerMessage.deviceInfoResponse(info))
    XCTAssertTrue(fields.contains { $0.0 == 15 && $0.1 == .varint(1 | 32 | 64) })
    XCTAssertTrue(
      fields.contains { $0.0 == 18 && $0.1 == .bytes(Array("02:00:00:00:00:01".utf8)) },
      "bluetooth_mac_address: the scanner's source in Home Assistant")
    XCTAssertTrue(fields.contains { $0.0 == 2 && $0.1 == .bytes(Array("laptop".utf8)) })
    XCTAssertTrue(fields.contains { $0.0 == 19 && $0.1 == .varint(1) })
  }

  func testClientMessagesByTheTable() throws {
    XCTAssertEqual(
      try ESPHomeClientMessage.decode(type: 1, body: [0x0A, 0x01, 0x78, 0x10, 0x01, 0x18, 0x13]),
      .hello(clientInfo: "x", major: 1, minor: 19))
    XCTAssertEqual(
      try ESPHomeClientMessage.decode(type: 66, body: [0x08, 0x01]),
      .subscribeAdvertisements(flags: 1))
    XCTAssertEqual(try ESPHomeClientMessage.decode(type: 4242, body: []), .ignored(type: 4242))
    XCTAssertThrowsError(try ESPHomeClientMessage.decode(type: 1, body: [0x0A, 0x09]))
  }

  func testBatchesOfSixteenRoundTrip() throws {
    var b = ESPHomeAdvertisementBatcher()
    var full: [UInt8]? = nil
    let ads = (0..<16).map {
      ESPHomeRawAdvertisement(
        address: 0xC000_0000_0000 + UInt64($0), rssi: -40 - Int32($0), addressType: UInt32($0 % 2),
        data: [0x02, 0x01, 0x06, UInt8($0)])
    }
    for a in ads { full = b.add(a) ?? full }
    XCTAssertEqual(try ESPHomeRawAdvertisement.decodeBatch(XCTUnwrap(full)), ads)
    XCTAssertNil(b.flush())
    _ = b.add(ads[0])
    XCTAssertEqual(try ESPHomeRawAdvertisement.decodeBatch(XCTUnwrap(b.flush())), [ads[0]])
  }

  func testKeyIsThirtyTwoBytesOfBase64() throws {
    XCTAssertEqual(
      try ESPHomeKey.decode("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"), Array(0..<32))
    XCTAssertThrowsError(try ESPHomeKey.decode("AAEC"))
    XCTAssertThrowsError(try ESPHomeKey.decode("not base64 at all!!"))
  }

  func testNodeNameFromHostname() {
    XCTAssertEqual(ESPHomeDeviceInfo.nodeName(fromHostname: "My_Laptop.lan"), "my-laptop")
    XCTAssertEqual(ESPHomeDeviceInfo.nodeName(fromHostname: "--"), "earshot")
  }

  // MARK: The session

  static func info(encrypted: Bool) -> ESPHomeDeviceInfo {
    ESPHomeDeviceInfo(
      name: "laptop", friendlyName: "Laptop", macAddress: "02:00:00:00:00:01",
      bluetoothMacAddress: "02:00:00:00:00:01", compilationTime: "t", projectVersion: "0.1",
      encrypted: encrypted)
  }

  func plainFrame(_ type: UInt32, _ body: [UInt8] = []) -> [UInt8] {
    [0x00, UInt8(body.count), UInt8(type)] + body
  }

  func testPlaintextSessionAnswersAndQueuesBoundedOldestDropped() throws {
    var limits = ESPHomeSession.Limits()
    limits.maxQueuedBatches = 4
    var s = ESPHomeSession(
      info: Self.info(encrypted: false), serverInfo: "earshot", psk: nil, crypto: nil,
      limits: limits)
    XCTAssertEqual(s.receive(plainFrame(1)), [.connected(clientInfo: "")])
    let hello = try XCTUnwrap(s.takeOutput())
    XCTAssertEqual(Array(hello.prefix(3)), [0x00, UInt8(hello.count - 3), 0x02])
    s.offer(batch: [1])  // not subscribed: not queued
    XCTAssertNil(s.takeOutput())
    XCTAssertEqual(s.receive(plainFrame(66, [0x08, 0x01]) + plainFrame(7)), [.subscribed])
    for n in 1...10 { s.offer(batch: [0x0A, 0x00, UInt8(n)]) }
    XCTAssertEqual(s.droppedBatches, 6)
    XCTAssertEqual(
      s.takeOutput(), [0x00, 0x02, 126, 0x08, 0x02] + [0x00, 0x00, 0x08],
      "the subscription's scanner state (running, passive) and the ping's answer first")
    // Then batches 7...10, oldest first.
    for n in 7...10 { XCTAssertEqual(s.takeOutput(), [0x00, 0x03, 93, 0x0A, 0x00, UInt8(n)]) }
    XCTAssertNil(s.takeOutput())
    XCTAssertEqual(s.sentBatches, 4)
  }

  /// Split a plaintext output into (type, body) messages.
  func messages(_ out: [UInt8]) -> [(UInt32, [UInt8])] {
    var d = ESPHomeFrameDecoder(framing: .plaintext)
    return ((try? d.push(out)) ?? []).compactMap {
      if case .plaintext(let type, let body) = $0 { return (type, body) }
      return nil
    }
  }

  func testPipelinedRequestsInOneReadAreEachAnsweredInOrder() throws {
    // aioesphomeapi 46 writes Hello, DeviceInfo and ListEntities at once.
    var s = ESPHomeSession(
      info: Self.info(encrypted: false), serverInfo: "earshot", psk: nil, crypto: nil)
    XCTAssertEqual(
      s.receive(plainFrame(1) + plainFrame(9) + plainFrame(11)), [.connected(clientInfo: "")])
    let out = messages(try XCTUnwrap(s.takeOutput()))
    XCTAssertEqual(
      out.map(\.0), [2, 10, 19], "HelloResponse, DeviceInfoResponse, ListEntitiesDone")
    XCTAssertNil(s.takeOutput())
  }

  func testSubscribingIsAnsweredWithTheScannerStateAndChangesArePushed() throws {
    var s = ESPHomeSession(
      info: Self.info(encrypted: false), serverInfo: "earshot", psk: nil, crypto: nil,
      scanner: ESPHomeScannerStatus(state: .running, active: false, configuredActive: false))
    _ = s.receive(plainFrame(1))
    _ = s.takeOutput()
    s.report(scanner: ESPHomeScannerStatus(state: .running, active: true, configuredActive: false))
    XCTAssertNil(s.takeOutput(), "not subscribed: nothing pushed")
    XCTAssertEqual(s.receive(plainFrame(66, [0x08, 0x01])), [.subscribed])
    var out = messages(try XCTUnwrap(s.takeOutput()))
    XCTAssertEqual(out.map(\.0), [126])
    XCTAssertEqual(
      out[0].1, [0x08, 0x02, 0x10, 0x01], "running, active, configured passive (0: left out)")
    // Home Assistant subscribes again when it saw no state: answered again.
    XCTAssertEqual(s.receive(plainFrame(66, [0x08, 0x01])), [])
    XCTAssertEqual(messages(try XCTUnwrap(s.takeOutput())).map(\.0), [126])
    // A mode request is recorded for the owner; the state follows the scanner.
    XCTAssertEqual(
      s.receive(plainFrame(127, [0x08, 0x00])), [.scannerModeRequested(active: false)])
    XCTAssertEqual(s.requestedActive, false)
    XCTAssertNil(s.takeOutput(), "the state comes when the scanner changes, not with the request")
    s.report(scanner: ESPHomeScannerStatus(state: .running, active: false, configuredActive: false))
    out = messages(try XCTUnwrap(s.takeOutput()))
    XCTAssertEqual(out.map(\.1), [[0x08, 0x02]], "running, passive")
    s.report(scanner: ESPHomeScannerStatus(state: .running, active: false, configuredActive: false))
    XCTAssertNil(s.takeOutput(), "no change: nothing pushed")
  }

  func testTheScanIsActiveWhileTheConfigOrAnyClientAsks() {
    XCTAssertFalse(ESPHomeScannerStatus.wantsActive(configuredActive: false, requests: []))
    XCTAssertFalse(
      ESPHomeScannerStatus.wantsActive(configuredActive: false, requests: [nil, false]))
    XCTAssertTrue(
      ESPHomeScannerStatus.wantsActive(configuredActive: false, requests: [false, true]))
    XCTAssertTrue(
      ESPHomeScannerStatus.wantsActive(configuredActive: true, requests: [false]),
      "a client's passive never overrides [scanner] passive = false")
  }

  func testAClientThatNeverSaysHelloOrFallsSilentExpiresAndIsPingedFirst() {
    let t0 = MonotonicTime(nanos: 5_000_000_000)
    func at(_ s: Double) -> MonotonicTime { t0.adding(seconds: s) }
    var mute = ESPHomeSession(
      info: Self.info(encrypted: false), serverInfo: "earshot", psk: nil, crypto: nil,
      connectedAt: t0)
    XCTAssertNil(mute.tick(at: at(9.9)))
    XCTAssertEqual(mute.tick(at: at(10)), "no Hello within 10 s of connecting")
    XCTAssertNil(mute.takeOutput(), "never pinged before its Hello")

    var s = ESPHomeSession(
      info: Self.info(encrypted: false), serverInfo: "earshot", psk: nil, crypto: nil,
      connectedAt: t0)
    s.heard(at: at(1))
    _ = s.receive(plainFrame(1))
    _ = s.takeOutput()
    XCTAssertNil(s.tick(at: at(60.9)))
    XCTAssertNil(s.takeOutput(), "not silent long enough to ask")
    XCTAssertNil(s.tick(at: at(61)))
    XCTAssertEqual(s.takeOutput(), [0x00, 0x00, 0x07], "a PingRequest after 60 s of silence")
    XCTAssertNil(s.tick(at: at(70)))
    XCTAssertNil(s.takeOutput(), "asked once")
    // The PingResponse comes back: heard, and the clock starts again.
    s.heard(at: at(72))
    XCTAssertEqual(s.receive(plainFrame(8)), [])
    XCTAssertNil(s.tick(at: at(131)))
    XCTAssertNil(s.tick(at: at(133)))
    XCTAssertEqual(s.takeOutput(), [0x00, 0x00, 0x07], "asked again after the next silence")
    XCTAssertEqual(s.tick(at: at(162)), "nothing heard for 90 s", "no answer: gone")
    s.goodbye()
    XCTAssertNil(s.tick(at: at(1000)), "a closing session is not expired again")
  }

  func testGoodbyeAsksAConnectedClientToDisconnectThenCloses() throws {
    var s = ESPHomeSession(
      info: Self.info(encrypted: false), serverInfo: "earshot", psk: nil, crypto: nil)
    _ = s.receive(plainFrame(1) + plainFrame(66, [0x08, 0x01]))
    _ = s.takeOutput()
    s.offer(batch: [1])
    s.goodbye()
    XCTAssertTrue(s.isClosing)
    XCTAssertEqual(s.takeOutput(), [0x00, 0x00, 0x05], "DisconnectRequest, and no batch after it")
    XCTAssertNil(s.takeOutput())
    // Before the Noise handshake there is nothing to say.
    var n = ESPHomeSession(
      info: Self.info(encrypted: true), serverInfo: "earshot",
      psk: [UInt8](repeating: 1, count: 32),
      crypto: FakeCrypto())
    n.goodbye()
    XCTAssertTrue(n.isClosing)
    XCTAssertNil(n.takeOutput())
  }

  func testGarbageClosesWithAFrameTheOtherFramingUnderstands() {
    var s = ESPHomeSession(
      info: Self.info(encrypted: false), serverInfo: "e", psk: nil, crypto: nil)
    let events = s.receive([0x01, 0x00, 0x00])
    XCTAssertTrue(s.isClosing)
    XCTAssertEqual(events.count, 1)
    XCTAssertEqual(s.takeOutput(), [0x00, 0x00, 0x00])
  }

  func testNoiseServerHelloThenAWrongKeyIsRefusedAsESPHomeDoes() throws {
    var s = ESPHomeSession(
      info: Self.info(encrypted: true), serverInfo: "e", psk: Array(repeating: 1, count: 32),
      crypto: FakeCrypto())
    XCTAssertEqual(s.receive([0x01, 0x00, 0x00]), [])
    let mac = Array("020000000001".utf8)
    XCTAssertEqual(
      s.takeOutput(),
      [0x01, 0x00, UInt8(1 + 6 + 1 + 12 + 1), 0x01] + Array("laptop".utf8) + [0] + mac + [0])
    let events = s.receive([0x01, 0x00, 49, 0x00] + Array(repeating: 7, count: 48))
    XCTAssertEqual(events, [.closing(reason: "wrong encryption key (handshake MAC failure)")])
    let refusal = Array("Handshake MAC failure".utf8)
    XCTAssertEqual(s.takeOutput(), [0x01, 0x00, UInt8(refusal.count + 1), 0x01] + refusal)
    XCTAssertEqual(s.receive([0x01]), [], "nothing is read after closing")
  }
}

/// Not a cipher: enough for the session's paths that never reach a real
/// handshake (vectors with libcrypto are in EarshotLinuxTests).
final class FakeCrypto: NoiseCrypto {
  func sha256(_ data: [UInt8]) -> [UInt8] { Array(repeating: UInt8(data.count & 0xFF), count: 32) }
  func hmacSHA256(key: [UInt8], _ data: [UInt8]) -> [UInt8] { sha256(key + data) }
  func generateKeyPair() -> (privateKey: [UInt8], publicKey: [UInt8]) {
    (Array(repeating: 1, count: 32), Array(repeating: 2, count: 32))
  }
  func dh(privateKey: [UInt8], publicKey: [UInt8]) -> [UInt8]? { Array(repeating: 3, count: 32) }
  func seal(key: [UInt8], nonce: UInt64, ad: [UInt8], plaintext: [UInt8]) -> [UInt8] {
    plaintext + Array(repeating: 0xAA, count: 16)
  }
  func open(key: [UInt8], nonce: UInt64, ad: [UInt8], ciphertext: [UInt8]) -> [UInt8]? {
    ciphertext.suffix(16) == Array(repeating: 0xAA, count: 16)[...]
      ? Array(ciphertext.dropLast(16)) : nil
  }
}
