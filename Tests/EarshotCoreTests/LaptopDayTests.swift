import EarshotTestSupport
import XCTest

@testable import EarshotCore

/// A laptop's day in the pure monitor, wired as the live agent wires it
/// (`AgentMonitor`): reports carry the kernel's wall-clock stamp and are
/// mapped onto the monotonic clock as they are read, timers fire on the
/// monotonic clock, a sleep noticed on resume is `resumed(at:)`, and events
/// leave stamped with the wall clock. The clocks are a `TestClock`.
final class LaptopDayTests: XCTestCase {
  let phone = BDAddress("00:1A:7D:DA:71:13")!

  /// The live wiring around one monitor.
  struct Live {
    var clock = TestClock()
    var watch: ClockWatch
    var monitor: RegionMonitor
    /// What was decided, stamped as shown (wall clock), with the monotonic
    /// second it was decided at (since the start).
    var events: [(monotonic: Double, shown: Int64, event: MonitorEvent)] = []
    var changes: [ClockWatch.Change] = []
    let start: Int64

    init(_ config: Config, snapshot: MonitorSnapshot? = nil, clock: TestClock = TestClock()) {
      self.clock = clock
      watch = ClockWatch(clock.reading)
      monitor = RegionMonitor(config: config, emitRange: false, snapshot: snapshot)
      start = clock.monotonicMicros
      let r = clock.reading
      take(
        monitor.start(
          at: DecisionTime(micros: clock.monotonicMicros), scanning: true,
          savedTime: { LiveTime.decision(shown: $0, at: r) }))
    }

    var seconds: Double { Double(clock.monotonicMicros - start) / 1e6 }

    mutating func take(_ decided: [MonitorEvent]) {
      let r = clock.reading
      for e in decided { events.append((seconds, LiveTime.shown(e.decided, at: r).micros, e)) }
    }

    /// The loop wakes (a report, a timer, the clock-change timerfd): the
    /// clocks are compared first.
    mutating func wake() -> ClockReading {
      let r = clock.reading
      for c in watch.observe(r) {
        changes.append(c)
        if case .slept = c {
          take(monitor.resumed(at: DecisionTime(micros: clock.monotonicMicros)))
        }
      }
      return r
    }

    mutating func beacon() {
      let stamp = clock.wallMicros  // HCI_TIME_STAMP: the wall clock at arrival
      let r = wake()
      take(
        monitor.report(
          at: LiveTime.decision(stamp: WallTime(micros: stamp), at: r),
          beacon: TrackedBeacon(
            id: TrackedID(uuid: testUUID, major: 1, minor: 1), measuredPower: -59),
          address: BDAddress("C1:02:03:04:05:06")!, rssi: -60))
    }

    mutating func device(_ address: BDAddress) {
      let stamp = clock.wallMicros
      let r = wake()
      take(
        monitor.report(
          at: LiveTime.decision(stamp: WallTime(micros: stamp), at: r), address: address,
          type: .public,
          rssi: -60, txPower: nil))
    }

    /// `seconds` of awake time in 0.1 s ticks, `hear` called once a second,
    /// the monitor's timer firing when its monotonic deadline comes.
    mutating func run(_ seconds: Double, hearing hear: ((inout Live) -> Void)? = nil) {
      let ticks = Int((seconds * 10).rounded())
      for n in 0..<ticks {
        clock.advance(0.1)
        if let d = monitor.deadline(), d.micros <= clock.monotonicMicros {
          _ = wake()
          take(monitor.advance(to: DecisionTime(micros: clock.monotonicMicros)))
        }
        if n % 10 == 9, let hear { hear(&self) }
      }
    }

    mutating func step(_ seconds: Double) {
      clock.step(seconds)
      _ = wake()  // the timerfd with TFD_TIMER_CANCEL_ON_SET
    }

    mutating func sleep(_ seconds: Double) {
      clock.sleep(seconds)
      _ = wake()  // the same timerfd, cancelled at the resume
    }

