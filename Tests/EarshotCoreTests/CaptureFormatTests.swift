import EarshotTestSupport
import XCTest

@testable import EarshotCore

/// Every container in every byte order, streaming in bounded memory, and
/// faults that say what they are.
final class CaptureFormatTests: XCTestCase {
  /// What a report says, comparable.
  struct Seen: Equatable {
    let micros: Int64
    let address: UInt64
    let pdu: String
    let rssi: Int8?
    let direct: UInt64?
    let data: [UInt8]
  }

  func seen(_ t: Int64, _ r: AdvertisingReport) -> Seen {
    Seen(
      micros: t, address: r.address.raw, pdu: r.pdu.name, rssi: r.rssi,
      direct: r.directAddress?.raw, data: Array(r.data))
  }

  func reports(_ bytes: [UInt8]) throws -> [Seen] {
    var out: [Seen] = []
    var replay = CaptureReplay()
    try bytes.withUnsafeBytes { raw in try replay.run(raw) { out.append(seen($0, $1)) } }
    return out
  }

  /// The error replaying `bytes` throws, from the header or part way.
  func failure(_ bytes: [UInt8]) -> (error: CaptureError?, delivered: Int) {
    var n = 0
    var replay = CaptureReplay()
    do {
      try bytes.withUnsafeBytes { raw in try replay.run(raw) { _, _ in n += 1 } }
    } catch let e as CaptureError {
      return (e, n)
    } catch {
      XCTFail("unexpected \(error)")
    }
    return (nil, n)
  }

  /// Re-encodes every record of a capture in `container`.
  func reencode(_ bytes: [UInt8], _ container: CaptureContainer, linkType: UInt32 = 187) throws
    -> [UInt8]
  {
    var writer = CaptureWriter(container: container, linkType: linkType)
    try bytes.withUnsafeBytes { raw in
      var reader = try CaptureReader(raw)
      while let r = reader.next() { writer.append(r) }
      XCTAssertNil(reader.failure)
    }
    return writer.bytes
  }

  /// A busy room with a directed advertisement and a scan response.
  var hciCapture: [UInt8] {
    var c = SyntheticCapture.busyRoom(reports: 300)
    let data: [UInt8] = [0x02, 0x01, 0x06]
    data.withUnsafeBytes { d in
      c.append(
        micros: 1_767_225_700_000_000,
        report: AdvertisingReport(
          pdu: .scanRsp, address: BDAddress(raw: 0x1122_3344_5566), addressType: .public,
          rssi: -70, data: d))
      c.append(
        micros: 1_767_225_700_000_001,
        report: AdvertisingReport(
          pdu: .advDirectInd, address: BDAddress(raw: 0x1122_3344_5567), addressType: .random,
          directAddress: BDAddress(raw: 0xAABB_CCDD_EEFF), rssi: -71,
          data: UnsafeRawBufferPointer(start: nil, count: 0)))
    }
    return c.bytes
  }

  // MARK: Every container, both byte orders

  func testEveryContainerAndByteOrderGivesTheSameReports() throws {
    let original = try reports(hciCapture)
    XCTAssertEqual(original.count, 302)
    for container in CaptureContainer.allCases {
      for linkType: UInt32 in [187, 201] {
        let again = try reports(reencode(hciCapture, container, linkType: linkType))
        XCTAssertEqual(again, original, "\(container), link type \(linkType)")
      }
    }
  }

  func testSnifferCaptureInEveryContainerThatHoldsIt() throws {
    let pcap = try SharedData.bytes("ble/captures/blakete_boston-mesh.le-ll-phdr.pcap")
    let original = try reports(pcap)
    XCTAssertGreaterThan(original.count, 50)
    // That capture's pseudo-headers carry no signal; an RSSI survives too.
    let pdu: [UInt8] = [0xD6, 0xBE, 0x89, 0x8E, 0x42, 6, 1, 2, 3, 4, 5, 6]
    for container in CaptureContainer.allCases where container != .btsnoop {
      var writer = CaptureWriter(container: container, linkType: 256)
      pdu.withUnsafeBytes {
        XCTAssertTrue(writer.append(CaptureRecord(timestamp: 7, packet: .linkLayer($0, rssi: -60))))
      }
      XCTAssertEqual(
        try reports(writer.bytes),
        [
          Seen(
            micros: 7, address: 0x0605_0403_0201, pdu: "adv_nonconn_ind", rssi: -60, direct: nil,
            data: [])
        ],
        "\(container)")
    }
    for container in CaptureContainer.allCases where container != .btsnoop {
      XCTAssertEqual(
        try reports(reencode(pcap, container, linkType: 256)), original, "\(container)")
    }
  }

