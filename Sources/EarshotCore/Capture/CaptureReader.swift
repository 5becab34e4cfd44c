/// Reads btsnoop, pcap and pcapng captures and yields their packets
/// normalised to what Earshot decodes: HCI events, or LE link-layer
/// advertising PDUs from a sniffer.
///
/// The bytes come either from a buffer the reader borrows, or from a source
/// it pulls from into one buffer of fixed size (`streamBufferBytes`), so a
/// capture of any size, a pipe or an endless device is read in bounded
/// memory. The header is checked before anything else is read. Each record
/// is checked whole before it is delivered; its `payload` points into the
/// reader's bytes and stays valid until the next call to `next()`.
///
/// A record cut short by the end of the input ends the walk and sets
/// `truncated`, with everything before it delivered. A record that cannot
/// be a valid one (a bad length, an interface that was never described, a
/// link type Earshot does not read) ends the walk and sets `failure`.
///
/// A streaming reader is a cursor over one input: do not copy it (a copy
/// shares its buffer). A reader over memory copies freely.
public struct CaptureReader: IteratorProtocol {
  public let format: CaptureFormat
  private var window: CaptureWindow
  public private(set) var truncated = false
  /// Why the walk stopped early, when the input is not a valid capture.
  public private(set) var failure: CaptureError?
  public private(set) var records = 0
  /// pcapng: the interfaces of the current section.
  private var interfaces: [PcapngInterface] = []
  /// pcapng: whether the current section is big-endian.
  private var bigEndian = false
  /// pcapng: whether any interface so far has a link type Earshot reads.
  private var readableInterface = false

  /// The longest record (headers included) the reader accepts: more than
  /// any HCI packet or sniffed PDU, and the largest snapshot length
  /// Wireshark and tcpdump use (262,144) with room for pcapng options.
  public static let maxRecordBytes = 1 << 19
  /// The one buffer a streaming reader holds, whatever the input's size.
  public static let streamBufferBytes = 1 << 20
  /// The most interfaces one pcapng section may describe (each costs the
  /// reader a few bytes, so a file of nothing else stays bounded too).
  public static let maxInterfaces = 1024
  /// How many interfaces the current pcapng section has described.
  public var interfaceCount: Int { interfaces.count }

  /// Reads a capture held in memory (borrowed, not copied).
  public init(_ bytes: UnsafeRawBufferPointer) throws {
    try self.init(window: CaptureWindow(borrowing: bytes))
  }

  /// Reads a capture from `source`, which fills the buffer it is given
  /// and returns how many bytes it wrote (0 at the end of the input). It is
  /// called only when a record needs more bytes than the buffer holds.
  /// Errors it throws end the walk and are kept in `inputError`.
  public init(source: @escaping CaptureSource) throws {
    try self.init(window: CaptureWindow(capacity: Self.streamBufferBytes, source: source))
  }

  private init(window: CaptureWindow) throws {
    var window = window
    // The longest header is pcap's (24 bytes); a shorter input is checked
    // with what there is.
    let head = window.peek(atMost: 24)
    if let error = window.inputError { throw error }
    format = try CaptureFormat.detect(head)
    switch format {
    case .btsnoop: window.consume(16)
    case .pcap: window.consume(24)
    case .pcapng: break  // the section header is a block like any other
    }
    self.window = window
  }

  /// The error the source threw, if it did; the walk ended there.
  public var inputError: (any Error)? { window.inputError }
  /// The size of the reader's buffer: `streamBufferBytes` when streaming,
  /// 0 when it borrows the caller's bytes. It never changes.
  public var bufferCapacity: Int { window.capacity }
  /// The most bytes the reader's buffer has held at once.
  public var bufferHighWater: Int { window.highWater }

  public mutating func next() -> CaptureRecord? {
    guard !truncated, failure == nil else { return nil }
    while true {
      let step: Step
      switch format {
      case .btsnoop(let datalink): step = nextBtsnoop(datalink)
      case .pcap(let linkType, let nanos, let bigEndian):
        step = nextPcap(linkType, nanos, bigEndian)
      case .pcapng: step = nextPcapng()
      }
      switch step {
      case .record(let r):
        records += 1
        return r
      case .skip: continue
      case .end:
        if case .pcapng = format, !interfaces.isEmpty, !readableInterface {
          failure = .unsupported(CapturePacket.unsupportedLinkType(interfaces[0].linkType))
        }
        return nil
      case .fail(let error):
        failure = error
        return nil
      }
    }
  }

