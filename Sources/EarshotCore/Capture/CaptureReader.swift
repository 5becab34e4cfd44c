/// Reads btsnoop, pcap and pcapng captures from bytes in memory and yields
/// their packets normalised to what Earshot decodes: HCI events, or LE
/// link-layer advertising PDUs from a sniffer.
///
/// The reader borrows the capture's bytes; each record's `payload` points
/// into them. A truncated or corrupt record ends the walk and sets
/// `truncated`, with everything before it delivered.
public struct CaptureReader: IteratorProtocol {
  public let format: CaptureFormat
  private var reader: ByteReader
  public private(set) var truncated = false
  public private(set) var records = 0
  /// pcapng: the link type and timestamp resolution of each interface.
  private var interfaces: [(linkType: UInt32, unitsPerSecond: UInt64)] = []

  public init(_ bytes: UnsafeRawBufferPointer) throws {
    format = try CaptureFormat.detect(bytes)
    reader = ByteReader(bytes)
    switch format {
    case .btsnoop: _ = reader.skip(16)
    case .pcap: _ = reader.skip(24)
    case .pcapng: break  // the section header is a block like any other
    }
  }

  public mutating func next() -> CaptureRecord? {
    while !reader.isAtEnd {
      let record: CaptureRecord??
      switch format {
      case .btsnoop(let datalink): record = nextBtsnoop(datalink)
      case .pcap(let linkType, let nanos, let bigEndian):
        record = nextPcap(linkType, nanos, bigEndian)
      case .pcapng: record = nextPcapng()
      }
      switch record {
      case .none:
        truncated = true
        return nil
      case .some(.none): continue  // a record of no interest
      case .some(.some(let r)):
        records += 1
        return r
      }
    }
    return nil
  }

  // MARK: btsnoop

  /// Microseconds from 0000-01-01 to the Unix epoch, as btsnoop counts time.
  public static let btsnoopEpochOffset: Int64 = 0x00dc_ddb3_0f2f_8000

  private mutating func nextBtsnoop(_ datalink: UInt32) -> CaptureRecord?? {
    guard reader.u32be() != nil, let included = reader.u32be(), let flags = reader.u32be(),
      reader.u32be() != nil, let ts = reader.u64be(), let payload = reader.take(Int(included))
    else { return nil }
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
    return CaptureRecord(timestamp: micros, packet: packet)
  }

  // MARK: pcap

  private mutating func nextPcap(_ linkType: UInt32, _ nanos: Bool, _ bigEndian: Bool)
    -> CaptureRecord??
  {
    func u32() -> UInt32? { bigEndian ? reader.u32be() : reader.u32le() }
    guard let sec = u32(), let frac = u32(), let included = u32(), u32() != nil,
      let payload = reader.take(Int(included))
    else { return nil }
    let micros = Int64(sec) * 1_000_000 + Int64(nanos ? frac / 1000 : frac)
    return CaptureRecord(timestamp: micros, packet: CapturePacket(linkType: linkType, payload))
  }

  // MARK: pcapng

  private mutating func nextPcapng() -> CaptureRecord?? {
    let start = reader.offset
    guard let type = reader.u32le(), let length = reader.u32le(), length >= 12, length % 4 == 0,
      let body = reader.take(Int(length) - 12), reader.u32le() == length
    else { return nil }
    _ = start
    var b = ByteReader(body)
    switch type {
    case 0x0A0D_0D0A:  // section header: a new section resets interfaces
      guard b.u32le() == 0x1A2B_3C4D else { return nil }  // big-endian sections are not supported
      interfaces.removeAll()
      return .some(nil)
    case 0x0000_0001:  // interface description
      guard let linkType = b.u16le(), b.skip(6) else { return nil }
      var units: UInt64 = 1_000_000
      // Options: code, length, value padded to 4.
      while let code = b.u16le(), let len = b.u16le(), code != 0 {
        guard let value = b.take(Int(len)), b.skip((4 - Int(len) % 4) % 4) else { break }
        if code == 9, let res = value.first {  // if_tsresol
          let exponent = UInt64(res & 0x7F)
          units = res & 0x80 != 0 ? (1 << exponent) : (0..<exponent).reduce(1) { r, _ in r * 10 }
        }
      }
      interfaces.append((UInt32(linkType), units))
      return .some(nil)
    case 0x0000_0006:  // enhanced packet
      guard let iface = b.u32le(), let high = b.u32le(), let low = b.u32le(),
        let included = b.u32le(),
        b.skip(4), let payload = b.take(Int(included)), Int(iface) < interfaces.count
      else { return nil }
      let (linkType, units) = interfaces[Int(iface)]
      let ticks = UInt64(high) << 32 | UInt64(low)
      let micros = Int64(
        units == 1_000_000 ? ticks : ticks / units * 1_000_000 + ticks % units * 1_000_000 / units)
      return CaptureRecord(timestamp: micros, packet: CapturePacket(linkType: linkType, payload))
    case 0x0000_0003:  // simple packet: no timestamp
      guard b.u32le() != nil, let first = interfaces.first else { return nil }
      return CaptureRecord(timestamp: 0, packet: CapturePacket(linkType: first.linkType, b.rest()))
    default:
      return .some(nil)
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
      guard r.u32be() == 0x6F6F_7000, let version = r.u32be(), let datalink = r.u32be() else {
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
        throw CaptureError.unsupported("pcap link type \(linkType) (expected 187, 201, 251 or 256)")
      }
      return .pcap(linkType: linkType, nanoseconds: nanos, bigEndian: bigEndian)
    case 0x0A0D_0D0A:
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

  public var description: String {
    switch self {
    case .tooShort: "the file is too short to be a capture"
    case .unknownFormat: "not a btsnoop, pcap or pcapng capture (unknown magic number)"
    case .unsupported(let what): "unsupported capture: \(what)"
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
  /// An LE link-layer packet from a sniffer, starting at the access address,
  /// with the RSSI its pseudo-header gave, if any.
  case linkLayer(UnsafeRawBufferPointer, rssi: Int8?)
  case other

  static let supportedLinkTypes: Set<UInt32> = [187, 201, 251, 256]

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
    case 251:
      self = .linkLayer(payload, rssi: nil)
    case 256:
      // LE LL with PHDR: channel, signal dBm, noise dBm, AA offenses,
      // reference AA (4), flags (2, LE): bit 1 says the signal is valid.
      guard payload.count > 10 else {
        self = .other
        return
      }
      let flags = UInt16(payload[8]) | UInt16(payload[9]) << 8
      let rssi = flags & 0x0002 != 0 ? Int8(bitPattern: payload[1]) : nil
      self = .linkLayer(UnsafeRawBufferPointer(rebasing: payload[10...]), rssi: rssi)
    default:
      self = .other
    }
  }
}
