import EarshotTestSupport
import XCTest

@testable import EarshotCore

/// Live, the shell asks for the monitor's deadline after every packet, and
/// the monitor keeps the floor of its timers exact through reports where
/// it can, instead of a pass over every region. Checked here against that
/// pass: after every event of a scenario (iBeacons and a phone on rotating
/// private addresses, coming and going; regions by UUID, by beacon, by key,
/// fixed and `auto` exits, ranging on, the adapter going down), the
/// deadline equals a copy's whose floor was forgotten, and the events are
/// those of a run that never asks.
final class DeadlineFloorTests: XCTestCase {
  let key = try! IdentityResolvingKey(hex: "ec0234a357c8ad05341010a60a397d9b")

  func scenario() -> Scenario {
    var s = Scenario()
    s.duration = 900
    s.seed = 11
    s.beacons = [
      beacon("a", major: 1, minor: 1, interval: 1, loss: 0.2, present: [0..<300, 500..<800]),
      beacon("b", major: 1, minor: 2, interval: 0.3, loss: 0.5, present: [100..<700]),
      beacon("c", major: 2, minor: 1, interval: 0.1, loss: 0.1, present: [200..<260, 400..<880]),
    ]
    var phone = ScenarioDevice(name: "phone")
    phone.irk = key
    phone.identity = BDAddress("00:1A:7D:DA:71:13")!
    phone.rotate = 60
    phone.interval = 0.5
    phone.loss = 0.3
    phone.present = [50..<400, 600..<850]
    s.devices = [phone]
    return s
  }

  func config() -> Config {
    var byKey = RegionConfig(name: "phone", line: 2)
    byKey.irks = [key]
    byKey.exitAfter = .seconds(10)
    var byKeyAuto = RegionConfig(name: "phone-auto", line: 3)
    byKeyAuto.irks = [key]
    var c = Config()
    c.regions = [
      region("all"), region("b", major: 1, minor: 2, exitAfter: .seconds(8)), byKey,
      region("c", major: 2), byKeyAuto, region("none", major: 9),
    ]
    return c
  }

  /// Ranging on, the usual floor is the regions' range tick; off, an exit.
  func testDeadlineAfterEveryEventEqualsAPassOverTheRegions() {
    check(emitRange: true)
    check(emitRange: false)
  }

  func check(emitRange: Bool, file: StaticString = #filePath, line: UInt = #line) {
    let s = scenario()
    let c = config()
    let cipher = CountingMixCipher()
    var events = s.events(cipher: cipher)
    // The adapter away for a while: every timer moves.
    events.append(.adapterDown(t: s.time(330)))
    events.append(.adapterUp(t: s.time(345)))
    events.sort { $0.t < $1.t }
    var m = RegionMonitor(config: c, emitRange: emitRange, cipher: cipher)
    var out = m.start(at: DecisionTime(micros: s.micros(0)), scanning: true)
    var asked = 0
    var differing = 0
    for e in events {
      switch e {
      case .report(let t, let b, let a, let rssi):
        out += m.report(at: DecisionTime(capture: t), beacon: b, address: a, rssi: rssi)
      case .deviceReport(let t, let a, let type, let rssi, let tx):
        out += m.report(
          at: DecisionTime(capture: t), address: a, type: type, rssi: rssi, txPower: tx)
      case .telemetry(let t, _, _, _): out += m.advance(to: DecisionTime(capture: t))
      case .adapterDown(let t): out += m.adapterDown(at: DecisionTime(capture: t))
      case .adapterUp(let t): out += m.adapterUp(at: DecisionTime(capture: t))
      }
      let kept = m.deadline()
      // Setting it again forgets the floor: the copy makes a whole pass.
      var pass = m
      pass.nameRequests = m.nameRequests
      let full = pass.deadline()
      asked += 1
      if kept != full {
        differing += 1
        if differing <= 5 {
          XCTFail(
            "ranging \(emitRange), after \(e): deadline \(String(describing: kept)), "
              + "a pass gives \(String(describing: full))", file: file, line: line)
        }
      }
    }
    out += m.advance(to: DecisionTime(micros: s.micros(s.duration)))
    XCTAssertEqual(differing, 0, "ranging \(emitRange)", file: file, line: line)
    XCTAssertGreaterThan(asked, 5_000, file: file, line: line)
    // Asking changes no decision.
    let (_, unasked) = runScenario(s, c, emitRange: emitRange, events: events, cipher: cipher)
    XCTAssertEqual(out, unasked, "ranging \(emitRange)", file: file, line: line)
    for name in ["all", "b", "phone", "c", "phone-auto"] {
      XCTAssertGreaterThanOrEqual(
        out.filter { $0.region == name && $0.kind == .exit }.count, 1, "\(name) exits",
        file: file, line: line)
    }
  }
}
