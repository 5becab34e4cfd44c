/// The containers Earshot reads, each in every byte order and timestamp
/// resolution it comes in.
public enum CaptureContainer: Equatable, Sendable, CaseIterable, CustomStringConvertible {
  /// btsnoop v1, datalink 1002 (H4): HCI packets only.
  case btsnoop
  case pcap(bigEndian: Bool, nanoseconds: Bool)
  case pcapng(bigEndian: Bool)

  public static let allCases: [CaptureContainer] = [
    .btsnoop,
    .pcap(bigEndian: false, nanoseconds: false), .pcap(bigEndian: true, nanoseconds: false),
    .pcap(bigEndian: false, nanoseconds: true), .pcap(bigEndian: true, nanoseconds: true),
    .pcapng(bigEndian: false), .pcapng(bigEndian: true),
  ]

  public var description: String {
    switch self {
    case .btsnoop: "btsnoop"
    case .pcap(let be, let ns): "pcap (\(be ? "big" : "little")-endian, \(ns ? "ns" : "µs"))"
    case .pcapng(let be): "pcapng (\(be ? "big" : "little")-endian)"
    }
  }

  /// Whether a timestamp survives this container exactly: pcap counts
  /// unsigned 32-bit seconds; btsnoop and pcapng hold any microsecond.
  public func holds(micros: Int64) -> Bool {
    switch self {
    case .btsnoop, .pcapng: true
    case .pcap: micros >= 0 && micros / 1_000_000 <= Int64(UInt32.max)
    }
  }
}

/// Writes captures in any `CaptureContainer`: for conversions, tests and the
/// fuzz target's re-encodings. HCI packets go as H4 (link type 187, or 201
/// with its direction header), sniffed PDUs with the LE link-layer RSSI
/// pseudo-header (256). A pcapng file describes both interfaces, so it holds
/// both kinds; a pcap holds the kind its `linkType` says; btsnoop holds HCI.
public struct CaptureWriter {
  public let container: CaptureContainer
  public let linkType: UInt32
  public private(set) var bytes: [UInt8] = []

  /// pcapng: interface 0 carries HCI (`linkType` 187 or 201), interface 1
  /// sniffed PDUs (256).
  public init(container: CaptureContainer, linkType: UInt32 = 187) {
    self.container = container
    self.linkType = linkType
    switch container {
    case .btsnoop:
      bytes = BtsnoopWriter.header
    case .pcap(let be, let ns):
      u32(ns ? 0xA1B2_3C4D : 0xA1B2_C3D4, be)
      u16(2, be)
      u16(4, be)
      u32(0, be)  // thiszone
      u32(0, be)  // sigfigs
      u32(262_144, be)  // snaplen
      u32(linkType, be)
    case .pcapng(let be):
      u32(0x0A0D_0D0A, be)
      u32(28, be)
      u32(0x1A2B_3C4D, be)
      u16(1, be)
      u16(0, be)
      u64(UInt64.max, be)  // section length unknown
      u32(28, be)
      for interface in [linkType == 201 ? 201 : 187, 256] as [UInt32] {
        u32(1, be)
        u32(20, be)
        u16(UInt16(interface), be)
        u16(0, be)
        u32(262_144, be)
        u32(20, be)
      }
    }
  }

