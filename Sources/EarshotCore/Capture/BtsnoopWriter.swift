/// Encodes btsnoop version 1, datalink 1002 (H4), the format `btmon -r`
/// and Wireshark read. Pure: it returns bytes; the shell writes them.
public enum BtsnoopWriter {
  public static var header: [UInt8] {
    var w = ByteWriter(capacity: 16)
    w.append(Array("btsnoop\0".utf8))
    w.u32be(1)
    w.u32be(1002)
    return w.bytes
  }

  /// One record for an H4 packet (indicator first) at `micros` since the
  /// Unix epoch. Events and ACL from the controller are "received".
  public static func record(h4 packet: UnsafeRawBufferPointer, micros: Int64) -> [UInt8] {
    var w = ByteWriter(capacity: 24 + packet.count)
    let indicator = packet.first ?? 0
    let event = H4PacketType.event.rawValue
    let received: UInt32 = indicator == event ? 1 : 0
    let commandOrEvent: UInt32 =
      (indicator == H4PacketType.command.rawValue || indicator == event) ? 2 : 0
    w.u32be(UInt32(packet.count))
    w.u32be(UInt32(packet.count))
    w.u32be(received | commandOrEvent)
    w.u32be(0)
    w.u64be(UInt64(bitPattern: micros &+ CaptureReader.btsnoopEpochOffset))
    w.append(packet)
    return w.bytes
  }

  /// A record for a bare HCI event.
  public static func record(event: UnsafeRawBufferPointer, micros: Int64) -> [UInt8] {
    var packet = [H4PacketType.event.rawValue]
    packet.append(contentsOf: event)
    return packet.withUnsafeBytes { record(h4: $0, micros: micros) }
  }
}