  private enum Step {
    case record(CaptureRecord)
    case skip  // a record of no interest
    case end
    case fail(CaptureError)
  }

  /// The input ended before `count` more bytes: cleanly between records,
  /// or inside one.
  private mutating func ended() -> Step {
    if window.available > 0 { truncated = true }
    return .end
  }

  private func corrupt(_ what: String, at offset: Int) -> Step {
    .fail(.corrupt("\(what) (record at byte \(offset))"))
  }

  private func tooLong(_ size: Int, at offset: Int) -> Step {
    corrupt("a record of \(size) bytes, longer than any capture holds", at: offset)
  }

  // MARK: btsnoop

  /// Microseconds from 0000-01-01 to the Unix epoch, as btsnoop counts time.
  public static let btsnoopEpochOffset: Int64 = 0x00dc_ddb3_0f2f_8000

  private mutating func nextBtsnoop(_ datalink: UInt32) -> Step {
    let offset = window.offset
    guard let head = window.peek(24) else { return ended() }
    var h = ByteReader(head)
    _ = h.u32be()
    let included = Int(h.u32be()!)
    let flags = h.u32be()!
    _ = h.u32be()
    let ts = h.u64be()!
    let size = 24 + included
    guard size <= Self.maxRecordBytes else { return tooLong(size, at: offset) }
    guard let record = window.peek(size) else { return ended() }
    window.consume(size)
    let payload = UnsafeRawBufferPointer(rebasing: record[24...])
    let micros = Int64(bitPattern: ts) &- Self.btsnoopEpochOffset
    let packet: CapturePacket
    switch datalink {
    case 1001:  // H1: no indicator; flags say command/event and direction
      let isCommandOrEvent = flags & 0x2 != 0
      let received = flags & 0x1 != 0
      packet = isCommandOrEvent ? (received ? .hciEvent(payload) : .hciCommand(payload)) : .other
    case 1002:  // H4: indicator byte first
      packet = CapturePacket(h4: payload)
    case 2001:  // Linux monitor: opcode in the low 16 bits of flags
      switch flags & 0xFFFF {
      case 2: packet = .hciCommand(payload)
      case 3: packet = .hciEvent(payload)
      default: packet = .other
      }
    default: packet = .other
    }
    return .record(CaptureRecord(timestamp: micros, packet: packet))
  }

  // MARK: pcap

  private mutating func nextPcap(_ linkType: UInt32, _ nanos: Bool, _ bigEndian: Bool) -> Step {
    let offset = window.offset
    guard let head = window.peek(16) else { return ended() }
    var h = ByteReader(head)
    func u32() -> UInt32 { (bigEndian ? h.u32be() : h.u32le())! }
    let sec = u32()
    let frac = u32()
    let included = Int(u32())
    let size = 16 + included
    guard size <= Self.maxRecordBytes else { return tooLong(size, at: offset) }
    guard let record = window.peek(size) else { return ended() }
    window.consume(size)
    let payload = UnsafeRawBufferPointer(rebasing: record[16...])
    let micros = Int64(sec) * 1_000_000 + Int64(nanos ? frac / 1000 : frac)
    return .record(
      CaptureRecord(timestamp: micros, packet: CapturePacket(linkType: linkType, payload)))
  }

  // MARK: pcapng

