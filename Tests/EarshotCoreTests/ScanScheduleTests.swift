import XCTest

@testable import EarshotCore

private let s: Int64 = 1_000_000

/// A decision time `micros` after the origin.
private func dt(_ micros: Int64) -> DecisionTime { DecisionTime(micros: micros) }

/// ListeningClock: listening time accumulates across pauses, at a rate
/// per duty, and never overcounts.
final class ListeningClockTests: XCTestCase {
  func testAccumulatesAcrossPausesAndSaysNothingWhileStopped() {
    var c = ListeningClock()
    c.listen(duty: 1, at: dt(0))
    c.stop(at: dt(3 * s))
    XCTAssertNil(c.time(reaching: 5, from: dt(1 * s), rate: { _ in 1 }), "no deadline in a pause")
    c.listen(duty: 1, at: dt(10 * s))
    // 2 s heard before the pause (1…3 s), 3 s more after it.
    XCTAssertEqual(c.time(reaching: 5, from: dt(1 * s), rate: { _ in 1 }), dt(13 * s))
    XCTAssertEqual(
      c.accumulated(from: dt(1 * s), to: dt(12 * s), rate: { _ in 1 }), 4, accuracy: 1e-9)
    // Reached before the pause: the time it was reached, in the past.
    XCTAssertEqual(c.time(reaching: 1.5, from: dt(1 * s), rate: { _ in 1 }), dt(2_500_000))
  }

  func testRateFollowsTheDuty() {
    var c = ListeningClock()
    c.listen(duty: 0.1, at: dt(0))
    c.listen(duty: 1, at: dt(10 * s))
    let rate: (Double) -> Double = { $0 }  // evidence proportional to duty
    XCTAssertEqual(c.accumulated(from: dt(0), to: dt(12 * s), rate: rate), 3, accuracy: 1e-9)
    XCTAssertEqual(c.time(reaching: 3, from: dt(0), rate: rate), dt(12 * s))
    XCTAssertEqual(c.dutySince, dt(10 * s))
    XCTAssertEqual(c.duty, 1)
  }

  func testBoundedMemoryNeverOvercounts() {
    var c = ListeningClock()
    var truth = 0.0
    for k in 0..<500 {
      let t = Int64(k) * 2 * s
      c.listen(duty: 1, at: dt(t))
      c.stop(at: dt(t + s))
      truth += 1
    }
    c.listen(duty: 1, at: dt(1000 * s))
    XCTAssertLessThanOrEqual(c.spans.count, ListeningClock.capacity)
    let counted = c.accumulated(from: dt(0), to: dt(1000 * s), rate: { _ in 1 })
    XCTAssertLessThan(counted, truth, "forgotten spans are not counted")
    // So a deadline from long ago comes later than the truth, never sooner.
    let d = c.time(reaching: truth + 1, from: dt(0), rate: { _ in 1 })!
    XCTAssertGreaterThanOrEqual(d, dt(1001 * s))
  }

  func testEvidenceOfSilence() {
    let e = SilenceEvidence(interval: 0.1, loss: 0.3)
    // Full duty: each missed event is a 30 % chance.
    XCTAssertEqual(e.rate(1), -log(0.3) / 0.1, accuracy: 1e-9)
    // 4 % duty hears 4 % × 70 % of events.
    XCTAssertEqual(e.rate(0.04), -log(1 - 0.028) / 0.1, accuracy: 1e-9)
    XCTAssertEqual(SilenceEvidence(interval: 1, loss: 0).loss, 0.05, "loss taken as at least 5 %")
  }
}

/// ScanScheduler's guarantees, one by one.
final class ScanSchedulerTests: XCTestCase {
  func testFullPolicyIsAlwaysContinuous() {
    var sch = ScanScheduler(settings: ScanScheduleSettings(policy: .full))
    XCTAssertNil(sch.decide(at: dt(0), power: .battery, need: { _, _ in nil }))
    XCTAssertEqual(sch.timing, .continuous)
    XCTAssertNil(sch.recheckAt)
  }

  func testSamplesByThePowerSourceWhenNothingIsDue() {
    var sch = ScanScheduler(settings: ScanScheduleSettings())
    XCTAssertEqual(
      sch.decide(at: dt(0), power: .battery, need: { _, _ in nil }), sch.settings.battery)
    XCTAssertEqual(sch.timing.duty, 0.04, accuracy: 1e-9)
    XCTAssertEqual(sch.decide(at: dt(0), power: .mains, need: { _, _ in nil }), sch.settings.mains)
    XCTAssertEqual(sch.timing.duty, 0.1, accuracy: 1e-9)
    var saving = ScanScheduler(settings: ScanScheduleSettings(policy: .saving))
    _ = saving.decide(at: dt(0), power: .mains, need: { _, _ in nil })
    XCTAssertEqual(saving.timing, saving.settings.battery, "saving: the battery timing on mains")
  }

