import CCrypto
import EarshotCore

/// AES-128 encryption of one block with OpenSSL's libcrypto (EVP, ECB, no
/// padding): the `BlockCipher` the core's identity resolver needs.
public final class LibcryptoAES: BlockCipher {
  private let context: OpaquePointer
  /// The key the context is set up with: the same key again reuses its
  /// expanded schedule instead of expanding it for every block.
  private var currentKey: Block128?

  public init() {
    // Allocation failure is the only way this can fail.
    guard let context = EVP_CIPHER_CTX_new() else { fatalError("libcrypto: out of memory") }
    self.context = context
  }

  deinit { EVP_CIPHER_CTX_free(context) }

  public func encrypt(_ plaintext: Block128, key: Block128) -> Block128 {
    var out = (UInt64(0), UInt64(0))
    var written: Int32 = 0
    let ok = key.withMostSignificantFirstBytes { k in
      plaintext.withMostSignificantFirstBytes { p in
        withUnsafeMutableBytes(of: &out) { o -> Bool in
          let kp = k.baseAddress!.assumingMemoryBound(to: UInt8.self)
          let pp = p.baseAddress!.assumingMemoryBound(to: UInt8.self)
          let op = o.baseAddress!.assumingMemoryBound(to: UInt8.self)
          let ready =
            key == currentKey
            ? EVP_EncryptInit_ex(context, nil, nil, nil, nil) == 1
            : EVP_EncryptInit_ex(context, EVP_aes_128_ecb(), nil, kp, nil) == 1
              && EVP_CIPHER_CTX_set_padding(context, 0) == 1
          return ready && EVP_EncryptUpdate(context, op, &written, pp, 16) == 1
        }
      }
    }
    currentKey = ok ? key : nil
    // With a 16-byte key and one whole block, AES-128-ECB cannot fail.
    precondition(ok && written == 16, "libcrypto: AES-128 encryption of one block failed")
    return withUnsafeBytes(of: &out) { Block128(mostSignificantFirst: $0) }
  }
}
