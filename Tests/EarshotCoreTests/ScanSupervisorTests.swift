import XCTest

@testable import EarshotCore

private let sec = Duration.seconds(1)

/// Drives the supervisor with an injected clock. Each test is named after
/// the VM scenario (Tests/vm/tests/NAME.sh) whose transition it checks.
private struct ScanDrive {
  var s: ScanSupervisor
  var now = MonotonicTime.zero + .seconds(1000)

  init(settings: ScanSettings = ScanSettings()) {
    s = ScanSupervisor(settings: settings)
  }

  @discardableResult
  mutating func on(_ e: ScanEvent) -> [ScanAction] { s.handle(e, now: now) }

  func start(_ set: ScanCommandSet) -> [HCICommand] {
    set.start(
      type: s.settings.scanType, timing: s.settings.timing,
      filterDuplicates: s.settings.filterDuplicates)
  }

  /// Answers every command of the start sequence with `status`, returns all actions.
  mutating func answerAll(_ set: ScanCommandSet, _ status: HCIStatus = .success) -> [ScanAction] {
    var all: [ScanAction] = []
    for c in start(set) { all += on(.answered(c.opcode, status)) }
    return all
  }

  /// From nothing to Earshot's own scan on hci`index`.
  mutating func scanning(_ set: ScanCommandSet = .legacy, index: UInt16 = 0) {
    on(.start(waitForAdapter: false))
    on(.adapterOpened(name: "hci\(index)", index: index, commands: set))
    _ = answerAll(set)
  }

  /// Another program (bluetoothd via the kernel) turns scanning on or off.
  mutating func otherProgram(enables: Bool, _ set: ScanCommandSet = .legacy) -> [ScanAction] {
    let command: HCICommand =
      set == .legacy ? .leSetScanEnable(enables) : .leSetExtendedScanEnable(enables)
    return on(.otherProgramSent(command)) + on(.responseSeen(command.opcode, .success))
  }
}

extension HCIStatus {
  fileprivate static let success = HCIStatus(rawValue: 0)
}

final class ScanSupervisorTests: XCTestCase {
  let scanning0 = AdapterState.scanning(adapter: "hci0", commands: .legacy, type: .active)

  // MARK: scan_ibeacon, scan_legacy_only: starting

  func testScanIbeaconStartSendsParametersThenEnableAndReportsScanning() {
    var d = ScanDrive()
    XCTAssertEqual(d.on(.start(waitForAdapter: false)), [.openLifecycle, .openAdapter])
    let set = ScanCommandSet.extended
    let commands = d.start(set)
    XCTAssertEqual(
      d.on(.adapterOpened(name: "hci0", index: 0, commands: set)), [.send(commands[0])])
    XCTAssertEqual(d.on(.answered(commands[0].opcode, .success)), [.send(commands[1])])
    XCTAssertEqual(
      d.on(.answered(commands[1].opcode, .success)),
      [
        .report(.scanning(adapter: "hci0", commands: .extended, type: .active)),
        .listening(.continuous),
      ])
    XCTAssertTrue(d.s.isScanOurs)
    XCTAssertEqual(d.s.commands, .extended)
  }

  func testScanIbeaconPassiveScansPassively() {
    var d = ScanDrive(settings: ScanSettings(scanType: .passive))
    d.on(.start(waitForAdapter: false))
    let first = d.on(.adapterOpened(name: "hci0", index: 0, commands: .extended))
    XCTAssertEqual(
      first, [.send(.leSetExtendedScanParameters(type: .passive, timing: .continuous))])
    XCTAssertEqual(
      d.answerAll(.extended).suffix(2),
      [
        .report(.scanning(adapter: "hci0", commands: .extended, type: .passive)),
        .listening(.continuous),
      ])
  }

  func testScanLegacyOnlyExtendedRefusedGivesUpWithTheHCIError() {
    var d = ScanDrive()
    d.on(.start(waitForAdapter: false))
    d.on(.adapterOpened(name: "hci0", index: 0, commands: .extended))
    let actions = d.on(.answered(.leSetExtendedScanParameters, .unknownCommand))
    let failure = ScanFailure.refused(
      adapter: "hci0", .leSetExtendedScanParameters, .unknownCommand)
    XCTAssertEqual(actions, [.closeAdapter, .closeLifecycle, .giveUp(failure)])
    XCTAssertTrue(
      failure.reason.contains(
        "refused LE Set Extended Scan Parameters: Unknown HCI Command (0x01)"), failure.reason)
    XCTAssertFalse(d.s.isRunning)
    XCTAssertEqual(d.on(.timerFired(.retry)), [], "nothing happens after giving up")
  }

