import CCrypto
import EarshotCore

/// The Noise primitives from OpenSSL's libcrypto: X25519 (EVP_PKEY),
/// ChaCha20-Poly1305 (EVP cipher), SHA-256 and HMAC-SHA-256. Each call
/// sets its own context up: a proxy seals a few frames a second per
/// client, far below where reusing contexts would matter.
public final class LibcryptoNoise: NoiseCrypto {
  public init() {}

  public func sha256(_ data: [UInt8]) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: 32)
    var n: UInt32 = 0
    let ok = EVP_Digest(data, data.count, &out, &n, EVP_sha256(), nil) == 1
    precondition(ok && n == 32, "libcrypto: SHA-256 failed")
    return out
  }

  public func hmacSHA256(key: [UInt8], _ data: [UInt8]) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: 32)
    var n: UInt32 = 0
    let r = HMAC(EVP_sha256(), key, Int32(key.count), data, data.count, &out, &n)
    precondition(r != nil && n == 32, "libcrypto: HMAC-SHA-256 failed")
    return out
  }

  public func generateKeyPair() -> (privateKey: [UInt8], publicKey: [UInt8]) {
    guard let ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_X25519, nil) else {
      fatalError("libcrypto: X25519 is not available")
    }
    defer { EVP_PKEY_CTX_free(ctx) }
    var key: OpaquePointer? = nil
    guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_keygen(ctx, &key) == 1, let key else {
      fatalError("libcrypto: X25519 key generation failed")
    }
    defer { EVP_PKEY_free(key) }
    var priv = [UInt8](repeating: 0, count: 32)
    var pub = [UInt8](repeating: 0, count: 32)
    var n1 = 32
    var n2 = 32
    guard EVP_PKEY_get_raw_private_key(key, &priv, &n1) == 1,
      EVP_PKEY_get_raw_public_key(key, &pub, &n2) == 1, n1 == 32, n2 == 32
    else { fatalError("libcrypto: cannot read an X25519 key") }
    return (priv, pub)
  }

  /// The X25519 public key of a private one (for test vectors).
  public func publicKey(privateKey: [UInt8]) -> [UInt8]? {
    guard let key = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nil, privateKey, 32) else {
      return nil
    }
    defer { EVP_PKEY_free(key) }
    var pub = [UInt8](repeating: 0, count: 32)
    var n = 32
    guard EVP_PKEY_get_raw_public_key(key, &pub, &n) == 1, n == 32 else { return nil }
    return pub
  }

  public func dh(privateKey: [UInt8], publicKey: [UInt8]) -> [UInt8]? {
    guard privateKey.count == 32, publicKey.count == 32,
      let priv = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nil, privateKey, 32)
    else { return nil }
    defer { EVP_PKEY_free(priv) }
    guard let peer = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nil, publicKey, 32) else {
      return nil
    }
    defer { EVP_PKEY_free(peer) }
    guard let ctx = EVP_PKEY_CTX_new(priv, nil) else { return nil }
    defer { EVP_PKEY_CTX_free(ctx) }
    var out = [UInt8](repeating: 0, count: 32)
    var n = 32
    // Fails for a low-order public key (an all-zero shared secret).
    guard EVP_PKEY_derive_init(ctx) == 1, EVP_PKEY_derive_set_peer(ctx, peer) == 1,
      EVP_PKEY_derive(ctx, &out, &n) == 1, n == 32
    else { return nil }
    return out
  }

  private static func nonce(_ n: UInt64) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: 12)
    for i in 0..<8 { out[4 + i] = UInt8(truncatingIfNeeded: n >> (8 * UInt64(i))) }
    return out
  }

  public func seal(key: [UInt8], nonce: UInt64, ad: [UInt8], plaintext: [UInt8]) -> [UInt8] {
    guard let ctx = EVP_CIPHER_CTX_new() else { fatalError("libcrypto: out of memory") }
    defer { EVP_CIPHER_CTX_free(ctx) }
    var out = [UInt8](repeating: 0, count: plaintext.count + 16)
    var n: Int32 = 0
    var tail: Int32 = 0
    var scratch: Int32 = 0
    let ok =
      EVP_EncryptInit_ex(ctx, EVP_chacha20_poly1305(), nil, key, Self.nonce(nonce)) == 1
      && (ad.isEmpty || EVP_EncryptUpdate(ctx, nil, &scratch, ad, Int32(ad.count)) == 1)
      && (plaintext.isEmpty
        || EVP_EncryptUpdate(ctx, &out, &n, plaintext, Int32(plaintext.count)) == 1)
      && out.withUnsafeMutableBufferPointer { o in
        EVP_EncryptFinal_ex(ctx, o.baseAddress! + Int(n), &tail) == 1
          && EVP_CIPHER_CTX_ctrl(
            ctx, EVP_CTRL_AEAD_GET_TAG, 16, o.baseAddress! + plaintext.count) == 1
      }
    precondition(ok && Int(n + tail) == plaintext.count, "libcrypto: ChaCha20-Poly1305 failed")
    return out
  }

  public func open(key: [UInt8], nonce: UInt64, ad: [UInt8], ciphertext: [UInt8]) -> [UInt8]? {
    guard ciphertext.count >= 16, let ctx = EVP_CIPHER_CTX_new() else { return nil }
    defer { EVP_CIPHER_CTX_free(ctx) }
    let bodyCount = ciphertext.count - 16
    var out = [UInt8](repeating: 0, count: bodyCount + 16)
    var tag = Array(ciphertext[bodyCount...])
    var n: Int32 = 0
    var tail: Int32 = 0
    var scratch: Int32 = 0
    let ok =
      EVP_DecryptInit_ex(ctx, EVP_chacha20_poly1305(), nil, key, Self.nonce(nonce)) == 1
      && (ad.isEmpty || EVP_DecryptUpdate(ctx, nil, &scratch, ad, Int32(ad.count)) == 1)
      && (bodyCount == 0
        || EVP_DecryptUpdate(ctx, &out, &n, ciphertext, Int32(bodyCount)) == 1)
      && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, &tag) == 1
      && out.withUnsafeMutableBufferPointer { o in
        EVP_DecryptFinal_ex(ctx, o.baseAddress! + Int(n), &tail) == 1
      }
    guard ok else { return nil }
    return Array(out[0..<Int(n + tail)])
  }
}