  func testFullWithinTheLeadOfANeedAndRecheckBeforeIt() {
    var sch = ScanScheduler(settings: ScanScheduleSettings())
    // Due in 10 s: sample, look again 0.25 s before.
    _ = sch.decide(at: dt(0), power: .battery, need: { _, _ in dt(10 * s) })
    XCTAssertFalse(sch.timing.isFull)
    XCTAssertEqual(sch.recheckAt, dt(10 * s - 250_000))
    XCTAssertEqual(
      sch.decide(at: dt(10 * s - 250_000), power: .battery, need: { _, _ in dt(10 * s) }),
      .continuous)
    // The need asked is for the duty it would sample at.
    var asked: Double?
    _ = sch.decide(at: dt(0), power: .battery) { duty, _ in
      asked = duty
      return nil
    }
    XCTAssertEqual(asked ?? 0, 0.04, accuracy: 1e-9)
  }

  func testForceFullAndNoFlappingForShortSpans() {
    var sch = ScanScheduler(settings: ScanScheduleSettings())
    XCTAssertNil(sch.decide(at: dt(0), power: .battery, forceFull: true, need: { _, _ in nil }))
    XCTAssertEqual(sch.timing, .continuous)
    // Full now; a need 1.5 s away leaves a sampled span under hold (2 s).
    XCTAssertNil(sch.decide(at: dt(0), power: .battery, need: { _, _ in dt(1_500_000) }))
    XCTAssertEqual(sch.timing, .continuous)
    XCTAssertNotNil(sch.decide(at: dt(0), power: .battery, need: { _, _ in dt(3 * s) }))
    XCTAssertFalse(sch.timing.isFull)
  }
}

/// The region monitor at a sampled duty: never an exit below full duty;
/// after the raise, one only once the confirm span has passed at full.
final class MonitorDutyTests: XCTestCase {
  let id = TrackedID(uuid: testUUID, major: 1, minor: 10)
  let address = BDAddress("C1:02:03:04:05:06")!

  func learnt() -> RegionMonitor {
    var c = Config()
    c.regions = [region("desk", major: 1, minor: 10, exitAfter: .auto)]
    var m = RegionMonitor(config: c, emitRange: false)
    _ = m.start(at: DecisionTime(micros: 0), scanning: true)
    // 30 s of a 100 ms beacon heard at every event: its pace is learnt.
    for k in 0..<300 {
      _ = m.report(
        at: DecisionTime(micros: Int64(k) * 100_000),
        beacon: TrackedBeacon(id: id, measuredPower: -59), address: address,
        rssi: -60)
    }
    return m
  }

  func testUnlearntBeaconsNeedFullDutyAtOnce() {
    var c = Config()
    c.regions = [region("desk", major: 1, minor: 10, exitAfter: .auto)]
    var m = RegionMonitor(config: c, emitRange: false)
    _ = m.start(at: DecisionTime(micros: 0), scanning: true)
    XCTAssertEqual(
      m.fullDutyNeeded(at: dt(0), sampledDuty: 0.04, allowance: ExitAllowance(confirmSpans: 1))?
        .micros, 0)
    _ = m.report(
      at: DecisionTime(micros: s), beacon: TrackedBeacon(id: id, measuredPower: -59),
      address: address, rssi: -60)
    XCTAssertEqual(
      m.fullDutyNeeded(at: dt(s), sampledDuty: 0.04, allowance: ExitAllowance(confirmSpans: 1))?
        .micros, s)
  }

  /// A pace learnt from a few gaps has a wide loss bound, and sampling
  /// learns no more: full duty until 64 gaps are in.
  func testAPaceLearntFromFewGapsKeepsFullDutyUntilSettled() {
    var c = Config()
    c.regions = [region("desk", major: 1, minor: 10, exitAfter: .auto)]
    var m = RegionMonitor(config: c, emitRange: false)
    _ = m.start(at: DecisionTime(micros: 0), scanning: true)
    let allowance = ExitAllowance(confirmSpans: 1)
    var t: Int64 = 0
    for k in 0...70 {
      t = Int64(k) * 100_000
      _ = m.report(
        at: DecisionTime(micros: t), beacon: TrackedBeacon(id: id, measuredPower: -59),
        address: address, rssi: -60)
      let need = m.fullDutyNeeded(at: dt(t), sampledDuty: 0.04, allowance: allowance)?.micros
      if k == 20 {
        XCTAssertLessThan(try! XCTUnwrap(m.exitTimeout(region: "desk")), 30, "learnt from 20 gaps")
        XCTAssertEqual(need, t, "but not settled: full duty")
      }
      if k == 70 { XCTAssertGreaterThan(try! XCTUnwrap(need), t + s, "settled: sampled") }
    }
  }