  private mutating func nextPcapng() -> Step {
    let offset = window.offset
    guard let head = window.peek(12) else { return ended() }
    var h = ByteReader(head)
    let type = h.u32le()!  // the section header's type reads the same either way
    if type == PcapngBlock.sectionHeader {
      // The byte-order magic says how this section's numbers are written,
      // the length included.
      _ = h.skip(4)
      switch h.u32le()! {
      case 0x1A2B_3C4D: bigEndian = false
      case 0x4D3C_2B1A: bigEndian = true
      case let other:
        return corrupt(
          "a pcapng section header with byte-order magic \(hex(other)) (expected 1A2B3C4D)",
          at: offset)
      }
    }
    h.offset = 0
    let order = bigEndian
    func u32(_ r: inout ByteReader) -> UInt32? { order ? r.u32be() : r.u32le() }
    func u16(_ r: inout ByteReader) -> UInt16? { order ? r.u16be() : r.u16le() }
    let blockType = u32(&h)!
    let length = Int(u32(&h)!)
    guard length >= 12, length % 4 == 0 else {
      return corrupt(
        "a pcapng block length of \(length) (a multiple of 4, at least 12)", at: offset)
    }
    guard length <= Self.maxRecordBytes else { return tooLong(length, at: offset) }
    guard let block = window.peek(length) else { return ended() }
    window.consume(length)
    var t = ByteReader(block, offset: length - 4)
    let trailer = Int(u32(&t)!)
    guard trailer == length else {
      return corrupt(
        "a pcapng block whose trailing length \(trailer) differs from its leading \(length)",
        at: offset)
    }
    var b = ByteReader(UnsafeRawBufferPointer(rebasing: block[8..<(length - 4)]))

    switch blockType {
    case PcapngBlock.sectionHeader:  // a new section describes its interfaces anew
      interfaces.removeAll()
      return .skip
    case PcapngBlock.interfaceDescription:
      guard let linkType = u16(&b), b.skip(6) else {
        return corrupt("a pcapng interface description shorter than 20 bytes", at: offset)
      }
      var interface = PcapngInterface(linkType: UInt32(linkType))
      // Options: code, length, value padded to 4; code 0 ends them.
      while let code = u16(&b), let len = u16(&b), code != 0 {
        guard let value = b.take(Int(len)), b.skip((4 - Int(len) % 4) % 4) else { break }
        var v = ByteReader(value)
        switch code {
        case 9:  // if_tsresol: 10^-n, or 2^-n with the top bit set
          guard let res = v.u8() else { break }
          let exponent = Int(res & 0x7F)
          if res & 0x80 != 0 {
            guard exponent < 64 else {
              return corrupt("a pcapng timestamp resolution of 2^-\(exponent) s", at: offset)
            }
            interface.unitsPerSecond = 1 << UInt64(exponent)
          } else {
            guard exponent < 20 else {
              return corrupt("a pcapng timestamp resolution of 10^-\(exponent) s", at: offset)
            }
            interface.unitsPerSecond = (0..<exponent).reduce(1) { r, _ in r * 10 }
          }
        case 14:  // if_tsoffset: seconds added to every timestamp
          guard let raw = order ? v.u64be() : v.u64le() else { break }
          interface.offsetMicros = Int64(bitPattern: raw) &* 1_000_000
        default: break
        }
      }
      guard interfaces.count < Self.maxInterfaces else {
        return corrupt(
          "more than \(Self.maxInterfaces) interfaces in one pcapng section", at: offset)
      }
      if CapturePacket.supportedLinkTypes.contains(interface.linkType) {
        readableInterface = true
      }
      interfaces.append(interface)
      return .skip
    case PcapngBlock.enhancedPacket:
      guard let id = u32(&b), let high = u32(&b), let low = u32(&b), let included = u32(&b),
        b.skip(4)
      else { return corrupt("a pcapng packet block shorter than 32 bytes", at: offset) }
      guard let payload = b.take(Int(included)) else {
        return corrupt(
          "a pcapng packet of \(included) bytes in a block that holds \(b.remaining)", at: offset)
      }
      let interface: PcapngInterface
      switch self.interface(Int(id), at: offset) {
      case .success(let i): interface = i
      case .failure(let e): return .fail(e)
      }
      guard CapturePacket.supportedLinkTypes.contains(interface.linkType) else { return .skip }
      let ticks = UInt64(high) << 32 | UInt64(low)
      let units = interface.unitsPerSecond
      let micros =
        units == 1_000_000
        ? ticks : (ticks / units) &* 1_000_000 &+ (ticks % units) &* 1_000_000 / units
      return .record(
        CaptureRecord(
          timestamp: Int64(bitPattern: micros) &+ interface.offsetMicros,
          packet: CapturePacket(linkType: interface.linkType, payload)))
    case PcapngBlock.simplePacket:  // no timestamp; always the first interface
      guard let original = u32(&b) else {
        return corrupt("a pcapng simple packet block shorter than 16 bytes", at: offset)
      }
      let interface: PcapngInterface
      switch self.interface(0, at: offset) {
      case .success(let i): interface = i
      case .failure(let e): return .fail(e)
      }
      guard CapturePacket.supportedLinkTypes.contains(interface.linkType) else { return .skip }
      // The block is padded to 4; the packet's own length says where it ends.
      let payload = b.take(min(Int(original), b.remaining))!
      return .record(
        CaptureRecord(
          timestamp: 0, packet: CapturePacket(linkType: interface.linkType, payload)))
    default:
      return .skip
    }
  }