  func testAnswersToOtherCommandsAreIgnoredWhileStarting() {
    var d = ScanDrive()
    d.on(.start(waitForAdapter: false))
    d.on(.adapterOpened(name: "hci0", index: 0, commands: .legacy))
    XCTAssertEqual(d.on(.answered(.leSetScanEnable, .success)), [], "not the command in flight")
    XCTAssertEqual(d.on(.answered(.leSetScanParameters, .success)), [.send(.leSetScanEnable(true))])
  }

  // MARK: scan_errors: what fails `start`

  func testScanErrorsNoAdapterGivesUp() {
    var d = ScanDrive()
    d.on(.start(waitForAdapter: false))
    let f = ScanFailure(.noAdapter, reason: "no Bluetooth adapter found: ...")
    XCTAssertEqual(
      d.on(.openFailed(f, adapter: nil)), [.closeAdapter, .closeLifecycle, .giveUp(f)])
    XCTAssertNil(d.s.state, "nothing reported: the error says it")
  }

  func testScanErrorsUnknownAdapterGivesUp() {
    var d = ScanDrive(settings: ScanSettings(adapter: "hci7"))
    d.on(.start(waitForAdapter: false))
    let f = ScanFailure(.gone, reason: "no adapter hci7; the kernel has hci0, hci1.")
    XCTAssertEqual(d.on(.openFailed(f, adapter: nil)).last, .giveUp(f))
  }

  func testScanErrorsAdapterDownGivesUp() {
    var d = ScanDrive(settings: ScanSettings(adapter: "hci0"))
    d.on(.start(waitForAdapter: false))
    let f = ScanFailure(.down, reason: "hci0 is down (powered off).")
    XCTAssertEqual(d.on(.openFailed(f, adapter: "hci0")).last, .giveUp(f))
  }

  func testScanErrorsMissingCapabilityGivesUpEvenWhenWaiting() {
    var d = ScanDrive()
    d.on(.start(waitForAdapter: true))
    let f = ScanFailure(.permanent, reason: "raw HCI access needs CAP_NET_RAW")
    XCTAssertEqual(d.on(.openFailed(f, adapter: "hci0")).last, .giveUp(f))
    XCTAssertFalse(d.s.isRunning)
  }

  func testScanErrorsNoCapabilityToSendGivesUp() {
    var d = ScanDrive()
    d.on(.start(waitForAdapter: false))
    d.on(.adapterOpened(name: "hci0", index: 0, commands: .legacy))
    let f = ScanFailure(.permanent, reason: "raw HCI access needs CAP_NET_RAW")
    XCTAssertEqual(d.on(.sendFailed(f)), [.closeAdapter, .closeLifecycle, .giveUp(f)])
  }

  // MARK: earshot run (waitForAdapter): waiting instead of failing

  func testRunWaitsForAMissingAdapterAndScansWhenItAppears() {
    var d = ScanDrive()
    d.on(.start(waitForAdapter: true))
    let f = ScanFailure(.noAdapter, reason: "no Bluetooth adapter found: ...")
    XCTAssertEqual(
      d.on(.openFailed(f, adapter: nil)),
      [
        .closeAdapter, .report(.failed(adapter: "adapter", reason: "no Bluetooth adapter found")),
        .timer(.arm(.retry, at: d.now + sec)),
      ])
    XCTAssertEqual(d.on(.device(.registered, index: 0)), [.timer(.cancel(.retry)), .openAdapter])
    d.on(.adapterOpened(name: "hci0", index: 0, commands: .legacy))
    XCTAssertEqual(
      d.answerAll(.legacy),
      [.send(.leSetScanEnable(true)), .report(scanning0), .listening(.continuous)])
  }

  func testRunWaitsForADownAdapter() {
    var d = ScanDrive(settings: ScanSettings(adapter: "hci0"))
    d.on(.start(waitForAdapter: true))
    let actions = d.on(.openFailed(ScanFailure(.down, reason: "down"), adapter: "hci0"))
    XCTAssertEqual(actions[1], .report(.down(adapter: "hci0")))
    XCTAssertTrue(d.s.isRunning)
  }