  func testBigEndianPcapngMadeFromALittleEndianOne() throws {
    let little = try reencode(hciCapture, .pcapng(bigEndian: false))
    let big = PcapngByteSwap.swap(little)
    XCTAssertNotEqual(big, little)
    XCTAssertEqual(
      Array(big[8..<12]), [0x1A, 0x2B, 0x3C, 0x4D], "the byte-order magic, big-endian")
    let original = try reports(hciCapture)
    XCTAssertEqual(try reports(big), original)
    // The writer's own big-endian output is the same bytes.
    XCTAssertEqual(try reencode(hciCapture, .pcapng(bigEndian: true)), big)
    // And a shared sniffer capture, by way of pcapng.
    let pcap = try SharedData.bytes("ble/captures/blakete_boston-mesh.le-ll-phdr.pcap")
    let sniffed = PcapngByteSwap.swap(try reencode(pcap, .pcapng(bigEndian: false)))
    XCTAssertEqual(try reports(sniffed), try reports(pcap))
  }

  func testSectionsMayChangeByteOrder() throws {
    let little = try reencode(hciCapture, .pcapng(bigEndian: false))
    let big = try reencode(hciCapture, .pcapng(bigEndian: true))
    let both = try reports(little + big)
    XCTAssertEqual(both, try reports(hciCapture) + reports(hciCapture))
  }

  // MARK: Link types Earshot does not read

  /// A pcap and a pcapng holding one Ethernet-sized packet of `linkType`.
  func foreign(_ linkType: UInt32) -> (pcap: [UInt8], pcapng: [UInt8]) {
    var pcap = hex("D4C3B2A1 0200 0400 00000000 00000000 00000400")
    pcap += withUnsafeBytes(of: linkType.littleEndian) { Array($0) }
    pcap += hex("01000000 00000000 04000000 04000000 DEADBEEF")
    var pcapng = hex("0A0D0D0A 1C000000 4D3C2B1A 0100 0000 FFFFFFFFFFFFFFFF 1C000000")
    pcapng += hex("01000000 14000000")
    pcapng += [UInt8(linkType & 0xFF), UInt8(linkType >> 8)]
    pcapng += hex("0000 00000400 14000000")
    pcapng += hex(
      "06000000 24000000 00000000 00000000 01000000 04000000 04000000 DEADBEEF 24000000")
    return (pcap, pcapng)
  }

  func testUnreadableLinkTypeIsTheSameErrorInPcapAndPcapng() {
    for linkType: UInt32 in [157, 1] {
      let (pcap, pcapng) = foreign(linkType)
      let a = failure(pcap)
      let b = failure(pcapng)
      XCTAssertNotNil(a.error)
      XCTAssertEqual(a.error, b.error, "link type \(linkType)")
      let text = "\(b.error.map { "\($0)" } ?? "")"
      XCTAssertTrue(text.contains("link type \(linkType) ("), text)
      XCTAssertTrue(text.contains("Earshot reads link types 187"), text)
      XCTAssertTrue(text.contains("256 Bluetooth LE link layer with RSSI"), text)
    }
    XCTAssertTrue("\(failure(foreign(157).pcapng).error!)".contains("Nordic BLE (old)"))
    XCTAssertTrue("\(failure(foreign(1).pcap).error!)".contains("272 Nordic BLE"))
    // An interface description alone (no packets) is the same error.
    let idbOnly = Array(foreign(157).pcapng.prefix(48))
    XCTAssertEqual(failure(idbOnly).error, failure(foreign(157).pcap).error)
  }