  /// The interface a packet block names, or why it cannot be read.
  private func interface(_ id: Int, at offset: Int) -> Result<PcapngInterface, CaptureError> {
    if interfaces.isEmpty {
      return .failure(
        .corrupt(
          "a pcapng packet before any interface description block (record at byte \(offset))"))
    }
    guard id < interfaces.count else {
      return .failure(
        .corrupt(
          "a pcapng packet on interface \(id), but the section describes "
            + "\(interfaces.count == 1 ? "only interface 0" : "interfaces 0 to \(interfaces.count - 1)")"
            + " (record at byte \(offset))"))
    }
    let interface = interfaces[id]
    if !CapturePacket.supportedLinkTypes.contains(interface.linkType), !readableInterface {
      return .failure(.unsupported(CapturePacket.unsupportedLinkType(interface.linkType)))
    }
    return .success(interface)
  }
}

/// Fills the buffer it is given with the capture's next bytes and returns
/// how many it wrote: 0 at the end of the input.
public typealias CaptureSource = (UnsafeMutableRawBufferPointer) throws -> Int

private enum PcapngBlock {
  static let sectionHeader: UInt32 = 0x0A0D_0D0A
  static let interfaceDescription: UInt32 = 1
  static let simplePacket: UInt32 = 3
  static let enhancedPacket: UInt32 = 6
}

private struct PcapngInterface {
  var linkType: UInt32
  var unitsPerSecond: UInt64 = 1_000_000
  var offsetMicros: Int64 = 0
}

private func hex(_ v: UInt32) -> String {
  let digits = String(v, radix: 16, uppercase: true)
  return String(repeating: "0", count: 8 - digits.count) + digits
}

/// The bytes a reader walks, from a cursor: all of a borrowed buffer, or a
/// window onto a source kept in one buffer allocated once. The cursor is a
/// plain value, so reading from memory touches no shared state.
struct CaptureWindow {
  private let buffer: CaptureBuffer?
  private var base: UnsafeRawPointer?
  private var start = 0
  private var end: Int
  /// The input offset of the buffer's first byte.
  private var origin = 0

  init(borrowing bytes: UnsafeRawBufferPointer) {
    buffer = nil
    base = bytes.baseAddress
    end = bytes.count
  }

  init(capacity: Int, source: @escaping CaptureSource) {
    let buffer = CaptureBuffer(capacity: capacity, source: source)
    self.buffer = buffer
    base = UnsafeRawPointer(buffer.storage)
    end = 0
  }

  var capacity: Int { buffer?.capacity ?? 0 }
  var highWater: Int { buffer?.highWater ?? 0 }
  var inputError: (any Error)? { buffer?.inputError }
  /// Bytes from the cursor to the end of what has been read (all of the
  /// rest of the input once `peek` has failed).
  var available: Int { end - start }
  /// The input offset of the cursor.
  var offset: Int { origin + start }

  /// The next `count` bytes, reading more from the source if needed, or
  /// `nil` if the input ends before them.
  @inline(__always)
  mutating func peek(_ count: Int) -> UnsafeRawBufferPointer? {
    if end - start < count {
      fill(count)
      guard end - start >= count else { return nil }
    }
    guard let base else { return nil }
    return UnsafeRawBufferPointer(start: base + start, count: count)
  }

  /// Up to `count` bytes: fewer only where the input ends.
  mutating func peek(atMost count: Int) -> UnsafeRawBufferPointer {
    if end - start < count { fill(count) }
    guard let base else { return UnsafeRawBufferPointer(start: nil, count: 0) }
    return UnsafeRawBufferPointer(start: base + start, count: min(count, end - start))
  }

  @inline(__always)
  mutating func consume(_ count: Int) { start += count }