    var transitions: [MonitorEvent.Kind] {
      events.map(\.event.kind).filter { $0 == .enter || $0 == .exit }
    }
    var kinds: [String] { events.map { "\($0.event.kind.rawValue) \($0.event.state.rawValue)" } }
    func first(_ kind: MonitorEvent.Kind) -> (monotonic: Double, shown: Int64)? {
      events.first { $0.event.kind == kind }.map { ($0.monotonic, $0.shown) }
    }
  }

  func beaconConfig(exitAfter: Double = 8) -> Config {
    var c = Config()
    c.regions = [region("desk", major: 1, exitAfter: .seconds(exitAfter))]
    return c
  }

  func deviceConfig() -> Config {
    var c = Config()
    var r = RegionConfig(name: "phone", line: 1)
    r.devices = [phone]
    r.exitAfter = .seconds(8)
    c.regions = [r]
    return c
  }

  let beaconThere: (inout Live) -> Void = { $0.beacon() }

  // MARK: Steps of the wall clock

  func testForwardStepWithTheBeaconPresentChangesNothing() {
    var live = Live(beaconConfig())
    live.run(20, hearing: beaconThere)
    live.step(3600)
    live.run(40, hearing: beaconThere)
    XCTAssertEqual(live.kinds, ["state unknown", "state inside"])
    XCTAssertEqual(live.changes, [.stepped(3600)])
    XCTAssertEqual(live.monitor.state(of: "desk"), .inside)
  }

  func testBackwardStepWithTheBeaconPresentChangesNothing() {
    var live = Live(beaconConfig())
    live.run(20, hearing: beaconThere)
    live.step(-7200)
    live.run(40, hearing: beaconThere)
    XCTAssertEqual(live.kinds, ["state unknown", "state inside"])
    XCTAssertEqual(live.changes, [.stepped(-7200)])
  }

  /// Two hours back, then the beacon leaves: the exit comes exit_after
  /// (8 s) after its last report, not two hours late, and is shown on the
  /// wall clock as it now reads.
  func testBeaconLeavingAfterABackwardStepExitsOnTime() throws {
    var live = Live(beaconConfig())
    live.run(20, hearing: beaconThere)
    live.step(-7200)
    live.run(10, hearing: beaconThere)  // last report at 30 s
    let wallAtLastReport = live.clock.wallMicros
    live.run(30)
    XCTAssertEqual(live.transitions, [.exit])
    let exit = try XCTUnwrap(live.first(.exit))
    XCTAssertEqual(exit.monotonic, 38, accuracy: 0.15)
    XCTAssertEqual(Double(exit.shown - wallAtLastReport) / 1e6, 8, accuracy: 0.15)
  }

  func testForwardStepAsTheBeaconLeavesExitsAfterExitAfterOfRealTime() throws {
    var live = Live(beaconConfig())
    live.run(20, hearing: beaconThere)
    live.step(3600)
    live.run(30)
    let exit = try XCTUnwrap(live.first(.exit))
    XCTAssertEqual(exit.monotonic, 28, accuracy: 0.15)
    XCTAssertEqual(live.transitions, [.exit])
  }

  /// A report stamped by the kernel just before a step and read just
  /// after it is not taken for one from an hour away.
  func testAReportStampedAcrossAStepCountsAsNow() {
    var clock = TestClock()
    let stamp = clock.wallMicros
    clock.advance(0.004)
    clock.step(-3600)
    XCTAssertEqual(
      LiveTime.decision(stamp: WallTime(micros: stamp), at: clock.reading).micros,
      clock.monotonicMicros)
    var clock2 = TestClock()
    let stamp2 = clock2.wallMicros
    clock2.advance(0.004)
    XCTAssertEqual(
      LiveTime.decision(stamp: WallTime(micros: stamp2), at: clock2.reading).micros,
      clock2.monotonicMicros - 4000)
  }

