import CCrypto
import EarshotCore

/// AES-128 encryption of one block with OpenSSL's libcrypto (EVP, ECB, no
/// padding): the `BlockCipher` the core's identity resolver needs.
///
/// Resolving a new address tries it against every known key in turn, so
/// the key changes at every call. Setting a context up (fetching the
/// algorithm, expanding the key) costs ten times the encryption itself, so
/// the algorithm is fetched once and each key keeps its own ready context:
/// ECB without padding carries no state from one whole block to the next,
/// so a context is reused with a bare update.
///
/// The algorithm is fetched at the first encryption, not when the cipher
/// is made: every monitor gets one, and most never resolve an address
/// (fetching loads libcrypto's provider, ~8 M instructions and its pages).
public final class LibcryptoAES: BlockCipher {
  /// Keys with a context kept, at most: past this all are dropped and set
  /// up again (a machine has a few dozen keys; this only bounds memory).
  public static let maxContexts = 256
  private var fetched: OpaquePointer?
  private var contexts: [Block128: OpaquePointer] = [:]

  public init() {}

  deinit {
    for c in contexts.values { EVP_CIPHER_CTX_free(c) }
    if let fetched { EVP_CIPHER_free(fetched) }
  }

  private var algorithm: OpaquePointer {
    if let fetched { return fetched }
    // Only a libcrypto without AES (or out of memory) fails here.
    guard let algorithm = EVP_CIPHER_fetch(nil, "AES-128-ECB", nil) else {
      fatalError("libcrypto: AES-128-ECB is not available")
    }
    fetched = algorithm
    return algorithm
  }

  public func encrypt(_ plaintext: Block128, key: Block128) -> Block128 {
    let context = contexts[key] ?? makeContext(key)
    var out = (UInt64(0), UInt64(0))
    var written: Int32 = 0
    let ok = plaintext.withMostSignificantFirstBytes { p in
      withUnsafeMutableBytes(of: &out) { o -> Bool in
        let pp = p.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let op = o.baseAddress!.assumingMemoryBound(to: UInt8.self)
        return EVP_EncryptUpdate(context, op, &written, pp, 16) == 1
      }
    }
    // With a 16-byte key and one whole block, AES-128-ECB cannot fail.
    precondition(ok && written == 16, "libcrypto: AES-128 encryption of one block failed")
    return withUnsafeBytes(of: &out) { Block128(mostSignificantFirst: $0) }
  }

  private func makeContext(_ key: Block128) -> OpaquePointer {
    if contexts.count >= Self.maxContexts {
      for c in contexts.values { EVP_CIPHER_CTX_free(c) }
      contexts.removeAll(keepingCapacity: true)
    }
    guard let context = EVP_CIPHER_CTX_new() else { fatalError("libcrypto: out of memory") }
    let ok = key.withMostSignificantFirstBytes { k in
      EVP_EncryptInit_ex(
        context, algorithm, nil, k.baseAddress!.assumingMemoryBound(to: UInt8.self), nil) == 1
        && EVP_CIPHER_CTX_set_padding(context, 0) == 1
    }
    precondition(ok, "libcrypto: cannot set up AES-128 with a 16-byte key")
    contexts[key] = context
    return context
  }
}