  private mutating func fill(_ count: Int) {
    guard let buffer, count <= buffer.capacity else { return }
    let storage = buffer.storage
    // Keep only the unread bytes, at the front, then read behind them.
    if start > 0 {
      storage.copyMemory(from: storage + start, byteCount: end - start)
      origin += start
      end -= start
      start = 0
    }
    while end < count, let n = buffer.read(at: end) { end += n }
  }
}

/// The one buffer of a streaming reader and the source that fills it.
final class CaptureBuffer {
  let storage: UnsafeMutableRawPointer
  let capacity: Int
  private let source: CaptureSource
  private var atEnd = false
  private(set) var highWater = 0
  private(set) var inputError: (any Error)?

  init(capacity: Int, source: @escaping CaptureSource) {
    storage = .allocate(byteCount: capacity, alignment: 16)
    self.capacity = capacity
    self.source = source
  }

  deinit { storage.deallocate() }

  /// Reads into the buffer from `offset` to its end; returns how many bytes
  /// came, or `nil` at the end of the input (or the source's error).
  func read(at offset: Int) -> Int? {
    guard !atEnd, offset < capacity else { return nil }
    let room = UnsafeMutableRawBufferPointer(start: storage + offset, count: capacity - offset)
    do {
      let n = try source(room)
      guard n > 0 else {
        atEnd = true
        return nil
      }
      let got = min(n, room.count)
      highWater = max(highWater, offset + got)
      return got
    } catch {
      inputError = error
      atEnd = true
      return nil
    }
  }
}

public enum CaptureFormat: Equatable, Sendable {
  case btsnoop(datalink: UInt32)
  case pcap(linkType: UInt32, nanoseconds: Bool, bigEndian: Bool)
  case pcapng

  static func detect(_ bytes: UnsafeRawBufferPointer) throws -> CaptureFormat {
    var r = ByteReader(bytes)
    guard let magic = r.u32be() else { throw CaptureError.tooShort }
    switch magic {
    case 0x6274_736E:  // "btsn"
      guard let rest = r.u32be() else { throw CaptureError.tooShort }
      guard rest == 0x6F6F_7000 else { throw CaptureError.unknownFormat }
      guard let version = r.u32be(), let datalink = r.u32be() else {
        throw CaptureError.tooShort
      }
      guard version == 1 else { throw CaptureError.unsupported("btsnoop version \(version)") }
      guard [1001, 1002, 2001].contains(datalink) else {
        throw CaptureError.unsupported("btsnoop datalink \(datalink) (expected 1001, 1002 or 2001)")
      }
      return .btsnoop(datalink: datalink)
    case 0xA1B2_C3D4, 0xA1B2_3C4D, 0xD4C3_B2A1, 0x4D3C_B2A1:
      let bigEndian = magic == 0xA1B2_C3D4 || magic == 0xA1B2_3C4D
      let nanos = magic == 0xA1B2_3C4D || magic == 0x4D3C_B2A1
      guard r.skip(16), let raw = bigEndian ? r.u32be() : r.u32le() else {
        throw CaptureError.tooShort
      }
      let linkType = raw & 0x0FFF_FFFF
      guard CapturePacket.supportedLinkTypes.contains(linkType) else {
        throw CaptureError.unsupported(CapturePacket.unsupportedLinkType(linkType))
      }
      return .pcap(linkType: linkType, nanoseconds: nanos, bigEndian: bigEndian)
    case 0x0A0D_0D0A:
      guard r.skip(4), let order = r.u32le() else { throw CaptureError.tooShort }
      guard order == 0x1A2B_3C4D || order == 0x4D3C_2B1A else {
        throw CaptureError.unknownFormat
      }
      return .pcapng
    default:
      throw CaptureError.unknownFormat
    }
  }
}

public enum CaptureError: Error, Equatable, CustomStringConvertible {
  case tooShort
  case unknownFormat
  case unsupported(String)
  /// The input is a capture but breaks its format's rules; says where.
  case corrupt(String)

  public var description: String {
    switch self {
    case .tooShort: "the file is too short to be a capture"
    case .unknownFormat: "not a btsnoop, pcap or pcapng capture (unknown magic number)"
    case .unsupported(let what): "unsupported capture: \(what)"
    case .corrupt(let what): "corrupt capture: \(what)"
    }
  }
}

/// One captured packet with its time in microseconds since the Unix epoch.
public struct CaptureRecord {
  public var timestamp: Int64
  public var packet: CapturePacket
}

