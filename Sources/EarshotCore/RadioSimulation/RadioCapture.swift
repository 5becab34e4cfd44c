/// The closed loop as two captures, each readable by `earshot scan` and
/// Wireshark (`scan` by `btmon -r` too):
/// - `air`: a sniffer's pcap (LINKTYPE 256, each PDU with its channel in
///   the pseudo-header) of every PDU that reached the air unlost, what a
///   receiver listening on all three channels all the time would get;
/// - `scan`: a btsnoop of what the host saw: the schedule's HCI commands
///   (scan disable, parameters, enable) and an LE Advertising Report for
///   every PDU the controller heard.
/// Filtering `air` by the windows that `scan`'s commands set (one channel
/// per scan interval, from 37 at each enable) gives `scan`'s reports.
/// Pure: it returns bytes; the shell writes them.
public struct RadioCapture {
  /// The simulation's start on the captures' clock: 2026-01-01T00:00:00Z.
  public static let start: Int64 = 1_767_225_600_000_000

  private var air = CaptureWriter(
    container: .pcap(bigEndian: false, nanoseconds: false), linkType: 256)
  private var scan = CaptureWriter(container: .btsnoop)
  private let advertisers: [SimulatedAdvertiser]
  public private(set) var airPDUs = 0
  public private(set) var heardPDUs = 0

  public init(_ sim: RadioSimulation) { advertisers = sim.advertisers }

  public mutating func add(_ record: RadioRecord) {
    switch record {
    case .air(let t, let channel, let i):
      airPDUs += 1
      let (pdu, address, type, data) = advertisement(i)
      guard let bytes = LinkLayer.legacyPDU(pdu, address: address, addressType: type, data: data)
      else { return }
      bytes.withUnsafeBytes {
        _ = air.append(
          CaptureRecord(
            timestamp: Self.start + t.micros, packet: .linkLayer($0, rssi: -60, channel: channel)))
      }
    case .command(let t, let command):
      scan.append(command, at: Self.start + t.micros)
    case .heard(let t, _, let i):
      heardPDUs += 1
      let (pdu, address, type, data) = advertisement(i)
      let event = data.withUnsafeBytes {
        HCIEventEncoder.legacyReport(
          AdvertisingReport(pdu: pdu, address: address, addressType: type, rssi: -60, data: $0))
      }
      event?.withUnsafeBytes {
        _ = scan.append(CaptureRecord(timestamp: Self.start + t.micros, packet: .hciEvent($0)))
      }
    }
  }

  /// Hands over what was written since the last call (the air of a
  /// simulated day is hundreds of MB: it goes to a file as it grows).
  public mutating func takeBytes() -> (air: [UInt8], scan: [UInt8]) {
    (air.takeBytes(), scan.takeBytes())
  }

  /// What advertiser `i` sends: a beacon its iBeacon frame, not
  /// connectable, from a static random address; a phone a connectable
  /// advertisement with flags only, from its identity address.
  private func advertisement(_ i: Int) -> (AdvertisingPDU, BDAddress, AddressType, [UInt8]) {
    let a = advertisers[i]
    switch a.kind {
    case .beacon:
      return (
        .advNonconnInd, RadioSimulation.beaconAddress(i), .random,
        HCIEventEncoder.iBeaconAdvertisingData(a.frame)
      )
    case .phone:
      return (.advInd, RadioSimulation.address(i), .public, [0x02, 0x01, 0x06])
    }
  }
}