  func testIdentityDeviceThroughStepsBothWays() throws {
    var live = Live(deviceConfig())
    let phone = self.phone
    let hear: (inout Live) -> Void = { $0.device(phone) }
    live.run(20, hearing: hear)
    live.step(3600)
    live.run(20, hearing: hear)
    live.step(-7200)
    live.run(10, hearing: hear)  // last report at 50 s
    live.run(20)
    XCTAssertEqual(live.kinds, ["state unknown", "state inside", "exit outside"])
    XCTAssertEqual(try XCTUnwrap(live.first(.exit)).monotonic, 58, accuracy: 0.15)
  }

  // MARK: Sleep

  /// An hour asleep with the beacon there all along: the regions are
  /// unknown at the resume and inside again at the first report, with no
  /// exit or enter (what was told stays true).
  func testSleepWithTheBeaconPresentGivesStatesNotTransitions() {
    var live = Live(beaconConfig())
    live.run(20, hearing: beaconThere)
    live.sleep(3600)
    live.run(20, hearing: beaconThere)
    XCTAssertEqual(
      live.kinds, ["state unknown", "state inside", "state unknown", "state inside"])
    XCTAssertEqual(live.changes.count, 1)
    guard case .slept(let s) = live.changes.first else { return XCTFail("\(live.changes)") }
    XCTAssertEqual(s, 3600, accuracy: 0.001)
  }

  /// The laptop carried to work: the beacon is not there after the resume.
  /// One exit, exit_after of scanning after the resume (not at once, as the
  /// wall clock would have it, and not exit_after after the last report).
  func testSleepWhileTheBeaconLeavesExitsExitAfterTheResume() throws {
    var live = Live(beaconConfig())
    live.run(20, hearing: beaconThere)
    live.run(5)  // 5 s of the 8 pass before the lid closes
    live.sleep(1800)
    let resumedAt = live.seconds
    live.run(20)
    XCTAssertEqual(live.transitions, [.exit])
    XCTAssertEqual(try XCTUnwrap(live.first(.exit)).monotonic - resumedAt, 8, accuracy: 0.15)
  }

  /// The kernel's suspend turns Earshot's scan off before the sleep (a
  /// pause, as when another program's scan ends) and the scanner takes it
  /// back 5 s of monotonic time later, after the resume. With the beacon
  /// gone the exit comes exit_after of scanning after that retake: the
  /// seconds after the resume with no scan do not count (the test bed's
  /// real sleep saw the exit at the resume + 8 s, with 3 s of them scanned).
  func testAScanPausedBeforeASleepCountsFromItsRetake() throws {
    var live = Live(beaconConfig())
    live.run(20, hearing: beaconThere)
    live.run(1)
    live.take(live.monitor.scanPaused(at: DecisionTime(micros: live.clock.monotonicMicros)))
    live.sleep(600)
    let resumedAt = live.seconds
    live.run(5)
    XCTAssertEqual(live.transitions, [])
    live.take(live.monitor.scanResumed(at: DecisionTime(micros: live.clock.monotonicMicros)))
    live.run(20)
    XCTAssertEqual(live.transitions, [.exit])
    XCTAssertEqual(try XCTUnwrap(live.first(.exit)).monotonic - resumedAt, 13, accuracy: 0.15)
  }

  /// logind's PrepareForSleep(true) pauses decisions (AgentMonitor's
  /// `sleeping`): the seconds the machine takes to suspend after it (up to
  /// logind's 5 s inhibitor delay) do not count toward an exit that was
  /// nearly due, and the wake (`woke`) makes the regions heard afresh.
  func testLogindsWordBeforeASleepHoldsAnExitThatWasNearlyDue() {
    var live = Live(beaconConfig())
    live.run(20, hearing: beaconThere)
    live.run(7)  // the exit is a second away
    live.take(live.monitor.scanPaused(at: DecisionTime(micros: live.clock.monotonicMicros)))
    live.run(4)  // suspending: the kernel freezes tasks, the adapter suspends
    live.clock.sleep(600)
    _ = live.wake()  // the clock watch's view of it is the same sleep
    live.take(live.monitor.scanResumed(at: DecisionTime(micros: live.clock.monotonicMicros)))
    live.take(live.monitor.resumed(at: DecisionTime(micros: live.clock.monotonicMicros)))
    live.run(5, hearing: beaconThere)
    XCTAssertEqual(live.transitions, [])
    XCTAssertEqual(
      live.kinds, ["state unknown", "state inside", "state unknown", "state inside"])
  }