  func testNoExitWhileSampledAndTheConfirmSpanAfterTheRaise() {
    var m = learnt()
    let last: Int64 = 29_900_000
    let need = try! XCTUnwrap(
      m.fullDutyNeeded(
        at: dt(30 * s), sampledDuty: 0.04, allowance: ExitAllowance(confirmSpans: 1))?.micros)
    XCTAssertGreaterThan(need, last + 3 * s, "a learnt 100 ms beacon may be sampled for seconds")
    XCTAssertEqual(m.scanDutyChanged(to: 0.04, at: DecisionTime(micros: 30 * s)), [])
    XCTAssertNil(m.deadline(), "no exit deadline below full duty")
    XCTAssertEqual(
      m.advance(to: DecisionTime(micros: 600 * s)), [], "silent for ten minutes at 4 %: no exit")
    XCTAssertEqual(m.state(of: "desk"), .inside)
    // Raised: the exit waits for the confirm span (the whole evidence at
    // full duty; a beacon that never missed is taken at 5 % loss:
    // 13.8 / (-ln 0.05 / 0.1) = 0.46 s, 0.1 s of it heard at full duty
    // after the last report, before the duty was lowered).
    XCTAssertEqual(m.scanDutyChanged(to: 1, at: DecisionTime(micros: 600 * s)), [])
    let d = try! XCTUnwrap(m.deadline()?.micros)
    XCTAssertEqual(Double(d - 600 * s) / 1e6, 0.36, accuracy: 0.01)
    XCTAssertLessThan(d, 600 * s + 2 * s)
    XCTAssertEqual(m.advance(to: DecisionTime(micros: d - 1)), [])
    XCTAssertEqual(m.advance(to: DecisionTime(micros: d)).map(\.kind), [.exit])
  }

  func testARaiseInTimeGivesTheExitWithinTheAllowance() {
    var m = learnt()
    let last: Int64 = 29_900_000
    _ = m.scanDutyChanged(to: 0.04, at: DecisionTime(micros: 30 * s))
    let need = try! XCTUnwrap(
      m.fullDutyNeeded(
        at: dt(30 * s), sampledDuty: 0.04, allowance: ExitAllowance(confirmSpans: 1))?.micros)
    _ = m.advance(to: DecisionTime(micros: need))
    _ = m.scanDutyChanged(to: 1, at: DecisionTime(micros: need))
    let exit = try! XCTUnwrap(m.deadline()?.micros)
    let full = try! XCTUnwrap(m.exitTimeout(region: "desk"))
    // At full duty throughout it would be `full` (6 s, the floor) after the
    // last report; sampling costs at most one full-duty evidence time more.
    XCTAssertGreaterThanOrEqual(Double(exit - last) / 1e6, full - 0.01)
    XCTAssertLessThanOrEqual(Double(exit - last) / 1e6, full + 2.0)
  }

  /// The confirm span adds up the full-duty listening since the last
  /// report: two raises of 0.3 s make one of 0.6 s, and a new raise does
  /// not start a fresh count (that would give a present beacon a new
  /// chance to be missed at every raise).
  func testTheConfirmSpanAddsUpFullDutySinceTheLastReport() {
    var m = learnt()
    _ = m.scanDutyChanged(to: 0.04, at: DecisionTime(micros: 30 * s))
    _ = m.advance(to: DecisionTime(micros: 60 * s))
    _ = m.scanDutyChanged(to: 1, at: DecisionTime(micros: 60 * s))
    _ = m.advance(to: DecisionTime(micros: 60 * s + 300_000))
    _ = m.scanDutyChanged(to: 0.04, at: DecisionTime(micros: 60 * s + 300_000))
    _ = m.advance(to: DecisionTime(micros: 90 * s))
    XCTAssertEqual(m.scanDutyChanged(to: 1, at: DecisionTime(micros: 90 * s)), [])
    let d = try! XCTUnwrap(m.deadline()?.micros)
    // 0.46 s of confirm in all: 0.1 s before the first lowering and
    // 0.3 s in the first raise already heard.
    XCTAssertEqual(Double(d - 90 * s) / 1e6, 0.06, accuracy: 0.01)
    XCTAssertEqual(m.advance(to: DecisionTime(micros: d)).map(\.kind), [.exit])
  }