  // MARK: scan_hotplug, monitor_live: down, removed, back

  func testScanHotplugAdapterDownIsReportedAndRetried() {
    var d = ScanDrive()
    d.scanning()
    XCTAssertEqual(d.on(.device(.down, index: 1)), [], "another adapter's event")
    XCTAssertEqual(
      d.on(.device(.down, index: 0)),
      [.closeAdapter, .report(.down(adapter: "hci0")), .timer(.arm(.retry, at: d.now + sec))])
    XCTAssertFalse(d.s.isScanOurs)
    // Still down at the retry: reported once, retried again.
    d.now += sec
    XCTAssertEqual(d.on(.timerFired(.retry)), [.openAdapter])
    XCTAssertEqual(
      d.on(.openFailed(ScanFailure(.down, reason: "down"), adapter: "hci0")),
      [.closeAdapter, .timer(.arm(.retry, at: d.now + sec))])
  }

  func testScanHotplugScanningResumesWhenPoweredOn() {
    var d = ScanDrive()
    d.scanning()
    d.on(.device(.down, index: 0))
    XCTAssertEqual(d.on(.device(.up, index: 0)), [.timer(.cancel(.retry)), .openAdapter])
    XCTAssertEqual(
      d.on(.adapterOpened(name: "hci0", index: 0, commands: .legacy)),
      [.send(.leSetScanParameters(type: .active, timing: .continuous))])
    XCTAssertEqual(d.answerAll(.legacy).suffix(2), [.report(scanning0), .listening(.continuous)])
  }

  func testScanHotplugRemovalIsReportedAndEarshotKeepsRunning() {
    var d = ScanDrive()
    d.scanning()
    XCTAssertEqual(
      d.on(.device(.unregistered, index: 0)),
      [
        .closeAdapter, .report(.removed(adapter: "hci0")),
        .timer(.arm(.retry, at: d.now + sec)),
      ])
    // The retry finds nothing, again and again: no new report, one timer at a time.
    for _ in 0..<3 {
      d.now += sec
      XCTAssertEqual(d.on(.timerFired(.retry)), [.openAdapter])
      XCTAssertEqual(
        d.on(.openFailed(ScanFailure(.noAdapter, reason: "none"), adapter: nil)),
        [.closeAdapter, .timer(.arm(.retry, at: d.now + sec))])
    }
    XCTAssertTrue(d.s.isRunning)
    XCTAssertEqual(d.s.state, .removed(adapter: "hci0"))
  }

  func testScanHotplugScanningResumesWhenTheAdapterComesBack() {
    var d = ScanDrive()
    d.scanning()
    d.on(.device(.unregistered, index: 0))
    XCTAssertEqual(d.on(.device(.registered, index: 0)), [.timer(.cancel(.retry)), .openAdapter])
    XCTAssertEqual(d.on(.device(.up, index: 0)), [], "already opening: one attempt at a time")
    d.on(.adapterOpened(name: "hci0", index: 0, commands: .legacy))
    XCTAssertEqual(d.answerAll(.legacy).suffix(2), [.report(scanning0), .listening(.continuous)])
  }

  func testMonitorLiveReadErrorLosesTheAdapter() {
    var d = ScanDrive()
    d.scanning()
    XCTAssertEqual(
      d.on(.readFailed(adapterDown: false)),
      [
        .closeAdapter, .report(.removed(adapter: "hci0")),
        .timer(.arm(.retry, at: d.now + sec)),
      ])
    XCTAssertEqual(d.on(.readFailed(adapterDown: true)), [], "already lost")
  }

  func testStaleRetryFiringIsIgnored() {
    var d = ScanDrive()
    d.scanning()
    d.on(.device(.down, index: 0))
    d.now += sec / 2
    XCTAssertEqual(d.on(.timerFired(.retry)), [], "before its deadline")
    d.now += sec / 2
    XCTAssertEqual(d.on(.timerFired(.retry)), [.openAdapter])
    XCTAssertEqual(d.on(.timerFired(.retry)), [], "fired already")
  }

  // MARK: scan_bluetoothd, bluetoothd_restart: another program's scan

