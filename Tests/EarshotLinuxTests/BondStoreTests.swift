import EarshotCore
import EarshotLinux
import XCTest

#if canImport(Glibc)
  import Glibc
#endif

/// BlueZ's bond store read with libinih (`IniReader`) and the core's
/// `BlueZBondStore`; the keys file written and read back; the follower
/// picking up a bond added while it runs. Stores are built in a temporary
/// directory in the layout bluetoothd uses, never the host's.
final class BondStoreTests: XCTestCase {
  /// The Core Specification's sample IRK (Vol 3, Part H, D.7), most
  /// significant byte first, and the same 16 bytes least significant first
  /// as bluetoothd writes them (`%2.2X` of each byte in the management
  /// interface's order).
  let sampleHex = "ec0234a357c8ad05341010a60a397d9b"
  let storedKey = "9B7D390AA610103405ADC857A33402EC"

  /// An info file as bluetoothd 5.66 writes it for a bonded LE phone; the
  /// Services line is longer than libinih's 198-byte lines.
  func phoneInfo(key: String? = nil, type: String = "public", name: String = "Pixel 7") -> String {
    var text = """
      [General]
      Name=\(name)
      Appearance=0x0040
      AddressType=\(type)
      SupportedTechnologies=LE;
      Trusted=false
      Blocked=false
      WakeAllowed=true
      Services=00001800-0000-1000-8000-00805f9b34fb;00001801-0000-1000-8000-00805f9b34fb;0000180a-0000-1000-8000-00805f9b34fb;0000180f-0000-1000-8000-00805f9b34fb;0000fe2c-0000-1000-8000-00805f9b34fb;

      [DeviceID]
      Source=1
      Vendor=224
      Product=1
      Version=1

      """
    if let key {
      text += """
        [IdentityResolvingKey]
        Key=\(key)

        """
    }
    text += """
      [LongTermKey]
      Key=1F2E3D4C5B6A79880F1E2D3C4B5A6978
      Authenticated=0
      EncSize=16
      EDiv=0
      Rand=0

      [ConnectionParameters]
      MinInterval=6
      MaxInterval=9
      Latency=44
      Timeout=216

      """
    return text
  }

  var root = ""

  override func setUpWithError() throws {
    var template = Array("/tmp/earshot-bondstore-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw SystemError(errno: errno, "mkdtemp") }
    root = String(cString: made)
  }

  override func tearDown() {
    _ = try? ChildProcessRemove.tree(root)
  }

  func put(_ relative: String, _ text: String) throws {
    let path = root + "/" + relative
    var dir = ""
    for part in path.split(separator: "/").dropLast() {
      dir += "/" + part
      mkdir(dir, 0o700)
    }
    let temporary = path + ".tmp"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    XCTAssertGreaterThanOrEqual(fd, 0)
    let bytes = Array(text.utf8)
    XCTAssertEqual(bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }, bytes.count)
    close(fd)
    // bluetoothd (g_file_set_contents) replaces the file by a rename.
    XCTAssertEqual(rename(temporary, path), 0)
  }

  // MARK: The store

  func testReadsTheKeyLeastSignificantByteFirst() throws {
    try put("00:11:22:33:44:55/AA:BB:CC:DD:EE:01/info", phoneInfo(key: storedKey))
    let set = try BondStoreReader.read(root: root)
    XCTAssertEqual(set.problems, [])
    XCTAssertEqual(set.keys.count, 1)
    let key = try XCTUnwrap(set.keys.first)
    XCTAssertEqual(key.identity, BDAddress("AA:BB:CC:DD:EE:01"))
    XCTAssertEqual(key.identityType, .public)
    XCTAssertEqual(key.name, "Pixel 7")
    XCTAssertEqual(key.irk?.hex, sampleHex)
    // And it resolves the specification's sample address (prand 708194,
    // hash 0dfbaa) through libcrypto: the byte order is the one ah needs.
    let rpa = try XCTUnwrap(BDAddress("70:81:94:0D:FB:AA"))
    XCTAssertTrue(try XCTUnwrap(key.irk).resolves(rpa, cipher: LibcryptoAES()))
    let reversed = try IdentityResolvingKey(hex: storedKey)
    XCTAssertFalse(reversed.resolves(rpa, cipher: LibcryptoAES()))
  }