  /// Gaps heard in short full-duty spans are not learnt: those spans end
  /// when the beacon is heard, so they hold its short gaps only, and the
  /// beacon would seem to lose less than it does.
  func testShortFullSpansTeachNoGaps() {
    var c = Config()
    c.regions = [region("desk", major: 1, minor: 10, exitAfter: .auto)]
    var m = RegionMonitor(config: c, emitRange: false)
    _ = m.start(at: DecisionTime(micros: 0), scanning: true)
    func hear(_ t: Int64) {
      _ = m.report(
        at: DecisionTime(micros: t), beacon: TrackedBeacon(id: id, measuredPower: -59),
        address: address, rssi: -60)
    }
    // Ten minutes of a 1 s beacon that loses two events in five.
    for k: Int64 in 0..<600 where k % 5 != 1 && k % 5 != 3 { hear(k * s) }
    let before = try! XCTUnwrap(m.exitTimeout(region: "desk"))
    XCTAssertGreaterThan(before, 10, "above the floor, so the loss shows in it")
    _ = m.scanDutyChanged(to: 0.04, at: DecisionTime(micros: 600 * s))
    var t = 601 * s
    // Two hundred spans of 3 s at full duty, each hearing the beacon at
    // 1 s and 2 s in (never a longer gap), sampled in between.
    for _ in 0..<200 {
      _ = m.scanDutyChanged(to: 1, at: DecisionTime(micros: t))
      hear(t + s)
      hear(t + 2 * s)
      _ = m.scanDutyChanged(to: 0.04, at: DecisionTime(micros: t + 3 * s))
      t += 10 * s
    }
    XCTAssertEqual(m.exitTimeout(region: "desk"), before)
  }
}

/// Name requests: a phone that goes quiet is asked by name before its
/// region is declared outside.
final class NameRequestTests: XCTestCase {
  let phone = BDAddress("00:1A:7D:DA:71:13")!

  func monitor() -> RegionMonitor {
    var c = Config()
    var r = RegionConfig(name: "phone", line: 1)
    r.devices = [phone]
    r.exitAfter = .seconds(8)
    c.regions = [r]
    var m = RegionMonitor(config: c, emitRange: false)
    m.nameRequests = true
    _ = m.start(at: DecisionTime(micros: 0), scanning: true)
    _ = m.report(
      at: DecisionTime(micros: s), address: phone, type: .public, rssi: -60, txPower: nil)
    return m
  }

  func testAQuietPhoneThatAnswersStays() {
    var m = monitor()
    XCTAssertEqual(m.advance(to: DecisionTime(micros: 9 * s)), [], "no exit: asked by name instead")
    XCTAssertEqual(m.takeNameRequests(), [phone])
    XCTAssertEqual(m.takeNameRequests(), [], "once")
    XCTAssertEqual(
      m.nameAnswered(phone, found: true, at: DecisionTime(micros: 9 * s + 400_000)), [])
    // The answer holds it 15 s; then it is asked again rather than exited.
    XCTAssertEqual(m.advance(to: DecisionTime(micros: 30 * s)), [])
    XCTAssertEqual(m.takeNameRequests(), [phone])
    XCTAssertEqual(m.state(of: "phone"), .inside)
  }

  func testAPhoneThatIsGoneExitsAfterFourUnansweredPages() {
    var m = monitor()
    _ = m.advance(to: DecisionTime(micros: 9 * s))
    XCTAssertEqual(m.takeNameRequests(), [phone])
    XCTAssertEqual(
      m.nameAnswered(phone, found: false, at: DecisionTime(micros: 9 * s + 5_120_000)), [])
    XCTAssertEqual(m.takeNameRequests(), [phone], "one lost page is asked again")
    XCTAssertEqual(
      m.nameAnswered(phone, found: false, at: DecisionTime(micros: 14 * s + 500_000)), [])
    XCTAssertEqual(m.takeNameRequests(), [phone], "and a second")
    XCTAssertEqual(
      m.nameAnswered(phone, found: false, at: DecisionTime(micros: 19 * s + 500_000)), [])
    XCTAssertEqual(m.takeNameRequests(), [phone], "and a third")
    let exit = m.nameAnswered(phone, found: false, at: DecisionTime(micros: 24 * s + 500_000))
    XCTAssertEqual(exit.map(\.kind), [.exit])
    XCTAssertEqual(exit.first?.decided.micros, 24 * s + 500_000, "stamped when the answer came")
    XCTAssertEqual(m.takeNameRequests(), [])
  }