  /// Appends a record as a reader delivered it. Returns false, writing
  /// nothing, for a packet this capture cannot hold (a sniffed PDU in
  /// btsnoop, `.other`).
  @discardableResult
  public mutating func append(_ record: CaptureRecord) -> Bool {
    let hci: (indicator: UInt8, bytes: UnsafeRawBufferPointer)
    switch record.packet {
    case .hciEvent(let e): hci = (H4PacketType.event.rawValue, e)
    case .hciCommand(let c): hci = (H4PacketType.command.rawValue, c)
    case .linkLayer(let pdu, let rssi, let channel, let crc):
      switch container {
      case .btsnoop: return false
      case .pcap where linkType != 256: return false
      case .pcap, .pcapng: break
      }
      // RF channel (channel 37 unless told), signal, noise, AA offenses,
      // reference AA, flags (dewhitened, reference AA valid, signal valid
      // with an RSSI, and CRC checked and valid as the record says).
      let rf = channel.flatMap(LinkLayer.rf(channel:)) ?? 0
      var phdr: [UInt8] = [rf, UInt8(bitPattern: rssi ?? 0), 0x80, 0, 0xD6, 0xBE, 0x89, 0x8E]
      let checked: UInt16 = crc == .valid ? 0x0C00 : crc == .invalid ? 0x0400 : 0
      let flags: UInt16 = 0x0011 | (rssi == nil ? 0 : 0x0002) | checked
      phdr += [UInt8(flags & 0xFF), UInt8(flags >> 8)]
      phdr.append(contentsOf: pdu)
      phdr.withUnsafeBytes { packet(micros: record.timestamp, interface: 1, $0) }
      return true
    case .unreadableLinkLayer, .other: return false
    }
    if case .pcap = container, linkType != 187, linkType != 201 { return false }
    var h4: [UInt8] = []
    if linkType == 201, container != .btsnoop {
      h4 = [0, 0, 0, hci.indicator == H4PacketType.event.rawValue ? 1 : 0]  // direction: received
    }
    h4.append(hci.indicator)
    h4.append(contentsOf: hci.bytes)
    h4.withUnsafeBytes { packet(micros: record.timestamp, interface: 0, $0) }
    return true
  }

  /// Appends an HCI command sent at `micros`.
  @discardableResult
  public mutating func append(_ command: HCICommand, at micros: Int64) -> Bool {
    command.packet.dropFirst().withUnsafeBytes {
      append(CaptureRecord(timestamp: micros, packet: .hciCommand($0)))
    }
  }

  /// Hands over the bytes written so far and keeps none, so that a long
  /// capture can go to a file as it grows.
  public mutating func takeBytes() -> [UInt8] {
    defer { bytes = [] }
    return bytes
  }

  private mutating func packet(micros: Int64, interface: UInt32, _ payload: UnsafeRawBufferPointer)
  {
    let n = UInt32(payload.count)
    switch container {
    case .btsnoop:
      bytes += BtsnoopWriter.record(h4: payload, micros: micros)
    case .pcap(let be, let ns):
      let frac = UInt32(truncatingIfNeeded: micros % 1_000_000)
      u32(UInt32(truncatingIfNeeded: micros / 1_000_000), be)
      u32(ns ? frac &* 1000 : frac, be)
      u32(n, be)
      u32(n, be)
      bytes.append(contentsOf: payload)
    case .pcapng(let be):
      let padded = (payload.count + 3) & ~3
      let ticks = UInt64(bitPattern: micros)
      u32(6, be)
      u32(UInt32(32 + padded), be)
      u32(interface, be)
      u32(UInt32(ticks >> 32), be)
      u32(UInt32(truncatingIfNeeded: ticks), be)
      u32(n, be)
      u32(n, be)
      bytes.append(contentsOf: payload)
      bytes.append(contentsOf: repeatElement(0, count: padded - payload.count))
      u32(UInt32(32 + padded), be)
    }
  }

  private mutating func u16(_ v: UInt16, _ be: Bool) {
    let x = be ? v.bigEndian : v.littleEndian
    withUnsafeBytes(of: x) { bytes.append(contentsOf: $0) }
  }
  private mutating func u32(_ v: UInt32, _ be: Bool) {
    let x = be ? v.bigEndian : v.littleEndian
    withUnsafeBytes(of: x) { bytes.append(contentsOf: $0) }
  }
  private mutating func u64(_ v: UInt64, _ be: Bool) {
    let x = be ? v.bigEndian : v.littleEndian
    withUnsafeBytes(of: x) { bytes.append(contentsOf: $0) }
  }
}