  func testScanBluetoothdCommandDisallowedSharesTheScanWithoutEnabling() {
    var d = ScanDrive()
    d.on(.start(waitForAdapter: false))
    d.on(.adapterOpened(name: "hci0", index: 0, commands: .legacy))
    XCTAssertEqual(
      d.on(.answered(.leSetScanParameters, .commandDisallowed)),
      [.report(.sharing(adapter: "hci0")), .listening(.continuous)], "no enable is sent")
    XCTAssertFalse(d.s.isScanOurs)
    // Stopping leaves bluetoothd's scan alone: nothing to restore.
    XCTAssertEqual(d.on(.stop), [.closeAdapter, .closeLifecycle])
  }

  func testScanBluetoothdDisallowedEnableIsNotOurs() {
    var d = ScanDrive()
    d.on(.start(waitForAdapter: false))
    d.on(.adapterOpened(name: "hci0", index: 0, commands: .legacy))
    d.on(.answered(.leSetScanParameters, .success))
    XCTAssertEqual(
      d.on(.answered(.leSetScanEnable, .commandDisallowed)),
      [.report(.sharing(adapter: "hci0")), .listening(.continuous)])
    XCTAssertEqual(d.on(.stop), [.closeAdapter, .closeLifecycle])
  }

  func testScanBluetoothdDiscoveryTakesTheScanOverAndEarshotReadsItsReports() {
    var d = ScanDrive()
    d.scanning()
    // The kernel disables Earshot's scan, then starts its own.
    XCTAssertEqual(
      d.otherProgram(enables: false),
      [.scanPaused(true), .timer(.arm(.retake, at: d.now + .seconds(5)))])
    d.now += sec
    XCTAssertEqual(
      d.otherProgram(enables: true),
      [.timer(.cancel(.retake)), .scanPaused(false), .report(.sharing(adapter: "hci0"))])
    XCTAssertFalse(d.s.isScanOurs)
    XCTAssertEqual(d.on(.stop), [.closeAdapter, .closeLifecycle], "bluetoothd's scan stays")
  }

  func testScanBluetoothdTakesScanningBackWhenDiscoveryStops() {
    var d = ScanDrive()
    d.scanning()
    _ = d.otherProgram(enables: false)
    _ = d.otherProgram(enables: true)
    XCTAssertEqual(
      d.otherProgram(enables: false),
      [.scanPaused(true), .timer(.arm(.retake, at: d.now + .seconds(5)))])
    d.now += .seconds(5) - .nanoseconds(1)
    XCTAssertEqual(d.on(.timerFired(.retake)), [], "before its deadline")
    d.now += .nanoseconds(1)
    XCTAssertEqual(
      d.on(.timerFired(.retake)), [.send(.leSetScanParameters(type: .active, timing: .continuous))])
    XCTAssertEqual(
      d.answerAll(.legacy), [.send(.leSetScanEnable(true)), .scanPaused(false), .report(scanning0)])
    XCTAssertTrue(d.s.isScanOurs)
  }

  func testScanBluetoothdShortPauseIsNotTakenOver() {
    // The kernel pauses discovery briefly (interleaving inquiry): no retake.
    var d = ScanDrive()
    d.scanning()
    _ = d.otherProgram(enables: true)
    _ = d.otherProgram(enables: false)
    d.now += .seconds(2)
    XCTAssertEqual(d.otherProgram(enables: true), [.timer(.cancel(.retake)), .scanPaused(false)])
    d.now += .seconds(5)
    XCTAssertEqual(d.on(.timerFired(.retake)), [], "cancelled: bluetoothd scans again")
  }

  func testScanBluetoothdRefusedOrUnansweredCommandsChangeNothing() {
    var d = ScanDrive()
    d.scanning()
    d.on(.otherProgramSent(.leSetScanEnable(false)))
    XCTAssertEqual(d.on(.responseSeen(.leSetScanEnable, .commandDisallowed)), [])
    XCTAssertEqual(
      d.on(.responseSeen(.leSetScanEnable, .success)), [], "forgotten after its answer")
    XCTAssertEqual(d.on(.responseSeen(.leSetScanParameters, .success)), [])
    XCTAssertEqual(d.on(.otherProgramSent(.readLocalSupportedCommands)), [], "not a scan enable")
    XCTAssertTrue(d.s.isScanOurs)
  }