  func testUnansweredRequestTimesOutIntoTheExit() {
    var m = monitor()
    _ = m.advance(to: DecisionTime(micros: 9 * s))
    _ = m.takeNameRequests()
    // No answer at all (a command lost, or sent late): the wait ends as an
    // unanswered request does, asked again three times, then the exit.
    XCTAssertEqual(m.advance(to: DecisionTime(micros: 14 * s)), [])
    for k in 1...3 {
      XCTAssertEqual(m.advance(to: DecisionTime(micros: (9 + 6 * Int64(k)) * s)), [], "repeat \(k)")
      XCTAssertEqual(m.takeNameRequests(), [phone], "repeat \(k)")
    }
    XCTAssertEqual(m.advance(to: DecisionTime(micros: 32 * s)), [])
    XCTAssertEqual(m.advance(to: DecisionTime(micros: 33 * s)).map(\.kind), [.exit])
  }

  /// An exit found late (the monitor advanced after its deadline, as when
  /// the scan was sampling) holds for its answer from when the request can
  /// go out, not from the deadline: the answer of a page sent now comes
  /// within the wait.
  func testAnExitFoundLateWaitsFromWhenItAsks() {
    var m = monitor()
    _ = m.advance(to: DecisionTime(micros: 12 * s))  // the exit was due at 9 s
    XCTAssertEqual(m.takeNameRequests(), [phone])
    XCTAssertEqual(
      m.advance(to: DecisionTime(micros: 17 * s)), [],
      "a page sent at 12 s may answer until 17.12 s")
    XCTAssertEqual(m.nameAnswered(phone, found: true, at: DecisionTime(micros: 17_120_000)), [])
    XCTAssertEqual(m.advance(to: DecisionTime(micros: 20 * s)), [], "found: present")
  }

  func testAdvertisingAgainEndsTheRequest() {
    var m = monitor()
    _ = m.advance(to: DecisionTime(micros: 9 * s))
    _ = m.takeNameRequests()
    _ = m.report(
      at: DecisionTime(micros: 10 * s), address: phone, type: .public, rssi: -60, txPower: nil)
    XCTAssertEqual(m.nameAnswered(phone, found: false, at: DecisionTime(micros: 14 * s)), [])
    XCTAssertEqual(m.advance(to: DecisionTime(micros: 17 * s)), [], "8 s after the report: not yet")
    XCTAssertEqual(m.advance(to: DecisionTime(micros: 18 * s)), [])
    XCTAssertEqual(m.takeNameRequests(), [phone], "asked again at the next exit")
  }
}

/// The closed loop on the scheduling issue's house, one simulated hour.
final class RadioSimulationTests: XCTestCase {
  func testSavingTakesLessRadioAndNeverAFalseExit() {
    for seed: UInt64 in [1, 2] {
      let sim = RadioSimulation.house(hours: 1, seed: seed)
      let battery = sim.run(schedule: ScanScheduleSettings(), power: .battery)
      XCTAssertEqual(battery.falseExits, 0, "seed \(seed)")
      XCTAssertLessThan(battery.meanDuty, 0.3, "seed \(seed)")
      let full = sim.run(schedule: ScanScheduleSettings(policy: .full), power: .mains)
      XCTAssertEqual(full.meanDuty, 1, accuracy: 1e-9)
      XCTAssertGreaterThan(battery.settingChanges, 10)
    }
  }

  func testPhonesSilencesGiveFalseExitsWithoutNameRequests() {
    var sim = RadioSimulation.house(hours: 1, seed: 1, fastBeacons: 0, slowBeacons: 0, phones: 2)
    sim.nameRequests = false
    let without = sim.run(schedule: ScanScheduleSettings(policy: .full), power: .mains)
    XCTAssertGreaterThan(without.falseExits, 0, "the 20-60 s silences")
    sim.nameRequests = true
    let with = sim.run(schedule: ScanScheduleSettings(policy: .full), power: .mains)
    XCTAssertLessThan(with.falseExits, without.falseExits)
    XCTAssertGreaterThan(with.nameRequests, 0)
  }
}