  func testOldZeroXPrefixStaticAddressAndAlias() throws {
    var info = phoneInfo(key: "0x" + storedKey, type: "static", name: "\\sWatch\\tX\\\\")
    info = info.replacingOccurrences(of: "Appearance", with: "Alias=Alice's watch\nAppearance")
    try put("00:11:22:33:44:55/C1:02:03:04:05:06/info", info)
    let key = try XCTUnwrap(BondStoreReader.read(root: root).keys.first)
    XCTAssertEqual(key.identityType, .staticRandom)
    XCTAssertEqual(key.irk?.hex, sampleHex)
    XCTAssertEqual(key.name, "Alice's watch")
    XCTAssertEqual(BlueZBondStore.unescapeKeyFileString("\\sWatch\\tX\\\\"), " Watch\tX\\")
  }

  func testDevicesWithoutKeysAndOtherEntriesAreLeftOut() throws {
    // A device without privacy: bonded (long-term key), no IRK.
    try put("00:11:22:33:44:55/AA:BB:CC:DD:EE:02/info", phoneInfo(key: nil, name: "Keyboard"))
    // Seen and trusted but never bonded: no key section.
    try put(
      "00:11:22:33:44:55/AA:BB:CC:DD:EE:03/info",
      "[General]\nName=Speaker\nTrusted=true\n")
    // A classic (BR/EDR) device with a link key: no AddressType.
    try put(
      "00:11:22:33:44:55/AA:BB:CC:DD:EE:04/info",
      "[General]\nName=Headphones\nSupportedTechnologies=BR/EDR;\n\n[LinkKey]\nKey=00112233445566778899AABBCCDDEEFF\nType=4\nPINLength=0\n"
    )
    try put("00:11:22:33:44:55/settings", "[General]\nDiscoverable=false\n")
    try put("00:11:22:33:44:55/cache/AA:BB:CC:DD:EE:09", "[General]\nName=Cached\n")
    try put("00:11:22:33:44:55/identity", "[General]\nIdentityResolvingKey=00\n")
    // The same phone bonded on a second adapter is listed once.
    try put("66:77:88:99:AA:BB/AA:BB:CC:DD:EE:02/info", phoneInfo(key: nil, name: "Keyboard"))
    let set = try BondStoreReader.read(root: root)
    XCTAssertEqual(set.problems, [])
    XCTAssertEqual(
      set.keys.map(\.identity.description), ["AA:BB:CC:DD:EE:02", "AA:BB:CC:DD:EE:04"])
    XCTAssertEqual(set.keys.map(\.irk), [nil, nil])
    XCTAssertEqual(set.keys.map(\.name), ["Keyboard", "Headphones"])
    XCTAssertEqual(set.keys.map(\.identityType), [.public, .public])
  }

  func testMalformedKeyNamesFileLineAndKeyAndKeepsTheOthers() throws {
    try put("00:11:22:33:44:55/AA:BB:CC:DD:EE:01/info", phoneInfo(key: "12345"))
    try put("00:11:22:33:44:55/AA:BB:CC:DD:EE:02/info", phoneInfo(key: storedKey))
    try put(
      "00:11:22:33:44:55/AA:BB:CC:DD:EE:03/info", phoneInfo(key: storedKey, type: "weird"))
    try put(
      "00:11:22:33:44:55/AA:BB:CC:DD:EE:05/info",
      phoneInfo(key: "ZZ7D390AA610103405ADC857A33402EC"))
    let set = try BondStoreReader.read(root: root)
    XCTAssertEqual(set.keys.map(\.identity.description), ["AA:BB:CC:DD:EE:02"])
    XCTAssertEqual(set.problems.count, 3)
    let first = root + "/00:11:22:33:44:55/AA:BB:CC:DD:EE:01/info"
    XCTAssertTrue(set.problems[0].contains(first), set.problems[0])
    XCTAssertTrue(
      set.problems[0].hasPrefix(first + ":17: [IdentityResolvingKey] Key:"), set.problems[0])
    XCTAssertTrue(set.problems[0].contains("Key"), set.problems[0])
    XCTAssertTrue(set.problems[0].contains("32 hex digits"), set.problems[0])
    XCTAssertTrue(set.problems[1].contains("AddressType"), set.problems[1])
    XCTAssertTrue(set.problems[2].contains("'ZZ' is not a hex byte"), set.problems[2])
  }

