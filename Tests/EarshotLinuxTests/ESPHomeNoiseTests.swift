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