  func testShortSleepUnderTheThresholdIsNotASleep() {
    var live = Live(beaconConfig())
    live.run(20, hearing: beaconThere)
    live.sleep(0.5)
    live.run(20, hearing: beaconThere)
    XCTAssertEqual(live.kinds, ["state unknown", "state inside"])
    XCTAssertEqual(live.changes, [])
  }

  func testIdentityDeviceSleepingAndLeaving() throws {
    var live = Live(deviceConfig())
    let phone = self.phone
    live.run(20) { $0.device(phone) }
    live.sleep(600)
    live.run(10) { $0.device(phone) }  // still there: no transition
    live.sleep(600)
    let resumedAt = live.seconds
    live.run(20)
    XCTAssertEqual(
      live.kinds,
      [
        "state unknown", "state inside", "state unknown", "state inside", "state unknown",
        "exit outside",
      ])
    XCTAssertEqual(try XCTUnwrap(live.first(.exit)).monotonic - resumedAt, 8, accuracy: 0.15)
  }

  /// A tag's lost link counts its exit_after on the monotonic clock: a
  /// step at the loss changes nothing.
  func testTagLossThroughAStepExitsOnTime() throws {
    var c = Config()
    var r = RegionConfig(name: "keys", line: 1)
    r.tags = ["keys"]
    r.exitAfter = .seconds(8)
    c.regions = [r]
    var live = Live(c)
    live.take(
      live.monitor.tagConnected("keys", at: DecisionTime(micros: live.clock.monotonicMicros)))
    live.run(10)
    live.take(live.monitor.tagAbsent("keys", at: DecisionTime(micros: live.clock.monotonicMicros)))
    live.step(-3600)
    live.run(20)
    XCTAssertEqual(try XCTUnwrap(live.first(.exit)).monotonic, 18, accuracy: 0.15)
  }

  // MARK: Rooms' sightings

  /// The agent's sightings through a -2 h step, wired as `RoomsAgent` is:
  /// the publisher's interval on decision time, each sighting stamped with
  /// the wall clock. One a second all along (on the wall clock the step
  /// would silence them for two hours), dated as the clock reads.
  func testSightingsKeepTheirPaceThroughABackwardStep() throws {
    var config = Config()
    try config.rooms.set("track", "\(testUUID):1")
    try config.rooms.set("interval", "1")
    var publisher = SightingPublisher(room: "kitchen", config: config)
    var clock = TestClock()
    var sent: [(decided: Int64, shown: Int64)] = []
    for k in 0..<100 {  // 10 Hz for 10 s, the clock set back at 5 s
      if k == 50 { clock.step(-7200) }
      let r = clock.reading
      let decided = LiveTime.decision(stamp: WallTime(micros: clock.wallMicros), at: r)
      if let s = publisher.report(
        at: decided,
        beacon: TrackedBeacon(
          id: TrackedID(uuid: testUUID, major: 1, minor: 1), measuredPower: -59),
        address: BDAddress(raw: 0x0102_0304_0506), rssi: -59)
      {
        sent.append((s.t.micros, LiveTime.shown(s.t, at: r).micros))
      }
      clock.advance(0.1)
    }
    XCTAssertEqual(sent.count, 10)
    XCTAssertEqual(Double(sent[5].shown - sent[4].shown) / 1e6, 1 - 7200, accuracy: 0.01)
    XCTAssertEqual(Double(sent[9].decided - sent[0].decided) / 1e6, 9, accuracy: 0.01)
  }