  func testUnreadableStoreSaysWhatToRun() throws {
    try put("00:11:22:33:44:55/AA:BB:CC:DD:EE:01/info", phoneInfo(key: storedKey))
    guard getuid() != 0 else {
      // Root reads whatever the mode; a missing store is the case to check.
      XCTAssertThrowsError(try BondStoreReader.read(root: root + "/none")) {
        XCTAssertTrue("\($0)".contains("no BlueZ bond store"), "\($0)")
      }
      return
    }
    chmod(root + "/00:11:22:33:44:55", 0o000)
    defer { chmod(root + "/00:11:22:33:44:55", 0o700) }
    XCTAssertThrowsError(try BondStoreReader.read(root: root)) { error in
      let text = "\(error)"
      XCTAssertTrue(text.contains("only root can"), text)
      XCTAssertTrue(text.contains("sudo earshot keys export"), text)
      XCTAssertTrue(text.contains("earshot-keys.service"), text)
    }
  }

  // MARK: The keys file

  func testKeysFileRoundTripsAndHoldsNoOtherKeys() throws {
    try put(
      "00:11:22:33:44:55/AA:BB:CC:DD:EE:01/info", phoneInfo(key: storedKey, name: "Bob ; phone\\\\")
    )
    try put("00:11:22:33:44:55/C1:02:03:04:05:06/info", phoneInfo(key: nil, type: "static"))
    let set = try BondStoreReader.read(root: root)
    let text = BondedKeysFile.render(set.keys, source: root)
    XCTAssertFalse(text.contains("1F2E3D4C5B6A79880F1E2D3C4B5A6978"), "a long-term key leaked")
    XCTAssertFalse(text.uppercased().contains(storedKey), "the key must be written MSB first")
    XCTAssertTrue(text.contains("irk = \(sampleHex)"), text)
    let path = root + "/bonded-keys"
    XCTAssertTrue(try BondedKeysFileIO.write(text, to: path, group: "\(getgid())"))
    XCTAssertFalse(try BondedKeysFileIO.write(text, to: path, group: "\(getgid())"), "unchanged")
    var st = stat()
    XCTAssertEqual(stat(path, &st), 0)
    XCTAssertEqual(st.st_mode & 0o777, 0o640)
    XCTAssertEqual(st.st_gid, getgid())
    let back = try BondedKeysFileIO.read(path: path)
    XCTAssertEqual(back.problems, [])
    XCTAssertEqual(back.keys, set.keys)
    // libinih cuts " ;" as a comment in the store, so the name there is
    // "Bob"; the keys file escapes ';' so what it has survives.
    XCTAssertEqual(back.keys.first?.name, "Bob")
    let tricky = BondedKey(
      identity: BDAddress(raw: 1), identityType: .public, name: " a ; b\\c\n")
    let again = BondedKeysFile.parse(
      IniReader.parse(BondedKeysFile.render([tricky], source: "test"), file: "t"))
    XCTAssertEqual(again.errors, [])
    XCTAssertEqual(again.keys.first?.name, " a ; b\\c ")
  }

