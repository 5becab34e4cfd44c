import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// beacon_interval counts on the monitor's decision time, as each range
/// event was decided: a step of the wall clock between the decision and
/// the transport's turn moves nothing. The agent here runs on a TestClock
/// (monotonic decision time, wall time shown), with a real mosquitto.
final class MQTTDecisionTimeTests: XCTestCase {
  /// The test's clocks, read by the monitor's live timeline.
  final class Clocks: @unchecked Sendable {
    private let lock = NSLock()
    private var clock = TestClock()
    var reading: ClockReading { lock.withLock { clock.reading } }
    var monotonicMicros: Int64 { lock.withLock { clock.monotonicMicros } }
    func advance(_ seconds: Double) { lock.withLock { clock.advance(seconds) } }
    func step(_ seconds: Double) { lock.withLock { clock.step(seconds) } }
  }

  let beacon = TrackedID(
    uuid: BeaconUUID("8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182")!, major: 1, minor: 10)

  /// A beacon heard every second for 12 s (its distance moving, so that
  /// each state is new; its proximity not), ranged every second: with
  /// beacon_interval = 10 its state goes out at the first range and again
  /// 10 s (decision time) later. The wall clock steps 9 s forward between
  /// each of the last two decisions and the transport's turn (as NTP may
  /// at any moment): a rate limit read back from the shown time through a
  /// fresh clock reading would put both 9 s earlier and publish once.
  func testBeaconIntervalCountsOnTheEventsDecisionTime() throws {
    let broker = try Broker()
    let dir = try makeTempDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let audio = RecordingAudio(volume: VolumeSetting(level: 0.3, muted: false))
    let config = try Config.build(
      IniReader.parse(
        """
        [region "desk"]
        uuid = \(beacon.uuid)
        major = 1
        minor = 10
        exit_after = 600

        [mqtt]
        host = 127.0.0.1
        port = \(broker.port)
        client_id = earshot-test-\(getpid())
        base_topic = earshot/testhost
        discovery = false
        beacon_interval = 10

        """, file: "t.conf"))
    let topics = MQTTTopics(base: "earshot/testhost")
    // The agent earshot run builds from this config, its reports fed by
    // the test below on the TestClock (monotonic decision time, wall time shown).
    let clocks = Clocks()
    var ranges: [MonitorEvent] = []
    var surroundings = AgentSurroundings.test(
      directory: dir, reports: TestReports(capturesTime: false),
      audio: .given(alert: audio, volume: audio))
    surroundings.clock = { clocks.reading }
    // Runs before the agent hands the event to its transports.
    surroundings.probe = { e in
      guard e.kind == .range else { return }
      ranges.append(e)
      if e.decided.micros - ranges[0].decided.micros >= 10_000_000 { clocks.step(9) }
    }
    let agent = try Agent(config: config.inTest(dir), surroundings: surroundings)
    let loop = agent.loop
    let driver = try XCTUnwrap(agent.monitor?.driver)
    let bridge = try XCTUnwrap(agent.mqtt)
    let stream = try BrokerStream(broker, dir: dir, topics: [topics.beaconState(beacon)])
    bridge.start()
    try run(loop) { bridge.isConnected }

    driver.start(at: DecisionTime(micros: clocks.monotonicMicros), scanning: true)
    let data = HCIEventEncoder.iBeaconAdvertisingData(TrackedBeacon(id: beacon, measuredPower: -59))
    for n in 0...12 {
      data.withUnsafeBytes { d in
        driver.report(
          at: DecisionTime(micros: clocks.monotonicMicros),
          AdvertisingReport(
            pdu: .advNonconnInd, address: BDAddress("C1:02:03:04:05:06")!, addressType: .random,
            rssi: n % 2 == 0 ? -58 : -62, data: d))
      }
      clocks.advance(1)
    }
    XCTAssertGreaterThanOrEqual(ranges.count, 11, "ranged every second")
    XCTAssertEqual(Set(ranges.map { $0.beacons.first?.proximity }).count, 1, "no proximity change")
    // Shown times went 18 s forward in 2 s of decisions; decision time did not.
    let last = ranges[ranges.count - 1]
    let decided = last.decided.micros - ranges[0].decided.micros
    XCTAssertGreaterThanOrEqual(decided, 10_000_000)
    XCTAssertGreaterThanOrEqual(last.shown.micros - ranges[0].shown.micros, decided + 9_000_000)
    try run(loop, limit: 5) { stream.lines.count >= 2 }
    XCTAssertEqual(stream.lines.count, 2, "\(stream.lines)")
  }

  /// Runs the loop until `done()` holds (or `limit` seconds pass), then
  /// 0.3 s more for stray publications to arrive.
  func run(_ loop: EventLoop, limit: Double = 10, until done: @escaping () -> Bool) throws {
    let start = Clock.monotonicNanos()
    var doneAt: UInt64? = nil
    func check() {
      let now = Clock.monotonicNanos()
      if doneAt == nil, done() { doneAt = now }
      if let doneAt, now - doneAt > 300_000_000 {
        loop.stop()
      } else if Double(now - start) > limit * 1e9 {
        loop.stop()
      } else {
        loop.after(seconds: 0.02, check)
      }
    }
    loop.after(seconds: 0, check)
    try loop.run()
  }
}