/// Where the power comes from, by the kernel's power_supply entries.
final class PowerSupplyTests: XCTestCase {
  func testALaptopOnItsChargerAndOffIt() {
    let charger = PowerSupplyEntry(type: "Mains", online: true)
    let battery = PowerSupplyEntry(type: "Battery", scope: nil, status: "Charging")
    XCTAssertEqual(PowerSupply(supplies: [charger, battery]), .mains)
    var unplugged = charger
    unplugged.online = false
    var discharging = battery
    discharging.status = "Discharging"
    XCTAssertEqual(PowerSupply(supplies: [unplugged, discharging]), .battery)
    // Full and not charging, nothing online: running on it.
    XCTAssertEqual(
      PowerSupply(supplies: [unplugged, PowerSupplyEntry(type: "Battery", status: "Full")]),
      .battery)
  }

  func testADischargingBatteryWinsOverAUSBPortThatSaysOnline() {
    let port = PowerSupplyEntry(type: "USB", online: true)
    let battery = PowerSupplyEntry(type: "Battery", status: "Discharging")
    XCTAssertEqual(PowerSupply(supplies: [port, battery]), .battery)
    XCTAssertEqual(
      PowerSupply(supplies: [PowerSupplyEntry(type: "USB_PD", online: true)]), .mains)
  }

  func testADesktopAndPeripheralsBatteriesAreMains() {
    XCTAssertEqual(PowerSupply(supplies: []), .mains)
    let mouse = PowerSupplyEntry(type: "Battery", scope: "Device", status: "Discharging")
    XCTAssertEqual(PowerSupply(supplies: [mouse]), .mains)
  }
}

final class DutyMeterTests: XCTestCase {
  func testTheMeanIsTimeWeightedPerPowerSource() {
    func at(_ seconds: Int64) -> DecisionTime { DecisionTime(micros: seconds * s) }
    var m = DutyMeter()
    XCTAssertNil(m.mean(on: .mains, at: at(0)))
    m.set(duty: 1, power: .mains, at: at(0))
    m.set(duty: 0.1, power: .mains, at: at(10))
    // 10 s at 1, 30 s at 0.1: (10 + 3) / 40.
    XCTAssertEqual(try XCTUnwrap(m.mean(on: .mains, at: at(40))), 13.0 / 40, accuracy: 1e-9)
    m.set(duty: 0.04, power: .battery, at: at(40))
    m.set(duty: nil, power: .battery, at: at(60))
    XCTAssertEqual(try XCTUnwrap(m.mean(on: .battery, at: at(80))), 0.8 / 40, accuracy: 1e-9)
    XCTAssertEqual(try XCTUnwrap(m.mean(on: .mains, at: at(80))), 13.0 / 40, accuracy: 1e-9)
  }
}

/// The page that asks a device by name, and its outcome.
final class RemoteNameTests: XCTestCase {
  func testTheRequestAndItsCompleteEvent() {
    let phone = BDAddress("00:1A:7D:DA:71:13")!
    let command = HCICommand.remoteNameRequest(phone)
    // Opcode 0x0419 (OGF 1, OCF 0x19), 10 bytes: the address little-endian,
    // R2, reserved, no clock offset.
    XCTAssertEqual(
      command.packet, [0x01, 0x19, 0x04, 10, 0x13, 0x71, 0xDA, 0x7D, 0x1A, 0x00, 0x02, 0, 0, 0])
    var event: [UInt8] = [0x07, 255, 0x00, 0x13, 0x71, 0xDA, 0x7D, 0x1A, 0x00]
    event += Array("Pixel".utf8) + [UInt8](repeating: 0, count: 248 - 5)
    let answered = event.withUnsafeBytes { RemoteNameResult(event: $0) }
    XCTAssertEqual(answered?.address, phone)
    XCTAssertEqual(answered?.answered, true)
    var timeout = event
    timeout[2] = 0x04  // Page Timeout
    XCTAssertEqual(timeout.withUnsafeBytes { RemoteNameResult(event: $0) }?.answered, false)
    let short = Array(event.prefix(20))
    XCTAssertNil(short.withUnsafeBytes { RemoteNameResult(event: $0) }, "cut short: refused")
  }

  func testOnlyPublicLookingAddressesArePaged() {
    XCTAssertTrue(RemoteNameResult.pageable(BDAddress("00:1A:7D:DA:71:13")!))
    XCTAssertFalse(RemoteNameResult.pageable(BDAddress("C4:1A:7D:DA:71:13")!), "static random")
  }
}
