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
/// so a context is reused with a bare update. The resolver holds each
/// key's context itself (`keyed`); `encrypt(_:key:)` finds it by the key.
///
/// The algorithm is fetched at the first encryption, not when the cipher
/// is made: every monitor gets one, and most never resolve an address
/// (fetching loads libcrypto's provider, ~8 M instructions and its pages).
public final class LibcryptoAES: BlockCipher {
  /// Keys with a context kept, at most: past this all are dropped and set
  /// up again (a machine has a few dozen keys; this only bounds memory).
  public static let maxContexts = 256
  private let algorithm = Algorithm()
  private var contexts: [Block128: Keyed] = [:]

  public init() {}

  public func encrypt(_ plaintext: Block128, key: Block128) -> Block128 {
    (contexts[key] ?? remember(key)).encrypt(plaintext)
  }

  /// A context of its own for `key`, set up at its first block.
  public func keyed(_ key: Block128) -> Keyed { Keyed(key: key, algorithm: algorithm) }

  private func remember(_ key: Block128) -> Keyed {
    if contexts.count >= Self.maxContexts { contexts.removeAll(keepingCapacity: true) }
    let keyed = keyed(key)
    contexts[key] = keyed
    return keyed
  }

  /// AES-128 under one key, with its own libcrypto context.
  public final class Keyed: KeyedBlockCipher {
    private let key: Block128
    /// Kept while the context is: the context uses the fetched algorithm.
    private let algorithm: Algorithm
    private var context: OpaquePointer?

    init(key: Block128, algorithm: Algorithm) {
      self.key = key
      self.algorithm = algorithm
    }

    deinit {
      if let context { EVP_CIPHER_CTX_free(context) }
    }

    public func encrypt(_ plaintext: Block128) -> Block128 {
      let context = self.context ?? setUp()
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
      // Most significant byte first in memory: each half is a big-endian word.
      return Block128(high: UInt64(bigEndian: out.0), low: UInt64(bigEndian: out.1))
    }

    private func setUp() -> OpaquePointer {
      guard let context = EVP_CIPHER_CTX_new() else { fatalError("libcrypto: out of memory") }
      let ok = key.withMostSignificantFirstBytes { k in
        EVP_EncryptInit_ex(
          context, algorithm.cipher, nil, k.baseAddress!.assumingMemoryBound(to: UInt8.self), nil)
          == 1
          && EVP_CIPHER_CTX_set_padding(context, 0) == 1
      }
      precondition(ok, "libcrypto: cannot set up AES-128 with a 16-byte key")
      self.context = context
      return context
    }
  }

  /// libcrypto's AES-128-ECB, fetched once, at the first key set up.
  final class Algorithm {
    private var fetched: OpaquePointer?

    deinit {
      if let fetched { EVP_CIPHER_free(fetched) }
    }

    var cipher: OpaquePointer {
      if let fetched { return fetched }
      // Only a libcrypto without AES (or out of memory) fails here.
      guard let algorithm = EVP_CIPHER_fetch(nil, "AES-128-ECB", nil) else {
        fatalError("libcrypto: AES-128-ECB is not available")
      }
      fetched = algorithm
      return algorithm
    }
  }
}