  func testAForeignInterfaceBesideABluetoothOneIsSkipped() throws {
    // Interface 0 is Bluetooth H4, interface 2 Ethernet: its packets are skipped.
    var bytes = try reencode(hciCapture, .pcapng(bigEndian: false))
    bytes += hex("01000000 14000000 0100 0000 00000400 14000000")
    bytes += hex("06000000 24000000 02000000 00000000 01000000 04000000 04000000 DEADBEEF 24000000")
    bytes += try reencode(hciCapture, .pcapng(bigEndian: false)).dropFirst(28 + 40)
    XCTAssertEqual(try reports(bytes).count, 2 * 302)
  }

  // MARK: Faults name themselves

  func testPacketOnAnUndescribedInterface() throws {
    var bytes = try reencode(hciCapture, .pcapng(bigEndian: false))
    // Third packet block: after the section header (28), two interfaces
    // (20 each) and two packet blocks.
    var offset = 68
    for _ in 0..<2 { offset += Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8 }
    XCTAssertEqual(bytes[offset], 6)
    bytes[offset + 8] = 5
    let (error, delivered) = failure(bytes)
    XCTAssertEqual(delivered, 2, "the packets before it are delivered")
    let text = "\(error.map { "\($0)" } ?? "none")"
    XCTAssertTrue(text.hasPrefix("corrupt capture: a pcapng packet on interface 5"), text)
    XCTAssertTrue(text.contains("interfaces 0 to 1"), text)
    XCTAssertTrue(text.contains("record at byte \(offset)"), text)
  }

  func testPacketBeforeAnyInterfaceDescription() throws {
    let bytes = try reencode(hciCapture, .pcapng(bigEndian: true))
    let noInterfaces = Array(bytes.prefix(28) + bytes.dropFirst(68))
    let (error, delivered) = failure(noInterfaces)
    XCTAssertEqual(delivered, 0)
    XCTAssertEqual(
      error,
      .corrupt("a pcapng packet before any interface description block (record at byte 28)"))
  }

  func testBrokenBlockLengthsAreCorruptNotTruncated() throws {
    let bytes = try reencode(hciCapture, .pcapng(bigEndian: false))
    var odd = bytes
    odd[68 + 4] = 0x21  // 33: not a multiple of 4
    XCTAssertEqual(
      failure(odd).error,
      .corrupt("a pcapng block length of 33 (a multiple of 4, at least 12) (record at byte 68)"))
    var trailer = bytes
    let length = Int(bytes[72])
    trailer[68 + length - 4] ^= 0x40
    XCTAssertTrue("\(failure(trailer).error!)".contains("trailing length"))
    // A record cut short by the end of the input is only truncated.
    var replay = CaptureReplay()
    try Array(bytes.dropLast(3)).withUnsafeBytes { raw in try replay.run(raw) { _, _ in } }
    XCTAssertTrue(replay.truncated)
  }

  func testASectionOfEndlessInterfacesIsRefused() throws {
    let bytes = try reencode(hciCapture, .pcapng(bigEndian: false))
    let interface = hex("01000000 14000000 BB00 0000 00000400 14000000")
    let many = Array(bytes.prefix(28)) + (0..<2000).flatMap { _ in interface }
    try many.withUnsafeBytes { raw in
      var reader = try CaptureReader(raw)
      XCTAssertNil(reader.next())
      XCTAssertEqual(reader.interfaceCount, CaptureReader.maxInterfaces)
      XCTAssertEqual(
        reader.failure,
        .corrupt(
          "more than 1024 interfaces in one pcapng section (record at byte \(28 + 1024 * 20))"))
    }
  }

