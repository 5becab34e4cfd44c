import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// The Noise handshake and transport with libcrypto, against vectors made
/// by `noiseprotocol` (aioesphomeapi's Noise library) with fixed keys:
/// Tests/esphome/noise-vectors.json, from Tests/esphome/make-noise-vectors.py.
final class ESPHomeNoiseTests: XCTestCase {
  struct Vectors: Decodable {
    struct Vector: Decodable {
      struct Transport: Decodable {
        let from: String
        let payload: String
        let ciphertext: String
      }
      let psk: String
      let prologue: String
      let initiator_ephemeral_private: String
      let responder_ephemeral_private: String
      let responder_ephemeral_public: String
      let message1: String
      let message2: String
      let handshake_hash: String
      let transport: [Transport]
    }
    let protocol_: String
    let vectors: [Vector]
    enum CodingKeys: String, CodingKey {
      case protocol_ = "protocol"
      case vectors
    }
  }

  static func load() throws -> Vectors {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent("esphome/noise-vectors.json")
    return try JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url))
  }

  func testResponderMatchesNoiseprotocolVectors() throws {
    let vectors = try Self.load()
    XCTAssertEqual(vectors.protocol_, "Noise_NNpsk0_25519_ChaChaPoly_SHA256")
    XCTAssertEqual(vectors.vectors.count, 3)
    let crypto = LibcryptoNoise()
    var checkedFrames = 0
    for v in vectors.vectors {
      var responder = NoiseResponderHandshake(
        crypto: crypto, psk: hex(v.psk), prologue: hex(v.prologue))
      var r = try responder.respond(
        to: hex(v.message1),
        ephemeral: (hex(v.responder_ephemeral_private), hex(v.responder_ephemeral_public)))
      XCTAssertEqual(r.reply, hex(v.message2), "message 2 byte for byte")
      XCTAssertEqual(responder.handshakeHash, hex(v.handshake_hash))
      XCTAssertEqual(r.clientPayload, [])
      for t in v.transport {
        if t.from == "initiator" {
          XCTAssertEqual(r.receive.decrypt(crypto, hex(t.ciphertext)), hex(t.payload))
        } else {
          XCTAssertEqual(r.send.encrypt(crypto, hex(t.payload)), hex(t.ciphertext))
        }
        checkedFrames += 1
      }
    }
    XCTAssertEqual(checkedFrames, 18)
  }

  func testInitiatorMatchesTheVectorsToo() throws {
    let crypto = LibcryptoNoise()
    for v in try Self.load().vectors {
      var initiator = NoiseInitiatorHandshake(
        crypto: crypto, psk: hex(v.psk), prologue: hex(v.prologue))
      let priv = hex(v.initiator_ephemeral_private)
      let pub = try XCTUnwrap(crypto.publicKey(privateKey: priv))
      XCTAssertEqual(initiator.start(ephemeral: (priv, pub)), hex(v.message1))
      var (send, receive) = try initiator.finish(hex(v.message2))
      XCTAssertEqual(initiator.handshakeHash, hex(v.handshake_hash))
      for t in v.transport {
        if t.from == "initiator" {
          XCTAssertEqual(send.encrypt(crypto, hex(t.payload)), hex(t.ciphertext))
        } else {
          XCTAssertEqual(receive.decrypt(crypto, hex(t.ciphertext)), hex(t.payload))
        }
      }
    }
  }

  /// The server's session and the Swift client, end to end with libcrypto.
  func testSessionAndClientTalk() throws {
    let crypto = LibcryptoNoise()
    let psk = [UInt8](repeating: 9, count: 32)
    let info = ESPHomeDeviceInfo(
      name: "laptop", friendlyName: "Laptop", macAddress: "02:00:00:00:00:01",
      bluetoothMacAddress: "02:00:00:00:00:01", compilationTime: "t", projectVersion: "0.1",
      encrypted: true)
    var server = ESPHomeSession(info: info, serverInfo: "earshot", psk: psk, crypto: crypto)
    var client = ESPHomeNoiseClient(crypto: crypto, psk: psk)
    _ = server.receive(client.start())
    XCTAssertEqual(try client.receive(server.takeOutput() ?? []).count, 0)
    XCTAssertTrue(client.isReady)
    XCTAssertEqual(client.serverName, "laptop")
    XCTAssertEqual(server.receive(client.message(1) + client.message(66, [0x08, 0x01])).count, 2)
    server.offer(batch: [0x0A, 0x00])
    let got = try client.receive((server.takeOutput() ?? []) + (server.takeOutput() ?? []))
    // HelloResponse, the subscription's scanner state, the batch.
    XCTAssertEqual(got.map(\.0), [2, 126, 93])
    XCTAssertEqual(got.last?.1, [0x0A, 0x00])
  }

  func testAWrongKeyIsAMACFailure() throws {
    let v = try Self.load().vectors[0]
    var wrong = hex(v.psk)
    wrong[0] ^= 1
    var responder = NoiseResponderHandshake(
      crypto: LibcryptoNoise(), psk: wrong, prologue: hex(v.prologue))
    XCTAssertThrowsError(try responder.respond(to: hex(v.message1))) {
      XCTAssertEqual($0 as? NoiseError, .macFailure)
    }
  }

  func testATamperedFrameDoesNotOpen() throws {
    let crypto = LibcryptoNoise()
    let key = [UInt8](repeating: 7, count: 32)
    var sealed = crypto.seal(key: key, nonce: 3, ad: [1, 2], plaintext: [9, 9, 9])
    XCTAssertEqual(crypto.open(key: key, nonce: 3, ad: [1, 2], ciphertext: sealed), [9, 9, 9])
    XCTAssertNil(crypto.open(key: key, nonce: 4, ad: [1, 2], ciphertext: sealed))
    sealed[0] ^= 0x80
    XCTAssertNil(crypto.open(key: key, nonce: 3, ad: [1, 2], ciphertext: sealed))
  }

  func testX25519AgreesBothWays() {
    let crypto = LibcryptoNoise()
    let a = crypto.generateKeyPair()
    let b = crypto.generateKeyPair()
    XCTAssertNotNil(crypto.dh(privateKey: a.privateKey, publicKey: b.publicKey))
    XCTAssertEqual(
      crypto.dh(privateKey: a.privateKey, publicKey: b.publicKey),
      crypto.dh(privateKey: b.privateKey, publicKey: a.publicKey))
  }
}