  // MARK: The state file

  /// The state file keeps the wall time of the last sighting; a run on
  /// another boot (monotonic from near zero) reads it and still exits
  /// exit_after after it starts, rather than deciding on another clock.
  func testAStateFileFromAnotherBootNeitherDelaysNorHastensTheExit() throws {
    var first = Live(beaconConfig())
    first.run(20, hearing: beaconThere)
    let saved = first.monitor.snapshot { LiveTime.shown($0, at: first.clock.reading) }
    let seen = try XCTUnwrap(saved.regions.first?.lastSeen?.micros)
    XCTAssertEqual(Double(first.clock.wallMicros - seen) / 1e6, 0, accuracy: 0.15)
    // Booted again ten minutes later: monotonic time starts afresh.
    let reboot = TestClock(wallMicros: first.clock.wallMicros + 600_000_000)
    var second = Live(beaconConfig(), snapshot: saved, clock: reboot)
    second.run(20)
    XCTAssertEqual(second.transitions, [.exit])
    XCTAssertEqual(try XCTUnwrap(second.first(.exit)).monotonic, 8, accuracy: 0.15)
    // Not heard since: the saved time is written back as it was.
    let r = second.clock.reading
    let back = try XCTUnwrap(
      second.monitor.snapshot { LiveTime.shown($0, at: r) }.regions.first?
        .lastSeen?.micros)
    XCTAssertEqual(back, seen)
  }

  /// A state file written before the wall clock was set back an hour: its
  /// sighting, an hour "ahead", is taken as now, not as a reason to hold
  /// the region inside for an hour.
  func testAStateFileFromAheadOfTheClockCountsAsNow() throws {
    var first = Live(beaconConfig())
    first.run(20, hearing: beaconThere)
    let saved = first.monitor.snapshot { LiveTime.shown($0, at: first.clock.reading) }
    var clock = first.clock
    clock.step(-3600)  // set back before the restart
    var second = Live(beaconConfig(), snapshot: saved, clock: clock)
    second.run(20)
    XCTAssertEqual(second.transitions, [.exit])
    XCTAssertEqual(try XCTUnwrap(second.first(.exit)).monotonic, 8, accuracy: 0.15)
  }

  // MARK: The clock watch itself

  func testClockWatchTellsSleepFromStepAndIgnoresSlewing() {
    var clock = TestClock()
    var watch = ClockWatch(clock.reading)
    clock.advance(10)
    XCTAssertEqual(watch.observe(clock.reading), [])
    clock.step(0.3)  // NTP slewing and small corrections
    XCTAssertEqual(watch.observe(clock.reading), [])
    clock.sleep(120)
    XCTAssertEqual(watch.observe(clock.reading), [.slept(120)])
    clock.sleep(30)
    clock.step(-3600)  // a resume that also read an RTC kept in local time
    XCTAssertEqual(watch.observe(clock.reading), [.slept(30), .stepped(-3600)])
    XCTAssertEqual(
      ClockWatch.Change.stepped(3600).description, "clock stepped +3600.0 s; presence unaffected")
  }

  // MARK: The proximity log's retention

  func testRetentionCountsRealTimeNotAClockSetForward() {
    var clock = TestClock()
    let retention = RetentionClock(start: clock.reading)
    let start = clock.wallMicros
    clock.advance(600)
    XCTAssertEqual(retention.now(at: clock.reading), start + 600_000_000)
    clock.step(365 * 86_400)  // set a year ahead by mistake
    XCTAssertEqual(retention.now(at: clock.reading), start + 600_000_000, "the step is not age")
    clock.sleep(2 * 86_400)  // rows age while the laptop sleeps
    XCTAssertEqual(retention.now(at: clock.reading), start + 600_000_000 + 2 * 86_400_000_000)
    clock.step(-2 * 365 * 86_400)  // set back: the wall clock is the earlier
    XCTAssertEqual(retention.now(at: clock.reading), clock.wallMicros)
  }
}
