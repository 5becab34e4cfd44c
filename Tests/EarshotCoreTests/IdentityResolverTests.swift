import EarshotCore
import XCTest

/// A stand-in for AES (the shell's `LibcryptoAES` is tested with the
/// specification's data in EarshotLinuxTests): a fixed mix of block and
/// key that counts its calls.
final class CountingMixCipher: BlockCipher {
  var calls = 0
  func encrypt(_ plaintext: Block128, key: Block128) -> Block128 {
    calls += 1
    let mixed = (plaintext.low &* 0x9E37_79B9_7F4A_7C15) ^ key.low ^ (key.high >> 7)
    return Block128(high: plaintext.high ^ key.high, low: mixed)
  }
}

final class IdentityResolverTests: XCTestCase {
  let sampleHex = "ec0234a357c8ad05341010a60a397d9b"

  func testParsesHexMostSignificantFirst() throws {
    let key = try IdentityResolvingKey(hex: sampleHex)
    XCTAssertEqual(key.value, Block128(high: 0xEC02_34A3_57C8_AD05, low: 0x3410_10A6_0A39_7D9B))
    XCTAssertEqual(key.hex, sampleHex)
    XCTAssertEqual(try IdentityResolvingKey(hex: sampleHex.uppercased()), key)
  }

  func testLeastSignificantFirstBytesAreTheReverse() throws {
    let msbFirst: [UInt8] = [
      0xEC, 0x02, 0x34, 0xA3, 0x57, 0xC8, 0xAD, 0x05, 0x34, 0x10, 0x10, 0xA6, 0x0A, 0x39, 0x7D,
      0x9B,
    ]
    let key = try IdentityResolvingKey(leastSignificantFirst: msbFirst.reversed())
    XCTAssertEqual(key, try IdentityResolvingKey(hex: sampleHex))
    XCTAssertNotEqual(try IdentityResolvingKey(leastSignificantFirst: msbFirst), key)
    XCTAssertThrowsError(try IdentityResolvingKey(leastSignificantFirst: msbFirst.dropLast())) {
      XCTAssertEqual($0 as? IdentityKeyError, .wrongByteCount(15))
    }
  }

  func testRejectsWrongLengthAndNonHex() {
    for (text, expected) in [
      ("", IdentityKeyError.wrongLength(0)),
      (String(sampleHex.dropLast()), .wrongLength(31)),
      (sampleHex + "0", .wrongLength(33)),
      ("0x" + sampleHex.dropLast(2), .notHex(position: 2)),
      (String(sampleHex.dropLast()) + "g", .notHex(position: 32)),
      (" " + sampleHex.dropLast(), .notHex(position: 1)),
    ] {
      XCTAssertThrowsError(try IdentityResolvingKey(hex: text), text) {
        XCTAssertEqual($0 as? IdentityKeyError, expected, text)
      }
    }
    XCTAssertTrue("\(IdentityKeyError.wrongLength(31))".contains("32 hex digits"))
    XCTAssertTrue("\(IdentityKeyError.notHex(position: 5))".contains("character 5"))
  }

  func testRandomAddressKinds() throws {
    let rpa = try XCTUnwrap(BDAddress("70:81:94:0D:FB:AA"))
    XCTAssertTrue(rpa.isResolvablePrivate)
    XCTAssertFalse(rpa.isStaticRandom)
    XCTAssertEqual(rpa.prand, 0x70_8194)
    XCTAssertEqual(rpa.addressHash, 0x0D_FBAA)
    XCTAssertTrue(try XCTUnwrap(BDAddress("C1:02:03:04:05:06")).isStaticRandom)
    let nrpa = try XCTUnwrap(BDAddress("31:02:03:04:05:06"))
    XCTAssertFalse(nrpa.isResolvablePrivate)
    XCTAssertFalse(nrpa.isStaticRandom)
    XCTAssertFalse(try XCTUnwrap(BDAddress("B1:02:03:04:05:06")).isResolvablePrivate)
  }

  func testMadeAddressIsResolvableAndResolves() throws {
    let cipher = CountingMixCipher()
    let key = try IdentityResolvingKey(hex: sampleHex)
    let address = key.address(prand: 0xFF_1234, cipher: cipher)
    XCTAssertTrue(address.isResolvablePrivate)
    XCTAssertEqual(address.prand, 0x7F_1234)
    XCTAssertTrue(key.resolves(address, cipher: cipher))
    XCTAssertFalse(key.resolves(BDAddress(raw: address.raw ^ 1), cipher: cipher))
  }

  func makeResolver(capacity: Int = 4096) throws -> (
    IdentityResolver<CountingMixCipher, IdentityAddress>, CountingMixCipher, [IdentityAddress],
    [IdentityResolvingKey]
  ) {
    let cipher = CountingMixCipher()
    let phone = IdentityAddress(
      address: try XCTUnwrap(BDAddress("00:1A:7D:DA:71:13")), isPublic: true)
    let watch = IdentityAddress(
      address: try XCTUnwrap(BDAddress("D4:11:22:33:44:55")), isPublic: false)
    let keys = [
      try IdentityResolvingKey(hex: sampleHex),
      try IdentityResolvingKey(hex: "000102030405060708090a0b0c0d0e0f"),
    ]
    let resolver = IdentityResolver(
      cipher: cipher, keys: [(phone, keys[0]), (watch, keys[1])], capacity: capacity)
    return (resolver, cipher, [phone, watch], keys)
  }