  func testLinkLayerRejectsSayWhichRuleIsBroken() {
    func reason(_ bytes: [UInt8]) -> String {
      switch bytes.withUnsafeBytes({ LinkLayer.decode($0, rssi: nil) }) {
      case .malformed(let fault): "\(fault)"
      case .report: "report"
      case .skipped(let why): "skipped: \(why)"
      case .ignored: "ignored"
      }
    }
    let aa: [UInt8] = [0xD6, 0xBE, 0x89, 0x8E]
    let address: [UInt8] = [1, 2, 3, 4, 5, 6]
    // ADV_IND whose length says 40: the packet holds it, the PDU type does not allow it.
    XCTAssertEqual(
      reason(aa + [0x00, 40] + address + Array(repeating: 0, count: 34)),
      "link-layer ADV_IND PDU length 40 is invalid (6 to 37: a 6-byte address and up to 31 bytes of data)"
    )
    XCTAssertEqual(
      reason(aa + [0x00, 4] + [1, 2, 3, 4]),
      "link-layer ADV_IND PDU length 4 is invalid (6 to 37: a 6-byte address and up to 31 bytes of data)"
    )
    XCTAssertEqual(
      reason(aa + [0x01, 6] + address),
      "link-layer ADV_DIRECT_IND PDU length 6 is invalid (it is always 12)")
    XCTAssertEqual(
      reason(aa + [0x02, 20] + address),
      "link-layer PDU length 20 runs past the packet (6 bytes follow the header)")
    XCTAssertEqual(reason([0xD6, 0xBE]), "a link-layer packet of 2 bytes has no access address")
    XCTAssertEqual(reason(aa + [0x00]), "a link-layer packet of 5 bytes ends inside the PDU header")
    XCTAssertEqual(reason(aa + [0x02, 6] + address), "report")
  }

  // MARK: Streaming in bounded memory

  /// A source that serves `header` once, then `body` `repeats` times, in
  /// pieces of at most `piece` bytes; counts what it served.
  final class RepeatingSource {
    let header: [UInt8]
    let body: [UInt8]
    var repeats: Int
    let piece: Int
    var served = 0
    var position = 0
    var inHeader = true

    init(header: [UInt8], body: [UInt8], repeats: Int, piece: Int = .max) {
      (self.header, self.body, self.repeats, self.piece) = (header, body, repeats, piece)
    }

    func read(_ buffer: UnsafeMutableRawBufferPointer) -> Int {
      let current = inHeader ? header : body
      if !inHeader && repeats == 0 { return 0 }
      let n = min(buffer.count, current.count - position, piece)
      current.withUnsafeBytes { src in
        buffer.baseAddress!.copyMemory(from: src.baseAddress! + position, byteCount: n)
      }
      position += n
      served += n
      if position == current.count {
        position = 0
        if inHeader { inHeader = false } else { repeats -= 1 }
      }
      return n
    }
  }

  func testTheBufferStaysBoundedWhateverTheCaptureSize() throws {
    let capture = SyntheticCapture.busyRoom(reports: 2000).bytes
    let header = Array(capture.prefix(16))
    let body = Array(capture.dropFirst(16))
    var highWaters: [Int] = []
    for repeats in [1, 40] {
      let source = RepeatingSource(header: header, body: body, repeats: repeats)
      var reader = try CaptureReader(source: source.read)
      var replay = CaptureReplay()
      var n = 0
      try replay.run(&reader) { _, _ in n += 1 }
      XCTAssertEqual(n, 2000 * repeats)
      XCTAssertFalse(replay.truncated)
      XCTAssertEqual(source.served, 16 + body.count * repeats)
      XCTAssertEqual(reader.bufferCapacity, CaptureReader.streamBufferBytes)
      XCTAssertLessThanOrEqual(reader.bufferHighWater, CaptureReader.streamBufferBytes)
      highWaters.append(reader.bufferHighWater)
    }
    XCTAssertGreaterThan(body.count * 40, 3 * CaptureReader.streamBufferBytes)
    XCTAssertTrue(highWaters.allSatisfy { $0 > 0 })
  }

  func testStreamingInAnyPieceSizeReadsWhatMemoryReads() throws {
    let bytes = try reencode(hciCapture, .pcapng(bigEndian: true))
    let whole = try reports(bytes)
    for piece in [1, 3, 7, 64, 4096] {
      let source = RepeatingSource(header: bytes, body: [], repeats: 0, piece: piece)
      var reader = try CaptureReader(source: source.read)
      var replay = CaptureReplay()
      var got: [Seen] = []
      try replay.run(&reader) { got.append(seen($0, $1)) }
      XCTAssertEqual(got, whole, "pieces of \(piece)")
      XCTAssertFalse(replay.truncated)
    }
  }

