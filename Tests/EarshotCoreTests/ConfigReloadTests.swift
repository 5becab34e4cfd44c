import EarshotTestSupport
import XCTest

@testable import EarshotCore

/// What a SIGHUP reload changes: the plan, and the monitor keeping the
/// states of regions that did not change.
final class ConfigReloadTests: XCTestCase {
  func config(_ regions: RegionConfig...) -> Config {
    var c = Config()
    c.regions = regions
    return c
  }

  let s: Int64 = 1_000_000

  func report(_ m: inout RegionMonitor, at t: Int64, major: UInt16, minor: UInt16)
    -> [MonitorEvent]
  {
    m.report(
      at: DecisionTime(micros: t),
      beacon: TrackedBeacon(
        id: TrackedID(uuid: testUUID, major: major, minor: minor), measuredPower: -59),
      address: BDAddress("C1:02:03:04:05:06")!, rssi: -60)
  }

  func testPlanSaysWhatIsAddedRemovedChangedAndWhatNeedsARestart() {
    let old = config(
      region("desk", major: 1, minor: 10, exitAfter: .seconds(30)), region("lab", major: 2),
      region("hall", major: 3))
    var new = config(
      region("porch", major: 9), region("desk", major: 1, minor: 10, exitAfter: .seconds(45)),
      region("hall", major: 4))
    new.regions[1].line = 40  // moved in the file: not a change by itself
    new.findPhone.timeout = 7
    new.monitor.autoFloor = 12
    new.audio.device = "hw:1,0"
    new.findPhone.sound = "chirp"
    new.control.maxClients = 10
    let plan = ConfigReload(from: old, to: new)
    XCTAssertEqual(plan.added, ["porch", "hall"], "hall's beacon changed: a new region")
    XCTAssertEqual(plan.removed, ["lab", "hall"])
    XCTAssertEqual(plan.changed, ["desk"])
    XCTAssertEqual(plan.applied, ["monitor", "find-phone"])
    XCTAssertEqual(
      plan.needRestart, ["[audio] device", "[find-phone] sound", "[control] max_clients"])
    XCTAssertTrue(plan.summary.contains("restart the agent to apply"), plan.summary)

    XCTAssertTrue(ConfigReload(from: old, to: old).isEmpty)
    XCTAssertEqual(ConfigReload(from: old, to: old).unchanged, ["desk", "lab", "hall"])
  }

  func testReconfigureKeepsUnchangedStatesAndStartsNewRegionsUnknown() {
    var m = RegionMonitor(
      config: config(
        region("desk", major: 1, minor: 10, exitAfter: .seconds(30)),
        region("lab", major: 2, exitAfter: .seconds(30))), emitRange: false)
    _ = m.start(at: DecisionTime(micros: 0), scanning: true)
    _ = report(&m, at: 1 * s, major: 1, minor: 10)
    XCTAssertEqual(m.state(of: "desk"), .inside)
    _ = report(&m, at: 35 * s, major: 1, minor: 10)
    _ = m.advance(to: DecisionTime(micros: 40 * s))
    XCTAssertEqual(m.state(of: "lab"), .outside)

    // desk gets a longer exit_after, lab goes, porch comes.
    let events = m.reconfigure(
      config(
        region("desk", major: 1, minor: 10, exitAfter: .seconds(60)),
        region("porch", major: 9, exitAfter: .seconds(20))), at: DecisionTime(micros: 41 * s))
    XCTAssertEqual(
      events,
      [MonitorEvent(capture: 41 * s, kind: .state, region: "porch", state: .unknown, beacons: [])],
      "only the new region is announced")
    XCTAssertEqual(m.state(of: "desk"), .inside, "state kept")
    XCTAssertNil(m.state(of: "lab"))
    XCTAssertEqual(m.exitTimeout(region: "desk"), 60)

    // desk was last seen at 35 s: with exit_after 60 it exits at 95 s, not 65 s.
    XCTAssertEqual(m.advance(to: DecisionTime(micros: 94 * s)).filter { $0.region == "desk" }, [])
    let exit = m.advance(to: DecisionTime(micros: 95 * s)).filter { $0.region == "desk" }
    XCTAssertEqual(exit.map(\.kind), [.exit])
    // porch counts its exit_after from the reload, not from the scan's start.
    XCTAssertEqual(m.state(of: "porch"), .outside)
    var n = RegionMonitor(
      config: config(region("desk", major: 1, minor: 10, exitAfter: .seconds(30))),
      emitRange: false)
    _ = n.start(at: DecisionTime(micros: 0), scanning: true)
    _ = n.reconfigure(
      config(
        region("desk", major: 1, minor: 10, exitAfter: .seconds(30)),
        region("porch", major: 9, exitAfter: .seconds(20))), at: DecisionTime(micros: 100 * s))
    XCTAssertEqual(n.advance(to: DecisionTime(micros: 119 * s)).filter { $0.region == "porch" }, [])
    XCTAssertEqual(
      n.advance(to: DecisionTime(micros: 120 * s)).filter { $0.region == "porch" }.map(\.state),
      [.outside])
  }
}

/// A gap with nobody scanning (another program's scan ended, Earshot's own
/// not yet started) is not time without the beacon: found by the VM test
/// bluetoothd_restart.sh, where it gave a false exit.
final class ScanPauseTests: XCTestCase {
  func testNoExitWhileNobodyScansAndListeningTimeAccumulatesAcrossIt() {
    var c = Config()
    c.regions = [region("desk", major: 1, minor: 10, exitAfter: .seconds(5))]
    var m = RegionMonitor(config: c, emitRange: false)
    let s: Int64 = 1_000_000
    _ = m.start(at: DecisionTime(micros: 0), scanning: true)
    _ = m.report(
      at: DecisionTime(micros: 1 * s),
      beacon: TrackedBeacon(id: TrackedID(uuid: testUUID, major: 1, minor: 10), measuredPower: -59),
      address: BDAddress("C1:02:03:04:05:06")!, rssi: -60)
    XCTAssertEqual(m.scanPaused(at: DecisionTime(micros: 2 * s)), [])
    XCTAssertNil(m.nextDeadline, "no exit timer while nobody scans")
    XCTAssertEqual(m.advance(to: DecisionTime(micros: 20 * s)), [], "no exit during the gap")
    XCTAssertEqual(m.state(of: "desk"), .inside, "and no unknown either")
    XCTAssertEqual(m.scanResumed(at: DecisionTime(micros: 20 * s)), [])
    // 1 s of silence was heard before the pause: 4 s more after it.
    XCTAssertEqual(m.advance(to: DecisionTime(micros: 24 * s - 1)), [])
    XCTAssertEqual(
      m.advance(to: DecisionTime(micros: 24 * s)).map(\.kind), [.exit],
      "exit_after of listening, across the gap")
  }
}