public enum CapturePacket {
  /// A bare HCI event (event code first).
  case hciEvent(UnsafeRawBufferPointer)
  case hciCommand(UnsafeRawBufferPointer)
  /// An LE link-layer packet from a sniffer, starting at the access address
  /// and ending with the CRC, with the RSSI and the link-layer channel
  /// (37–39 advertise) its pseudo-header gave, if any, and what it said of
  /// the CRC.
  case linkLayer(
    UnsafeRawBufferPointer, rssi: Int8?, channel: UInt8? = nil, crc: LinkLayerCRC = .unchecked)
  /// A sniffer record whose pseudo-header cannot be read (its lengths
  /// disagree, a version Earshot does not know) or that carries what Earshot
  /// does not decode (an LE Coded PHY packet); counted and skipped.
  case unreadableLinkLayer(UnsafeRawBufferPointer, reason: String)
  case other

  /// The pcap/pcapng link types Earshot reads, with what they carry.
  public static let linkTypeNames: [(UInt32, String)] = [
    (187, "Bluetooth HCI H4"),
    (201, "Bluetooth HCI H4 with direction header"),
    (251, "Bluetooth LE link layer"),
    (256, "Bluetooth LE link layer with RSSI pseudo-header"),
    (272, "Nordic BLE (nRF Sniffer for Bluetooth LE)"),
  ]
  static let supportedLinkTypes: Set<UInt32> = Set(linkTypeNames.map(\.0))

  /// A few link types people are likely to try, named in the error.
  private static let otherLinkTypeNames: [UInt32: String] = [
    1: "Ethernet", 101: "raw IP", 105: "IEEE 802.11", 113: "Linux cooked",
    127: "IEEE 802.11 radiotap", 157: "Nordic BLE (old)", 249: "Linux cooked v2",
    254: "Bluetooth Linux monitor",
  ]

  /// The same words for pcap and pcapng: the link type, its name where
  /// known, and the ones Earshot reads.
  static func unsupportedLinkType(_ linkType: UInt32) -> String {
    let name = otherLinkTypeNames[linkType].map { " (\($0))" } ?? ""
    let readable = linkTypeNames.map { "\($0.0) \($0.1)" }.joined(separator: ", ")
    return "link type \(linkType)\(name); Earshot reads link types \(readable)"
  }

  init(h4 payload: UnsafeRawBufferPointer) {
    guard let indicator = payload.first else {
      self = .other
      return
    }
    let rest = UnsafeRawBufferPointer(rebasing: payload[1...])
    switch H4PacketType(rawValue: indicator) {
    case .command: self = .hciCommand(rest)
    case .event: self = .hciEvent(rest)
    default: self = .other
    }
  }

  init(linkType: UInt32, _ payload: UnsafeRawBufferPointer) {
    switch linkType {
    case 187:
      self.init(h4: payload)
    case 201:  // 4-byte direction pseudo-header, then H4
      self =
        payload.count > 4
        ? CapturePacket(h4: UnsafeRawBufferPointer(rebasing: payload[4...])) : .other
    case 251:  // no pseudo-header: nothing says whether the CRC was checked
      self = .linkLayer(payload, rssi: nil)
    case 256:
      // LE LL with PHDR: channel, signal dBm, noise dBm, AA offenses,
      // reference AA (4), flags (2, LE): bit 1 says the signal is valid,
      // bit 10 that the CRC was checked, bit 11 that it was right.
      guard payload.count > 10 else {
        self = .unreadableLinkLayer(
          payload,
          reason: "a link type 256 packet of \(payload.count) bytes ends inside its "
            + "10-byte pseudo-header")
        return
      }
      let flags = UInt16(payload[8]) | UInt16(payload[9]) << 8
      let rssi = flags & 0x0002 != 0 ? Int8(bitPattern: payload[1]) : nil
      let crc: LinkLayerCRC =
        flags & 0x0400 == 0 ? .unchecked : flags & 0x0800 != 0 ? .valid : .invalid
      self = .linkLayer(
        UnsafeRawBufferPointer(rebasing: payload[10...]), rssi: rssi,
        channel: LinkLayer.channel(rf: payload[0]), crc: crc)
    case 272:
      self = NordicSniffer.packet(payload)
    default:
      self = .other
    }
  }
}
