import EarshotCore
import EarshotLinux

/// A conference hall: 5,000 reports/s from 1,000 devices present at once,
/// each rotating its resolvable private address every minute (10,000
/// distinct addresses in 10 minutes), 95 % phones' own advertisements
/// (Apple continuity, Google Fast Pair, Microsoft CDP: not iBeacons) and
/// 5 % from 50 iBeacons (30 in the bench's room, 20 of another UUID).
/// Generated as it goes, one HCI event per report patched in place, and
/// fed as the live agent feeds its monitor (decoder, `MonitorDriver`, then
/// the next deadline it arms a timer for) in capture time, as fast as it
/// goes. CPU per report and VmRSS are taken per minute of capture time:
/// both must stay flat, since nothing may grow with addresses seen once.
enum BenchDenseRoom {
  static let reportsPerSecond = 5_000
  static let devices = 1_000
  static let beacons = 50
  static let rotateMicros: Int64 = 60_000_000

  struct Minute {
    let minute: Int
    let nanosPerReport: Double
    let rssKB: Int
  }

  struct Result {
    let minutes: [Minute]
    let reports: Int
    let addresses: Int
    let tracked: Int
    let events: Int
  }

  /// The device's advertising event, with the address and RSSI to patch.
  struct Template {
    var event: [UInt8]
    let address: Int
    let rssi: Int
  }

  static func template(pdu: AdvertisingPDU, data: [UInt8]) -> Template {
    let event = data.withUnsafeBytes { d in
      HCIEventEncoder.legacyReport(
        AdvertisingReport(
          pdu: pdu, address: BDAddress(raw: 0), addressType: .random, rssi: -60, data: d))!
    }
    // Event code, length, subevent, report count, event type, address type.
    return Template(event: event, address: 6, rssi: event.count - 1)
  }

  static func templates() -> [Template] {
    var out: [Template] = []
    for k in 0..<beacons {
      let uuid = k < 30 ? BenchMonitor.roomUUID : BeaconUUID(high: 0x1234, low: UInt64(k))
      let b = TrackedBeacon(
        id: TrackedID(uuid: uuid, major: 1, minor: UInt16(k)), measuredPower: -59)
      out.append(
        template(pdu: .advNonconnInd, data: HCIEventEncoder.iBeaconAdvertisingData(b)))
    }
    let phones: [[UInt8]] = [
      // Apple continuity (nearby info): manufacturer data, not an iBeacon.
      [0x02, 0x01, 0x1A, 0x0A, 0xFF, 0x4C, 0x00, 0x10, 0x05, 0x0B, 0x1C, 0x7A, 0x3E, 0x21],
      // Google Fast Pair service data.
      [0x02, 0x01, 0x06, 0x03, 0x03, 0x2C, 0xFE, 0x06, 0x16, 0x2C, 0xFE, 0x00, 0xB7, 0x27],
      // Microsoft Connected Devices Platform beacon.
      [0x1E, 0xFF, 0x06, 0x00, 0x01, 0x09, 0x20, 0x02] + Array(repeating: 0x5A, count: 23),
    ]
    for p in phones { out.append(template(pdu: .advInd, data: p)) }
    return out
  }

  static func run(config: Config, minutes: Int) throws -> Result {
    var events = 0
    let driver = try BenchMonitor.driver(config) { _ in events += 1 }
    var decoder = AdvertisingEventDecoder()
    var templates = templates()
    let phoneTemplates = templates.count - beacons
    // Each device's rotation phase within the minute.
    let phase = (0..<devices).map { Int64($0) * rotateMicros / Int64(devices) }
    // Addresses used so far: each device's rotations (a fixed-size count,
    // so that the bench itself grows nothing).
    var epochs = [Int](repeating: -1, count: devices)
    var addresses = 0
    let t0: Int64 = 1_767_225_600_000_000
    let step = Int64(1_000_000 / reportsPerSecond)
    var rng: UInt64 = 7
    var out: [Minute] = []
    var sink = 0
    driver.start(at: DecisionTime(micros: t0), scanning: true)
    var i = 0
    for minute in 1...minutes {
      let start = Clock.monotonicNanos()
      for _ in 0..<(reportsPerSecond * 60) {
        let t = Int64(i) * step
        rng = rng &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let r = rng >> 33
        // The first 50 devices are the beacons; they send 5 % of reports.
        let isBeacon = r % 20 == 0
        let device =
          isBeacon
          ? Int(r / 20 % UInt64(beacons)) : beacons + Int(r / 20 % UInt64(devices - beacons))
        let epoch = UInt64(max(0, t - phase[device]) / rotateMicros)
        // A resolvable private address: top two bits 01, the rest a hash of
        // the device and its rotation.
        var h = (UInt64(device) << 8 | epoch) &* 0x9E37_79B9_7F4A_7C15
        h ^= h >> 29
        let address = 0x4000_0000_0000 | (h & 0x3FFF_FFFF_FFFF)
        if epochs[device] != Int(epoch) {
          epochs[device] = Int(epoch)
          addresses += 1
        }
        let k = isBeacon ? device : beacons + device % phoneTemplates
        let a = templates[k].address
        let rssiAt = templates[k].rssi
        let at = t0 + t
        templates[k].event.withUnsafeMutableBytes { e in
          e.storeBytes(
            of: UInt32(truncatingIfNeeded: address).littleEndian, toByteOffset: a, as: UInt32.self)
          e.storeBytes(
            of: UInt16(truncatingIfNeeded: address >> 32).littleEndian, toByteOffset: a + 4,
            as: UInt16.self)
          e[rssiAt] = UInt8(bitPattern: Int8(-45 - Int(r % 50)))
          _ = decoder.decode(event: UnsafeRawBufferPointer(e)) { report in
            driver.report(at: DecisionTime(micros: at), report)
          }
        }
        // What the live agent asks after every report, to arm its timer.
        sink &+= Int(truncatingIfNeeded: driver.nextDeadline?.micros ?? 0)
        i += 1
      }
      let nanos = Clock.monotonicNanos() - start
      out.append(
        Minute(
          minute: minute, nanosPerReport: Double(nanos) / Double(reportsPerSecond * 60),
          rssKB: ProcStatus.read().rssKB))
    }
    if sink == 1 { Console.line("") }  // keeps the deadline reads
    return Result(
      minutes: out, reports: i, addresses: addresses, tracked: driver.monitor.trackedBeacons,
      events: events)
  }
}
