/// The primitives Noise_NNpsk0_25519_ChaChaPoly_SHA256 needs. The core
/// holds no cipher of its own: the shell supplies libcrypto's.
public protocol NoiseCrypto: AnyObject {
  func sha256(_ data: [UInt8]) -> [UInt8]
  func hmacSHA256(key: [UInt8], _ data: [UInt8]) -> [UInt8]
  /// A fresh X25519 key pair (32-byte private and public keys).
  func generateKeyPair() -> (privateKey: [UInt8], publicKey: [UInt8])
  /// X25519; `nil` for a public key libcrypto refuses.
  func dh(privateKey: [UInt8], publicKey: [UInt8]) -> [UInt8]?
  /// ChaCha20-Poly1305 (IETF) with Noise's nonce: 4 zero bytes, then `nonce` little-endian.
  func seal(key: [UInt8], nonce: UInt64, ad: [UInt8], plaintext: [UInt8]) -> [UInt8]
  /// The same, opened; `nil` when the tag does not match.
  func open(key: [UInt8], nonce: UInt64, ad: [UInt8], ciphertext: [UInt8]) -> [UInt8]?
}

/// One direction of a finished handshake: a key and its nonce counter.
public struct NoiseCipherState {
  let key: [UInt8]
  public private(set) var nonce: UInt64 = 0

  init(key: [UInt8]) { self.key = key }

  public mutating func encrypt(_ crypto: NoiseCrypto, _ plaintext: [UInt8]) -> [UInt8] {
    defer { nonce += 1 }
    return crypto.seal(key: key, nonce: nonce, ad: [], plaintext: plaintext)
  }

  /// `nil` if the frame was not sealed with this key and nonce; the
  /// counter moves only on success (a failure closes the session anyway).
  public mutating func decrypt(_ crypto: NoiseCrypto, _ ciphertext: [UInt8]) -> [UInt8]? {
    guard let p = crypto.open(key: key, nonce: nonce, ad: [], ciphertext: ciphertext) else {
      return nil
    }
    nonce += 1
    return p
  }
}

public enum NoiseError: Error, Equatable, CustomStringConvertible {
  /// The first message's tag did not verify: the client's key is not ours.
  case macFailure
  case badMessage(String)

  public var description: String {
    switch self {
    case .macFailure: "Handshake MAC failure"
    case .badMessage(let why): "Handshake error: \(why)"
    }
  }
}

/// The responder's side of Noise_NNpsk0_25519_ChaChaPoly_SHA256 (Noise
/// specification revision 34): `-> psk, e` then `<- e, ee`, then split.
/// Guarantees: the responder answers only a first message whose tag
/// verified under the pre-shared key, and the two cipher states it returns
/// are the initiator's, swapped.
public struct NoiseResponderHandshake {
  public static let protocolName = Array("Noise_NNpsk0_25519_ChaChaPoly_SHA256".utf8)
  let crypto: NoiseCrypto
  let psk: [UInt8]
  private(set) var h: [UInt8]
  private var ck: [UInt8]
  private var k: [UInt8]? = nil
  private var n: UInt64 = 0

  public init(crypto: NoiseCrypto, psk: [UInt8], prologue: [UInt8]) {
    precondition(psk.count == 32, "a Noise PSK is 32 bytes")
    self.crypto = crypto
    self.psk = psk
    // The name is longer than a hash: h starts as its hash.
    h = crypto.sha256(Self.protocolName)
    ck = h
    mixHash(prologue)
  }

  /// The handshake hash (for tests against vectors).
  public var handshakeHash: [UInt8] { h }

  private mutating func mixHash(_ data: [UInt8]) { h = crypto.sha256(h + data) }

  private func hkdf(_ ikm: [UInt8], outputs: Int) -> [[UInt8]] {
    let temp = crypto.hmacSHA256(key: ck, ikm)
    var out: [[UInt8]] = []
    var previous: [UInt8] = []
    for i in 1...outputs {
      previous = crypto.hmacSHA256(key: temp, previous + [UInt8(i)])
      out.append(previous)
    }
    return out
  }

  private mutating func mixKey(_ ikm: [UInt8]) {
    let o = hkdf(ikm, outputs: 2)
    ck = o[0]
    k = o[1]
    n = 0
  }

  private mutating func mixKeyAndHash(_ ikm: [UInt8]) {
    let o = hkdf(ikm, outputs: 3)
    ck = o[0]
    mixHash(o[1])
    k = o[2]
    n = 0
  }

  /// Reads `-> psk, e` and writes `<- e, ee`; returns the reply and the
  /// cipher states (receive: from the client; send: to it). `ephemeral`
  /// is for test vectors; a fresh key pair is made otherwise.
  public mutating func respond(
    to message: [UInt8], payload: [UInt8] = [],
    ephemeral: (privateKey: [UInt8], publicKey: [UInt8])? = nil
  ) throws(NoiseError) -> (
    reply: [UInt8], receive: NoiseCipherState, send: NoiseCipherState, clientPayload: [UInt8]
  ) {
    guard message.count >= 32 + 16 else {
      throw .badMessage("first message is \(message.count) bytes, at least 48 expected")
    }
    mixKeyAndHash(psk)
    let re = Array(message[0..<32])
    mixHash(re)
    mixKey(re)  // psk handshakes mix each ephemeral into the key too
    let sealed = Array(message[32...])
    guard let clientPayload = crypto.open(key: k!, nonce: n, ad: h, ciphertext: sealed) else {
      throw .macFailure
    }
    n += 1
    mixHash(sealed)

    let e = ephemeral ?? crypto.generateKeyPair()
    var reply = e.publicKey
    mixHash(e.publicKey)
    mixKey(e.publicKey)
    guard let shared = crypto.dh(privateKey: e.privateKey, publicKey: re) else {
      throw .badMessage("the client's ephemeral key is not a valid X25519 key")
    }
    mixKey(shared)
    let c = crypto.seal(key: k!, nonce: n, ad: h, plaintext: payload)
    n += 1
    mixHash(c)
    reply += c
    let split = hkdf([], outputs: 2)
    return (
      reply, NoiseCipherState(key: Array(split[0].prefix(32))),
      NoiseCipherState(key: Array(split[1].prefix(32))), clientPayload
    )
  }
}