  func testKeysFileErrorsNameLineAndKey() throws {
    let text = """
      [device "AA:BB:CC:DD:EE:01"]
      type = public
      irk = \(sampleHex)

      [device "AA:BB:CC:DD:EE:02"]
      type = sideways
      irk = 00

      [phone]
      irk = \(sampleHex)
      """
    let (keys, errors) = BondedKeysFile.parse(IniReader.parse(text, file: "keys"))
    XCTAssertEqual(keys.map(\.identity.description), ["AA:BB:CC:DD:EE:01"])
    XCTAssertEqual(errors.map(\.line), [9, 6, 7])
    XCTAssertEqual(errors[1].key, "type")
    XCTAssertEqual(errors[2].key, "irk")
    XCTAssertTrue(errors[2].description.contains("32 hex digits"), errors[2].description)
  }

  func testMissingKeysFileSaysWhatToRun() {
    XCTAssertThrowsError(try BondedKeysFileIO.read(path: root + "/nothing")) {
      XCTAssertTrue("\($0)".contains("earshot-keys.service"), "\($0)")
    }
  }

  // MARK: Following

  /// A bond added to the store while following is handed over without a
  /// restart, and so is one removed.
  func testFollowerPicksUpABondAddedAndRemoved() throws {
    try put("00:11:22:33:44:55/AA:BB:CC:DD:EE:01/info", phoneInfo(key: storedKey))
    let loop = try EventLoop()
    var seen: [[String]] = []
    let follower = BondedKeysFollower(
      source: .store(root: root), loop: loop, settle: 0.05,
      changed: { seen.append($0.keys.map(\.identity.description)) },
      failed: { XCTFail("\($0)") })
    try follower.start()
    XCTAssertEqual(seen, [["AA:BB:CC:DD:EE:01"]])
    // bluetoothd makes the directory, then writes info by a rename.
    _ = loop.after(seconds: 0.05) {
      try? self.put(
        "00:11:22:33:44:55/C1:02:03:04:05:06/info",
        self.phoneInfo(key: self.storedKey, type: "static"))
    }
    _ = loop.after(seconds: 0.4) {
      XCTAssertEqual(unlink(self.root + "/00:11:22:33:44:55/AA:BB:CC:DD:EE:01/info"), 0)
      XCTAssertEqual(rmdir(self.root + "/00:11:22:33:44:55/AA:BB:CC:DD:EE:01"), 0)
    }
    _ = loop.after(seconds: 1.0) { loop.stop() }
    try loop.run()
    XCTAssertEqual(
      seen,
      [["AA:BB:CC:DD:EE:01"], ["AA:BB:CC:DD:EE:01", "C1:02:03:04:05:06"], ["C1:02:03:04:05:06"]])
  }

  /// The agent's side: the keys file appearing late and being replaced.
  func testFollowerWaitsForTheKeysFileAndFollowsIt() throws {
    let path = root + "/run/bonded-keys"
    let loop = try EventLoop()
    var seen: [Int] = []
    var failures = 0
    let follower = BondedKeysFollower(
      source: .keysFile(path: path), loop: loop, settle: 0.05, retry: 0.1,
      changed: { seen.append($0.keys.count) }, failed: { _ in failures += 1 })
    try follower.start()
    XCTAssertEqual(failures, 1, "the missing file is reported once")
    let one = BondedKey(identity: BDAddress(raw: 1), identityType: .public)
    let two = BondedKey(identity: BDAddress(raw: 2), identityType: .staticRandom)
    _ = loop.after(seconds: 0.3) {
      mkdir(self.root + "/run", 0o755)
      _ = try? BondedKeysFileIO.write(
        BondedKeysFile.render([one], source: "t"), to: path, group: nil)
    }
    _ = loop.after(seconds: 0.7) {
      _ = try? BondedKeysFileIO.write(
        BondedKeysFile.render([one, two], source: "t"), to: path, group: nil)
    }
    _ = loop.after(seconds: 1.1) { loop.stop() }
    try loop.run()
    XCTAssertEqual(failures, 1)
    XCTAssertEqual(seen, [1, 2])
  }
}

/// Removes a directory tree (tests only).
enum ChildProcessRemove {
  static func tree(_ path: String) throws {
    guard !path.isEmpty, path.hasPrefix("/tmp/") else { return }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/bin/rm")
    p.arguments = ["-rf", path]
    try p.run()
    p.waitUntilExit()
  }
}