  func testIdentityAddressesMatchWithoutCipher() throws {
    var (resolver, cipher, ids, _) = try makeResolver()
    let (phone, watch) = (ids[0], ids[1])
    XCTAssertEqual(resolver.resolve(phone.address, type: .public), phone)
    XCTAssertEqual(resolver.resolve(phone.address, type: .publicIdentity), phone)
    XCTAssertNil(
      resolver.resolve(phone.address, type: .random), "a random address is not the public one")
    XCTAssertEqual(resolver.resolve(watch.address, type: .random), watch)
    XCTAssertEqual(resolver.resolve(watch.address, type: .randomIdentity), watch)
    XCTAssertNil(resolver.resolve(watch.address, type: .public))
    XCTAssertNil(resolver.resolve(BDAddress(raw: watch.address.raw ^ 1), type: .random))
    XCTAssertNil(resolver.resolve(phone.address, type: .anonymous))
    XCTAssertEqual(cipher.calls, 0)
  }

  func testNonResolvablePrivateAddressNeverMatchesAndCostsNothing() throws {
    var (resolver, cipher, _, keys) = try makeResolver()
    // An address whose lower bits would resolve, with the top bits 0b00.
    let rpa = keys[0].address(prand: 0x12_3456, cipher: cipher)
    let nrpa = BDAddress(raw: rpa.raw & 0x3FFF_FFFF_FFFF)
    cipher.calls = 0
    XCTAssertNil(resolver.resolve(nrpa, type: .random))
    XCTAssertEqual(cipher.calls, 0)
    XCTAssertEqual(resolver.unresolvedCount, 0)
  }

  func testResolvedAndUnresolvedAddressesAreRemembered() throws {
    var (resolver, cipher, ids, keys) = try makeResolver()
    let watchRPA = keys[1].address(prand: 0x55_AA55, cipher: cipher)
    cipher.calls = 0
    XCTAssertEqual(resolver.resolve(watchRPA, type: .random), ids[1])
    XCTAssertEqual(cipher.calls, 2, "tried the phone's key, then the watch's")
    for _ in 0..<10 { XCTAssertEqual(resolver.resolve(watchRPA, type: .random), ids[1]) }
    XCTAssertEqual(cipher.calls, 2, "a known address costs no cipher call")

    let stranger = BDAddress(raw: watchRPA.raw ^ 0x80)
    XCTAssertNil(resolver.resolve(stranger, type: .random))
    XCTAssertEqual(cipher.calls, 4)
    for _ in 0..<10 { XCTAssertNil(resolver.resolve(stranger, type: .random)) }
    XCTAssertEqual(cipher.calls, 4, "an address that resolved to nothing is remembered")
    XCTAssertEqual(resolver.resolvedCount, 1)
    XCTAssertEqual(resolver.unresolvedCount, 1)

    // New keys: both caches are cleared, and the answers change with them.
    resolver.setKeys([(ids[0], keys[1])])
    XCTAssertEqual(resolver.resolvedCount, 0)
    XCTAssertEqual(resolver.unresolvedCount, 0)
    XCTAssertEqual(resolver.resolve(watchRPA, type: .random), ids[0])
    XCTAssertEqual(cipher.calls, 5)
    resolver.setKeys([])
    XCTAssertNil(resolver.resolve(watchRPA, type: .random))
    XCTAssertEqual(cipher.calls, 5, "no keys, no cipher call")
  }

  func testCachesStayAtTheirBound() throws {
    let capacity = 1000
    var (resolver, cipher, ids, keys) = try makeResolver(capacity: capacity)
    for i in 0..<100_000 {
      let prand = UInt32(truncatingIfNeeded: i)
      XCTAssertEqual(
        resolver.resolve(keys[0].address(prand: prand, cipher: cipher), type: .random), ids[0])
      // Top bits 0b01, prand from i, a hash neither key gives for it.
      let stranger = BDAddress(raw: 0x4000_0000_0000 | UInt64(i) << 24 | 0xABCDEF)
      if resolver.resolve(stranger, type: .random) != nil { XCTFail("\(stranger) resolved") }
      XCTAssertLessThanOrEqual(resolver.resolvedCount, capacity)
    }
    XCTAssertEqual(resolver.resolvedCount, capacity)
    XCTAssertEqual(resolver.unresolvedCount, capacity)

    // The newest are remembered, the oldest forgotten.
    cipher.calls = 0
    XCTAssertEqual(
      resolver.resolve(keys[0].address(prand: 99_999, cipher: cipher), type: .random), ids[0])
    XCTAssertEqual(cipher.calls, 1, "made the address; resolving it cost nothing")
    XCTAssertEqual(
      resolver.resolve(keys[0].address(prand: 0, cipher: cipher), type: .random), ids[0])
    XCTAssertEqual(cipher.calls, 3, "made the address, then resolved it again")
  }
}