  func testBluetoothdRestartDiscoveryKilledEarshotScansAgain() {
    var d = ScanDrive(settings: ScanSettings(retakeSeconds: 5))
    d.scanning()
    _ = d.otherProgram(enables: false)
    _ = d.otherProgram(enables: true)
    // bluetoothd killed: the kernel ends its discovery.
    _ = d.otherProgram(enables: false)
    d.now += .seconds(5)
    d.on(.timerFired(.retake))
    XCTAssertEqual(
      d.answerAll(.legacy).last, .report(scanning0),
      "continuous, as the shared scan counted: nothing to say")
    // Restarted and discovering again: shared, then taken back.
    _ = d.otherProgram(enables: false)
    XCTAssertEqual(d.otherProgram(enables: true).last, .report(.sharing(adapter: "hci0")))
    _ = d.otherProgram(enables: false)
    d.now += .seconds(5)
    d.on(.timerFired(.retake))
    XCTAssertEqual(
      d.answerAll(.legacy), [.send(.leSetScanEnable(true)), .scanPaused(false), .report(scanning0)])
  }

  func testBluetoothdRestartRetakeDisallowedSharesAgain() {
    var d = ScanDrive()
    d.scanning()
    _ = d.otherProgram(enables: false)
    d.now += .seconds(5)
    d.on(.timerFired(.retake))
    XCTAssertEqual(
      d.on(.answered(.leSetScanParameters, .commandDisallowed)),
      [.scanPaused(false), .report(.sharing(adapter: "hci0"))])
  }

  func testRetakeThatFailsLosesTheAdapter() {
    var d = ScanDrive()
    d.scanning()
    _ = d.otherProgram(enables: false)
    d.now += .seconds(5)
    d.on(.timerFired(.retake))
    let f = ScanFailure(.other, reason: "no answer")
    XCTAssertEqual(
      d.on(.sendFailed(f)),
      [
        .report(.failed(adapter: "hci0", reason: "no answer")), .closeAdapter,
        .report(.removed(adapter: "hci0")), .timer(.arm(.retry, at: d.now + sec)),
      ])
  }

  func testAdapterLostWhilePausedCancelsTheRetake() {
    var d = ScanDrive()
    d.scanning()
    _ = d.otherProgram(enables: false)
    XCTAssertEqual(
      d.on(.device(.unregistered, index: 0)),
      [
        .closeAdapter, .timer(.cancel(.retake)), .report(.removed(adapter: "hci0")),
        .timer(.arm(.retry, at: d.now + sec)),
      ])
    XCTAssertEqual(
      d.on(.responseSeen(.leSetScanEnable, .success)), [], "pending commands forgotten")
  }

  // MARK: scan_restore: stopping undoes Earshot's scan only

  func testScanRestoreStopDisablesAndResetsOurScan() {
    for set in [ScanCommandSet.legacy, .extended] {
      var d = ScanDrive()
      d.scanning(set)
      XCTAssertEqual(d.on(.stop), [.restore(set.restore), .closeAdapter, .closeLifecycle])
      XCTAssertEqual(d.on(.stop), [], "safe to call again")
      XCTAssertEqual(d.on(.device(.up, index: 0)), [], "nothing after stop")
    }
  }

  func testStopCancelsTheTimers() {
    var d = ScanDrive()
    d.scanning()
    d.on(.device(.down, index: 0))
    XCTAssertEqual(d.on(.stop), [.timer(.cancel(.retry)), .closeAdapter, .closeLifecycle])
    var e = ScanDrive()
    e.scanning()
    _ = e.otherProgram(enables: false)
    XCTAssertEqual(e.on(.stop), [.timer(.cancel(.retake)), .closeAdapter, .closeLifecycle])
  }

  // MARK: Guarantees over random event sequences

  // MARK: The scan scheduler's timing

  let sampled = ScanTiming(interval: 0x04B0, window: 0x0030)

