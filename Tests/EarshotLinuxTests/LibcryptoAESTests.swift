import EarshotCore
import EarshotLinux
import XCTest

/// Counts calls to the real AES (libcrypto).
final class CountingAES: BlockCipher {
  let aes = LibcryptoAES()
  var calls = 0
  func encrypt(_ plaintext: Block128, key: Block128) -> Block128 {
    calls += 1
    return aes.encrypt(plaintext, key: key)
  }
}

/// AES-128 from libcrypto, and address resolution on it, against the
/// published test vectors.
final class LibcryptoAESTests: XCTestCase {
  func testFIPS197AES128Vector() {
    // FIPS-197 Appendix C.1.
    let key = Block128(high: 0x0001_0203_0405_0607, low: 0x0809_0A0B_0C0D_0E0F)
    let plaintext = Block128(high: 0x0011_2233_4455_6677, low: 0x8899_AABB_CCDD_EEFF)
    XCTAssertEqual(
      LibcryptoAES().encrypt(plaintext, key: key),
      Block128(high: 0x69C4_E0D8_6A7B_0430, low: 0xD8CD_B780_70B4_C55A))
  }

  /// A context kept on one key gives what a fresh one gives, also after
  /// another key came between.
  func testReusedKeyScheduleMatchesAFreshContext() {
    let a = Block128(high: 0x0001_0203_0405_0607, low: 0x0809_0A0B_0C0D_0E0F)
    let b = Block128(high: 0xEC02_34A3_57C8_AD05, low: 0x3410_10A6_0A39_7D9B)
    let reused = LibcryptoAES()
    for (i, key) in [a, a, b, a, b, b].enumerated() {
      let block = Block128(high: UInt64(i), low: 0x1234_5678 &* UInt64(i + 1))
      XCTAssertEqual(
        reused.encrypt(block, key: key), LibcryptoAES().encrypt(block, key: key), "\(i)")
    }
  }

  /// More keys than contexts are kept: the ones set up again after the
  /// contexts were dropped still encrypt right.
  func testMoreKeysThanKeptContexts() {
    let reused = LibcryptoAES()
    let block = Block128(high: 0, low: 0x70_8194)
    let keys = (0..<(LibcryptoAES.maxContexts + 44)).map {
      Block128(high: 0x5EED &* UInt64($0 + 1), low: 0x9E37_79B9_7F4A_7C15 &* UInt64($0 + 1))
    }
    for (i, key) in (keys + keys.prefix(10)).enumerated() {
      XCTAssertEqual(
        reused.encrypt(block, key: key), LibcryptoAES().encrypt(block, key: key), "\(i)")
    }
  }

  /// A key's own context (`keyed`, what the resolver keeps) encrypts as
  /// the cipher does by key: the FIPS-197 vector, and keys and blocks
  /// mixed, each keyed cipher used many times.
  func testKeyedCipherMatchesEncryptByKey() {
    let fips = Block128(high: 0x0001_0203_0405_0607, low: 0x0809_0A0B_0C0D_0E0F)
    XCTAssertEqual(
      LibcryptoAES().keyed(fips).encrypt(
        Block128(high: 0x0011_2233_4455_6677, low: 0x8899_AABB_CCDD_EEFF)),
      Block128(high: 0x69C4_E0D8_6A7B_0430, low: 0xD8CD_B780_70B4_C55A))
    let aes = LibcryptoAES()
    let keys = (0..<20).map {
      Block128(high: 0x5EED &* UInt64($0 + 1), low: 0x9E37_79B9_7F4A_7C15 &* UInt64($0 + 1))
    }
    let keyed = keys.map { aes.keyed($0) }
    for round in 0..<5 {
      for (k, key) in keys.enumerated() {
        let block = Block128(high: UInt64(round), low: 0x70_8194 &* UInt64(k + round + 1))
        XCTAssertEqual(
          keyed[k].encrypt(block), LibcryptoAES().encrypt(block, key: key),
          "key \(k), round \(round)")
      }
    }
  }

  /// The resolver, which keeps a keyed cipher beside each key, names for
  /// every address the first key that resolves it, as trying the keys in
  /// order with the cipher does: addresses of the keys it knows (each
  /// also changed by one bit) and of keys it does not.
  func testResolverAnswersAsTryingEveryKeyInOrder() {
    let aes = LibcryptoAES()
    let keys = (0..<50).map { i in
      IdentityResolvingKey(
        Block128(
          high: 0x5EED_0000_0000_0000 | UInt64(i), low: 0x9E37_79B9_7F4A_7C15 &* UInt64(i + 1)))
    }
    let known = Array(keys.prefix(30))
    let named = known.indices.map {
      (
        identity: IdentityAddress(
          address: BDAddress(raw: 0x00_1A_7D_00_00_00 | UInt64($0)), isPublic: true),
        key: known[$0]
      )
    }
    var resolver = IdentityResolver(cipher: aes, keys: named)
    var found = 0
    for (i, key) in keys.enumerated() {
      for p in 0..<8 {
        let address = key.address(
          prand: UInt32(truncatingIfNeeded: i * 7_919 + p * 104_729), cipher: aes)
        for candidate in [address, BDAddress(raw: address.raw ^ (1 << UInt64((i + p) % 46)))] {
          let expected = named.first { $0.key.resolves(candidate, cipher: aes) }?.identity
          XCTAssertEqual(
            resolver.resolve(candidate, type: .random), expected, "key \(i), prand \(p)")
          if expected != nil { found += 1 }
        }
      }
    }
    XCTAssertEqual(found, known.count * 8, "every address of a known key, and no changed one")
  }

  func testAhSampleData() throws {
    // Core Specification Vol 3, Part H, Appendix D.7.
    let key = try IdentityResolvingKey(hex: "ec0234a357c8ad05341010a60a397d9b")
    XCTAssertEqual(key.hash(prand: 0x70_8194, cipher: LibcryptoAES()), 0x0D_FBAA)
    XCTAssertEqual(
      key.address(prand: 0x70_8194, cipher: LibcryptoAES()), BDAddress("70:81:94:0D:FB:AA"))
  }

  func testSampleAddressResolvesAndNoOneBitChangeDoes() throws {
    let key = try IdentityResolvingKey(hex: "ec0234a357c8ad05341010a60a397d9b")
    let phone = IdentityAddress(
      address: try XCTUnwrap(BDAddress("00:1A:7D:DA:71:13")), isPublic: true)
    let other = try IdentityResolvingKey(hex: "ec0234a357c8ad05341010a60a397d9a")
    let cipher = CountingAES()
    var resolver = IdentityResolver(cipher: cipher, keys: [(phone, key)])
    let rpa = try XCTUnwrap(BDAddress("70:81:94:0D:FB:AA"))
    XCTAssertEqual(resolver.resolve(rpa, type: .random), phone)
    XCTAssertEqual(resolver.resolve(rpa, type: .random), phone)
    XCTAssertEqual(cipher.calls, 1, "the second report is a cache hit")
    // Every one-bit change below the two kind bits.
    for bit in 0..<46 {
      let changed = BDAddress(raw: rpa.raw ^ (1 << UInt64(bit)))
      XCTAssertTrue(changed.isResolvablePrivate)
      XCTAssertNil(resolver.resolve(changed, type: .random), "bit \(bit)")
    }
    XCTAssertEqual(cipher.calls, 47)
    // A key one bit away does not resolve it either.
    resolver.setKeys([(phone, other)])
    XCTAssertNil(resolver.resolve(rpa, type: .random))
  }
}
