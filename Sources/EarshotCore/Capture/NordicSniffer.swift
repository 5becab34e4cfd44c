/// LINKTYPE 272 (LINKTYPE_NORDIC_BLE): what the nRF Sniffer for Bluetooth
/// LE writes. Each record is a header the sniffer's firmware sent over its
/// UART, then the LE link-layer packet from the access address to the CRC.
///
/// The header comes in the layouts the sniffer has used over the years
/// (Wireshark's packet-nordic_ble.c describes them all):
///
/// | version | bytes before the event header | says the record's length by |
/// |---|---|---|
/// | 0 (sniffer 0.9.x) | BE EF, ID, counter (2), 2 unused, payload length | 8 + payload length |
/// | 1 (sniffer 1.x, 2.x) | board, header length, payload length, version, counter (2), ID | 1 + header length + payload length |
/// | 2, 3 (sniffer 3.x, 4.x) | board, payload length (2, LE), version, counter (2), ID | 7 + payload length |
///
/// Every one then has the event header, at byte 7 of the record (version 0
/// has no length byte there, its fields start at 8): its length (10), flags,
/// channel index, RSSI as a positive number (−dBm), event counter (2), and
/// a time (4); the link-layer packet starts at byte 17. Flags: bit 0 the CRC
/// was right, bits 4–6 the PHY (0 1M, 1 2M, 2 Coded).
enum NordicSniffer {
  /// Where the link-layer packet starts in every layout.
  static let packetStart = 17
  /// The event header's length byte, from version 1 on.
  static let eventHeaderLength: UInt8 = 10

  struct Layout: Sendable {
    let name: String
    /// Where the packet ID is.
    let idAt: Int
    /// The record's length as its header says.
    let length: @Sendable (UnsafeRawBufferPointer) -> Int
    /// Whether the event header starts with its own length byte.
    let eventLengthByte: Bool
    /// The packet IDs that carry a link-layer packet.
    let packetIDs: Set<UInt8>
  }

  // 0x06 EVENT_PACKET (every packet, before version 3; data channel from
  // version 3 on), 0x02 EVENT_PACKET_ADVERTISING (version 3).
  static let legacy = Layout(
    name: "version 0", idAt: 2, length: { 8 + Int($0[7]) }, eventLengthByte: false,
    packetIDs: [0x06])
  static let layouts: [UInt8: Layout] = [
    1: Layout(
      name: "version 1", idAt: 6, length: { 1 + Int($0[1]) + Int($0[2]) },
      eventLengthByte: true, packetIDs: [0x06]),
    2: Layout(
      name: "version 2", idAt: 6, length: { 7 + (Int($0[1]) | Int($0[2]) << 8) },
      eventLengthByte: true, packetIDs: [0x06]),
    3: Layout(
      name: "version 3", idAt: 6, length: { 7 + (Int($0[1]) | Int($0[2]) << 8) },
      eventLengthByte: true, packetIDs: [0x02, 0x06]),
  ]

  static func packet(_ record: UnsafeRawBufferPointer) -> CapturePacket {
    func unreadable(_ why: String) -> CapturePacket {
      .unreadableLinkLayer(record, reason: "an nRF Sniffer record " + why)
    }
    guard record.count > packetStart else {
      return unreadable(
        "of \(record.count) bytes, no longer than its \(packetStart)-byte header")
    }
    let layout: Layout
    if record[0] == 0xBE && record[1] == 0xEF {
      layout = legacy
    } else {
      guard let known = layouts[record[3]] else {
        return unreadable("with header version \(record[3]) (Earshot reads versions 0 to 3)")
      }
      layout = known
    }
    let said = layout.length(record)
    guard said == record.count else {
      return unreadable(
        "(header \(layout.name)) whose header says \(said) bytes in a record of \(record.count)")
    }
    guard layout.packetIDs.contains(record[layout.idAt]) else { return .other }
    if layout.eventLengthByte && record[7] != eventHeaderLength {
      return unreadable(
        "(header \(layout.name)) with an event header of \(record[7]) bytes (the sniffer "
          + "writes \(eventHeaderLength))")
    }
    let flags = record[8]
    let phy = flags >> 4 & 0x7
    guard phy < 2 else {
      return unreadable(
        phy == 2
          ? "of an LE Coded PHY packet (its coding indicator is not read)"
          : "with reserved PHY \(phy)")
    }
    let channel = record[9]
    // The sniffer writes −RSSI; beyond −128 dBm it is no RSSI at all.
    let rssi = record[10] <= 128 ? Int8(truncatingIfNeeded: -Int(record[10])) : nil
    return .linkLayer(
      UnsafeRawBufferPointer(rebasing: record[packetStart...]), rssi: rssi,
      channel: channel <= 39 ? channel : nil, crc: flags & 0x01 != 0 ? .valid : .invalid)
  }
}