  func testAWantedTimingChangesOurScanAndALowerDutyIsSaidFirst() {
    var d = ScanDrive()
    d.scanning()
    XCTAssertEqual(
      d.on(.want(sampled)), [.listening(sampled), .send(.leSetScanEnable(false))],
      "silence counts at the lower duty from the moment the change starts")
    XCTAssertEqual(
      d.on(.answered(.leSetScanEnable, .success)),
      [.send(.leSetScanParameters(type: .active, timing: sampled))])
    XCTAssertEqual(
      d.on(.answered(.leSetScanParameters, .success)), [.send(.leSetScanEnable(true))])
    XCTAssertEqual(d.on(.answered(.leSetScanEnable, .success)), [], "said already")
    XCTAssertTrue(d.s.isScanOurs)
    // Back to full: said once the scan listens again.
    XCTAssertEqual(d.on(.want(.continuous)), [.send(.leSetScanEnable(false))])
    d.on(.answered(.leSetScanEnable, .success))
    d.on(.answered(.leSetScanParameters, .success))
    XCTAssertEqual(d.on(.answered(.leSetScanEnable, .success)), [.listening(.continuous)])
    XCTAssertEqual(d.on(.want(.continuous)), [], "the same timing again: nothing")
    // Stopping undoes the changed scan as any other of Earshot's.
    XCTAssertEqual(
      d.on(.stop), [.restore(ScanCommandSet.legacy.restore), .closeAdapter, .closeLifecycle])
  }

  func testAWantedScanTypeRestartsOurScanWithTheSameTimingAndIsReported() {
    var d = ScanDrive(settings: ScanSettings(scanType: .passive))
    d.scanning()
    XCTAssertEqual(d.s.wantedType, .passive)
    XCTAssertEqual(
      d.on(.wantType(.active)), [.send(.leSetScanEnable(false))],
      "the same duty: nothing said before the change")
    XCTAssertEqual(
      d.on(.answered(.leSetScanEnable, .success)),
      [.send(.leSetScanParameters(type: .active, timing: .continuous))])
    d.on(.answered(.leSetScanParameters, .success))
    XCTAssertEqual(
      d.on(.answered(.leSetScanEnable, .success)),
      [.report(.scanning(adapter: "hci0", commands: .legacy, type: .active))],
      "the state says the type the controller took")
    XCTAssertEqual(d.on(.wantType(.active)), [], "the same type again: nothing")
    // A timing change keeps the wanted type.
    d.on(.want(sampled))
    XCTAssertEqual(
      d.on(.answered(.leSetScanEnable, .success)),
      [.send(.leSetScanParameters(type: .active, timing: sampled))])
    d.on(.answered(.leSetScanParameters, .success))
    d.on(.answered(.leSetScanEnable, .success))
    d.on(.wantType(.passive))
    XCTAssertEqual(
      d.on(.answered(.leSetScanEnable, .success)),
      [.send(.leSetScanParameters(type: .passive, timing: sampled))])
    d.on(.answered(.leSetScanParameters, .success))
    XCTAssertEqual(
      d.on(.answered(.leSetScanEnable, .success)),
      [.report(.scanning(adapter: "hci0", commands: .legacy, type: .passive))])
  }

  func testAWantedScanTypeLeavesAnotherProgramsScanAlone() {
    var d = ScanDrive(settings: ScanSettings(scanType: .passive))
    d.on(.start(waitForAdapter: false))
    d.on(.adapterOpened(name: "hci0", index: 0, commands: .legacy))
    d.on(.answered(.leSetScanParameters, .success))
    d.on(.answered(.leSetScanEnable, .commandDisallowed))
    XCTAssertEqual(d.on(.wantType(.active)), [], "bluetoothd's scan is left alone")
    XCTAssertEqual(d.s.wantedType, .active, "kept for Earshot's next start")
  }

  func testAWantWhileCommandsAreOutWaitsForThem() {
    var d = ScanDrive()
    d.on(.start(waitForAdapter: false))
    d.on(.adapterOpened(name: "hci0", index: 0, commands: .extended))
    XCTAssertEqual(d.on(.want(sampled)), [], "the start sequence is out")
    d.on(.answered(.leSetExtendedScanParameters, .success))
    let done = d.on(.answered(.leSetExtendedScanEnable, .success))
    XCTAssertEqual(
      done,
      [
        .report(.scanning(adapter: "hci0", commands: .extended, type: .active)),
        .listening(.continuous), .listening(sampled), .send(.leSetExtendedScanEnable(false)),
      ])
  }

