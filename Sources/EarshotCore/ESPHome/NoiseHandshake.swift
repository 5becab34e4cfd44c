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

  init(key: [UInt8]) { self.key = Array(key.prefix(32)) }

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

/// Noise's SymmetricState (specification revision 34, section 5.2) for
/// one handshake: the chaining key, the handshake hash, the current key.
struct NoiseSymmetricState {
  let crypto: NoiseCrypto
  private(set) var h: [UInt8]
  private var ck: [UInt8]
  private var k: [UInt8]? = nil
  private var n: UInt64 = 0

  init(crypto: NoiseCrypto, protocolName: [UInt8], prologue: [UInt8]) {
    self.crypto = crypto
    // A name longer than a hash is hashed; shorter ones are zero-padded.
    h =
      protocolName.count > 32
      ? crypto.sha256(protocolName)
      : protocolName + [UInt8](repeating: 0, count: 32 - protocolName.count)
    ck = h
    mixHash(prologue)
  }

  mutating func mixHash(_ data: [UInt8]) { h = crypto.sha256(h + data) }

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

  mutating func mixKey(_ ikm: [UInt8]) {
    let o = hkdf(ikm, outputs: 2)
    ck = o[0]
    k = o[1]
    n = 0
  }

  mutating func mixKeyAndHash(_ ikm: [UInt8]) {
    let o = hkdf(ikm, outputs: 3)
    ck = o[0]
    mixHash(o[1])
    k = o[2]
    n = 0
  }

  mutating func encryptAndHash(_ plaintext: [UInt8]) -> [UInt8] {
    let c = crypto.seal(key: k!, nonce: n, ad: h, plaintext: plaintext)
    n += 1
    mixHash(c)
    return c
  }

  mutating func decryptAndHash(_ ciphertext: [UInt8]) -> [UInt8]? {
    guard let p = crypto.open(key: k!, nonce: n, ad: h, ciphertext: ciphertext) else { return nil }
    n += 1
    mixHash(ciphertext)
    return p
  }

  /// The initiator's sending cipher first, then the responder's.
  func split() -> (NoiseCipherState, NoiseCipherState) {
    let o = hkdf([], outputs: 2)
    return (NoiseCipherState(key: o[0]), NoiseCipherState(key: o[1]))
  }
}

public let noiseNNpsk0Name = Array("Noise_NNpsk0_25519_ChaChaPoly_SHA256".utf8)

/// The responder's side of Noise_NNpsk0_25519_ChaChaPoly_SHA256:
/// `-> psk, e` then `<- e, ee`, then split. Guarantees: it answers only a
/// first message whose tag verified under the pre-shared key, and its two
/// cipher states are the initiator's, swapped.
public struct NoiseResponderHandshake {
  private var state: NoiseSymmetricState
  let psk: [UInt8]

  public init(crypto: NoiseCrypto, psk: [UInt8], prologue: [UInt8]) {
    precondition(psk.count == 32, "a Noise PSK is 32 bytes")
    state = NoiseSymmetricState(crypto: crypto, protocolName: noiseNNpsk0Name, prologue: prologue)
    self.psk = psk
  }

  /// The handshake hash (for tests against vectors).
  public var handshakeHash: [UInt8] { state.h }

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
    state.mixKeyAndHash(psk)
    let re = Array(message[0..<32])
    state.mixHash(re)
    state.mixKey(re)  // psk handshakes mix each ephemeral into the key too
    guard let clientPayload = state.decryptAndHash(Array(message[32...])) else {
      throw .macFailure
    }
    let e = ephemeral ?? state.crypto.generateKeyPair()
    state.mixHash(e.publicKey)
    state.mixKey(e.publicKey)
    guard let shared = state.crypto.dh(privateKey: e.privateKey, publicKey: re) else {
      throw .badMessage("the client's ephemeral key is not a valid X25519 key")
    }
    state.mixKey(shared)
    let reply = e.publicKey + state.encryptAndHash(payload)
    let (fromInitiator, toInitiator) = state.split()
    return (reply, fromInitiator, toInitiator, clientPayload)
  }
}

/// The initiator's side (what aioesphomeapi does), for tests and the
/// bench: `-> psk, e`, then reads `<- e, ee`.
public struct NoiseInitiatorHandshake {
  private var state: NoiseSymmetricState
  let psk: [UInt8]
  private var ephemeral: (privateKey: [UInt8], publicKey: [UInt8])? = nil

  public init(crypto: NoiseCrypto, psk: [UInt8], prologue: [UInt8]) {
    precondition(psk.count == 32, "a Noise PSK is 32 bytes")
    state = NoiseSymmetricState(crypto: crypto, protocolName: noiseNNpsk0Name, prologue: prologue)
    self.psk = psk
  }

  public var handshakeHash: [UInt8] { state.h }

  public mutating func start(ephemeral fixed: (privateKey: [UInt8], publicKey: [UInt8])? = nil)
    -> [UInt8]
  {
    state.mixKeyAndHash(psk)
    let e = fixed ?? state.crypto.generateKeyPair()
    ephemeral = e
    state.mixHash(e.publicKey)
    state.mixKey(e.publicKey)
    return e.publicKey + state.encryptAndHash([])
  }

  /// Reads the responder's reply; returns (send, receive) cipher states.
  public mutating func finish(_ reply: [UInt8]) throws(NoiseError) -> (
    send: NoiseCipherState, receive: NoiseCipherState
  ) {
    guard let e = ephemeral, reply.count >= 48 else { throw .badMessage("bad reply") }
    let re = Array(reply[0..<32])
    state.mixHash(re)
    state.mixKey(re)
    guard let shared = state.crypto.dh(privateKey: e.privateKey, publicKey: re) else {
      throw .badMessage("the server's ephemeral key is not a valid X25519 key")
    }
    state.mixKey(shared)
    guard state.decryptAndHash(Array(reply[32...])) != nil else { throw .macFailure }
    return state.split()
  }
}
