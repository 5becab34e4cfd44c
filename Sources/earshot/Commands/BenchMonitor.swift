import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

/// The bench's monitor stages: the whole path from capture bytes to region
/// events (decode, iBeacon, ranging, region monitor through the agent's
/// `MonitorDriver`), and the memory 10,000 tracked beacons take.
enum BenchMonitor {
  static let roomUUID = BeaconUUID(high: 0x8F2C_1A3E_5B7D_4E90, low: 0xA1C2_3D4E_5F60_7182)

  /// Regions over the synthetic busy room: one for every beacon of its
  /// UUID, one for a single beacon, one that nothing matches.
  static func defaultConfig() -> Config {
    var c = Config()
    var room = RegionConfig(name: "room", line: 1)
    room.uuid = roomUUID
    var desk = RegionConfig(name: "desk", line: 2)
    desk.uuid = roomUUID
    desk.major = 1
    desk.minor = 3
    var away = RegionConfig(name: "away", line: 3)
    away.uuid = BeaconUUID(high: 1, low: 2)
    c.regions = [room, desk, away]
    return c
  }

  /// A driver that counts the events instead of printing them.
  static func driver(_ config: Config, events: @escaping (MonitorEvent) -> Void) throws
    -> MonitorDriver
  {
    try MonitorDriver(
      config: config, emitRange: true, stateFile: nil, runHooks: false, output: events,
      log: { _ in })
  }

  /// Capture read + decode + iBeacon + ranging + region monitor, one pass
  /// over the capture a call. Each pass continues the previous one's time,
  /// so the monitor stays in its steady state (regions inside, range
  /// events every interval).
  final class Passes {
    private let bytes: [UInt8]
    private let driver: MonitorDriver
    private let start: Int64
    private var offset: Int64 = 0
    private var last: Int64 = 0
    private var started = false
    /// The monitor's events so far.
    private(set) var events = 0

    init(bytes: [UInt8], config: Config) throws {
      self.bytes = bytes
      start = BenchMonitor.replayStart(bytes) ?? 0
      driver = try BenchMonitor.driver(config) { _ in }
      driver.observe { [unowned self] _ in self.events += 1 }
    }

    /// One pass; the reports it fed.
    func pass() -> Int {
      var replay = CaptureReplay()
      var n = 0
      bytes.withUnsafeBytes { raw in
        try? replay.run(raw) { t, report in
          let at = t + offset
          if !started {
            driver.start(at: DecisionTime(micros: at), scanning: true)
            started = true
          }
          driver.report(at: DecisionTime(micros: at), report)
          last = at
          n += 1
        }
      }
      driver.advance(to: DecisionTime(micros: last))
      offset = last - start + 1_000
      return n
    }
  }

  static func stage(bytes: [UInt8], config: Config, seconds: Double) throws -> (BenchRow, Int) {
    let passes = try Passes(bytes: bytes, config: config)
    let row = measure("decode + range + monitor", seconds: seconds) { passes.pass() }
    return (row, passes.events)
  }

  fileprivate static func replayStart(_ bytes: [UInt8]) -> Int64? {
    var first: Int64? = nil
    bytes.withUnsafeBytes { raw in
      var replay = CaptureReplay()
      try? replay.run(raw) { t, _ in if first == nil { first = t } }
    }
    return first
  }

  struct Memory {
    let baselineKB: Int
    let rssKB: Int
    let hwmKB: Int
    /// Private memory (RssAnon): VmRSS less the shared libraries' pages.
    let anonKB: Int
    let beacons: Int
  }

  /// Tracks `count` distinct beacons (one region over their UUID, each
  /// seen every second for `rounds` seconds, ranged every second) through
  /// the decode path and reads VmRSS/VmHWM. Run it before anything big is
  /// allocated, so the figure is the agent's own.
  static func memory(beacons count: Int, rounds: Int = 5) throws -> Memory {
    let baseline = ProcStatus.read()
    var c = Config()
    var room = RegionConfig(name: "room", line: 1)
    room.uuid = roomUUID
    c.regions = [room]
    var ranged = 0
    let driver = try driver(c) { e in if e.kind == .range { ranged += e.beacons.count } }
    // One event, patched in place for each beacon's major and minor.
    let beacon = TrackedBeacon(
      id: TrackedID(uuid: roomUUID, major: 0, minor: 0), measuredPower: -59)
    let data = HCIEventEncoder.iBeaconAdvertisingData(beacon)
    var event = data.withUnsafeBytes { d in
      HCIEventEncoder.legacyReport(
        AdvertisingReport(
          pdu: .advNonconnInd, address: BDAddress(raw: 0xC000_0000_0000), addressType: .random,
          rssi: -60, data: d))!
    }
    let uuidBytes = Array(data[9..<25])
    guard
      let at = (0...(event.count - 16)).first(where: { Array(event[$0..<$0 + 16]) == uuidBytes })
    else { throw CommandFailure("bench: cannot find the UUID in the encoded event") }
    let major = at + 16
    let address = 6  // after event code, length, subevent, count, event type, address type
    var decoder = AdvertisingEventDecoder()
    let step = Int64(1_000_000 / count)
    var t: Int64 = 1_767_225_600_000_000
    driver.start(at: DecisionTime(micros: t), scanning: true)
    for _ in 0..<rounds {
      for i in 0..<count {
        event[major] = UInt8(i >> 8)
        event[major + 1] = UInt8(i & 0xFF)
        event[major + 2] = UInt8(i % 7)
        event[major + 3] = 0
        event[address] = UInt8(i & 0xFF)
        event[address + 1] = UInt8(i >> 8)
        event.withUnsafeBytes { e in
          _ = decoder.decode(event: e) { report in
            driver.report(at: DecisionTime(micros: t), report)
          }
        }
        t += step
      }
    }
    driver.advance(to: DecisionTime(micros: t))
    let after = ProcStatus.read()
    guard ranged > 0 else { throw CommandFailure("bench: the monitor ranged no beacons") }
    return Memory(
      baselineKB: baseline.rssKB, rssKB: after.rssKB, hwmKB: after.hwmKB, anonKB: after.anonKB,
      beacons: count)
  }
}

/// VmRSS and VmHWM of this process, from /proc/self/status (kB).
enum ProcStatus {
  static func read() -> (rssKB: Int, hwmKB: Int, anonKB: Int) {
    guard let bytes = try? FileBytes(path: "/proc/self/status").bytes else { return (0, 0, 0) }
    var rss = 0
    var hwm = 0
    var anon = 0
    for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
      let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
      guard fields.count >= 2, let kb = Int(fields[1]) else { continue }
      if fields[0] == "VmRSS:" { rss = kb }
      if fields[0] == "VmHWM:" { hwm = kb }
      if fields[0] == "RssAnon:" { anon = kb }
    }
    return (rss, hwm, anon)
  }
}