  func testANonCaptureFailsAtTheFirstRead() {
    // Like /dev/zero: endless zeros.
    let zeros = RepeatingSource(
      header: [0], body: [UInt8](repeating: 0, count: 4096), repeats: .max)
    XCTAssertThrowsError(try CaptureReader(source: zeros.read)) {
      XCTAssertEqual($0 as? CaptureError, .unknownFormat)
    }
    XCTAssertLessThanOrEqual(zeros.served, CaptureReader.streamBufferBytes)
    // A btsnoop header, then a record that claims 4 GB: refused at its header.
    let header = BtsnoopWriter.header + hex("FFFFFFF0 FFFFFFF0 00000003 00000000 0000000000000000")
    let claim = RepeatingSource(
      header: header, body: [UInt8](repeating: 0, count: 4096), repeats: .max)
    var reader = try! CaptureReader(source: claim.read)
    XCTAssertNil(reader.next())
    XCTAssertEqual(
      reader.failure,
      .corrupt("a record of 4294967304 bytes, longer than any capture holds (record at byte 16)"))
    XCTAssertLessThanOrEqual(claim.served, CaptureReader.streamBufferBytes)
  }

  func testTheSourcesErrorEndsTheReplay() throws {
    struct Broken: Error {}
    let bytes = hciCapture
    var served = false
    var reader = try CaptureReader { buffer in
      if served { throw Broken() }
      served = true
      let n = 1000
      bytes.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: n) }
      return n
    }
    var replay = CaptureReplay()
    var n = 0
    XCTAssertThrowsError(try replay.run(&reader) { _, _ in n += 1 }) { XCTAssertTrue($0 is Broken) }
    XCTAssertGreaterThan(n, 0)
  }
}

/// Rewrites a little-endian pcapng as big-endian, block by block: the
/// test's own converter, independent of `CaptureWriter`.
enum PcapngByteSwap {
  static func swap(_ le: [UInt8]) -> [UInt8] {
    var out = le
    func swap16(_ at: Int) { out.swapAt(at, at + 1) }
    func swap32(_ at: Int) {
      out.swapAt(at, at + 3)
      out.swapAt(at + 1, at + 2)
    }
    func swap64(_ at: Int) { for i in 0..<4 { out.swapAt(at + i, at + 7 - i) } }
    func u32(_ at: Int) -> Int {
      Int(le[at]) | Int(le[at + 1]) << 8 | Int(le[at + 2]) << 16 | Int(le[at + 3]) << 24
    }
    func options(_ from: Int, _ to: Int, u64Codes: Set<Int>) {
      var at = from
      while at + 4 <= to {
        let code = Int(le[at]) | Int(le[at + 1]) << 8
        let length = Int(le[at + 2]) | Int(le[at + 3]) << 8
        swap16(at)
        swap16(at + 2)
        if u64Codes.contains(code), length == 8 { swap64(at + 4) }
        if code == 0 { break }
        at += 4 + (length + 3) & ~3
      }
    }
    var at = 0
    while at + 12 <= le.count {
      let type = u32(at)
      let length = u32(at + 4)
      let end = at + length
      swap32(at)
      swap32(at + 4)
      swap32(end - 4)
      let body = at + 8
      switch type {
      case 0x0A0D_0D0A:
        swap32(body)
        swap16(body + 4)
        swap16(body + 6)
        swap64(body + 8)
        options(body + 16, end - 4, u64Codes: [])
      case 1:
        swap16(body)
        swap32(body + 4)
        options(body + 8, end - 4, u64Codes: [14])
      case 6:
        for i in 0..<5 { swap32(body + 4 * i) }
        options(body + 20 + (u32(body + 12) + 3) & ~3, end - 4, u64Codes: [])
      case 3:
        swap32(body)
      default: break
      }
      at = end
    }
    return out
  }
}