  func testAnotherProgramsScanIsNeverChangedAndTheWantWaitsForTheRetake() {
    var d = ScanDrive()
    d.scanning()
    _ = d.otherProgram(enables: false)
    _ = d.otherProgram(enables: true)
    XCTAssertEqual(d.on(.want(sampled)), [], "bluetoothd's scan is left alone")
    _ = d.otherProgram(enables: false)
    d.now += .seconds(5)
    XCTAssertEqual(
      d.on(.timerFired(.retake)), [.send(.leSetScanParameters(type: .active, timing: sampled))])
    d.on(.answered(.leSetScanParameters, .success))
    XCTAssertEqual(
      d.on(.answered(.leSetScanEnable, .success)),
      [.scanPaused(false), .report(scanning0), .listening(sampled)])
  }

  func testAChangeThatFailsLosesTheAdapterAndStartsAfresh() {
    var d = ScanDrive()
    d.scanning()
    d.on(.want(sampled))
    let lost = d.on(.sendFailed(ScanFailure(.down, reason: "down")))
    XCTAssertTrue(lost.contains(.closeAdapter))
    XCTAssertTrue(lost.contains(.timer(.arm(.retry, at: d.now + sec))))
    d.now += sec
    XCTAssertEqual(d.on(.timerFired(.retry)), [.openAdapter])
    XCTAssertEqual(
      d.on(.adapterOpened(name: "hci0", index: 0, commands: .legacy)),
      [.send(.leSetScanParameters(type: .active, timing: sampled))], "with the wanted timing")
    d.on(.answered(.leSetScanParameters, .success))
    XCTAssertEqual(
      d.on(.answered(.leSetScanEnable, .success)), [.report(scanning0), .listening(sampled)],
      "said again after the adapter came back")
  }

  /// At most one `.openAdapter`/`.send` awaits its answer; scan commands
  /// go out only on a fresh adapter or a retake; restore only when ours.
  func testRandomEventsNeverOverlapRequests() {
    var rng = SystemRandomNumberGenerator()
    for _ in 0..<300 {
      var d = ScanDrive()
      var awaiting: ScanAction?
      for _ in 0..<60 {
        d.now += .nanoseconds(Int.random(in: 0...3_000_000_000, using: &rng))
        let event: ScanEvent
        switch (awaiting, Int.random(in: 0..<10, using: &rng)) {
        case (.openAdapter?, 0..<5):
          event =
            Bool.random(using: &rng)
            ? .adapterOpened(name: "hci0", index: 0, commands: .legacy)
            : .openFailed(ScanFailure(.gone, reason: "gone"), adapter: "hci0")
        case (.send(let c)?, 0..<5):
          let status: [HCIStatus] = [.success, .success, .commandDisallowed, .unknownCommand]
          event = .answered(c.opcode, status.randomElement(using: &rng)!)
        default:
          let pool: [ScanEvent] = [
            .start(waitForAdapter: true), .device(.up, index: 0), .device(.down, index: 0),
            .device(.unregistered, index: 0), .device(.registered, index: 1),
            .readFailed(adapterDown: false), .otherProgramSent(.leSetScanEnable(false)),
            .otherProgramSent(.leSetScanEnable(true)),
            .responseSeen(.leSetScanEnable, .success), .timerFired(.retry),
            .timerFired(.retake), .stop, .sendFailed(ScanFailure(.other, reason: "x")),
            .want(.continuous), .want(ScanTiming(interval: 0x04B0, window: 0x0030)),
          ]
          event = pool.randomElement(using: &rng)!
        }
        // The answer to what was awaited ends the wait.
        switch event {
        case .adapterOpened, .openFailed:
          if awaiting == .openAdapter { awaiting = nil }
        case .answered(let opcode, _):
          if case .send(let c)? = awaiting, c.opcode == opcode { awaiting = nil }
        case .sendFailed:
          if case .send? = awaiting { awaiting = nil }
        default: break
        }
        let wasOurs = d.s.isScanOurs
        for a in d.on(event) {
          switch a {
          case .openAdapter, .send:
            XCTAssertNil(awaiting, "\(a) while \(String(describing: awaiting)) awaits")
            awaiting = a
          case .restore:
            XCTAssertTrue(wasOurs, "restore only undoes Earshot's own scan")
          case .closeAdapter, .giveUp:
            // Whatever was awaited is void: its answer is ignored.
            awaiting = nil
          default: break
          }
        }
      }
    }
  }
}
