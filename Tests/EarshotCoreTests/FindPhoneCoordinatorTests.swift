import EarshotTestSupport
import XCTest

@testable import EarshotCore

let deviceA = DeviceID(link: "socket", name: "earbuds")
let deviceB = DeviceID(link: "socket", name: "tag")
let deviceC = DeviceID(link: "ble", name: "AA:BB:CC:DD:EE:FF")
let second = Duration.seconds(1)

/// Drives the coordinator with an injected clock.
struct Drive {
  var c = FindPhoneCoordinator()
  var now = MonotonicTime.zero + .seconds(1000)

  init(settings: FindPhoneConfig = FindPhoneConfig()) {
    c = FindPhoneCoordinator(settings: settings)
  }

  /// Actions without the `.statusChanged` and `.log` bookkeeping.
  @discardableResult
  mutating func on(_ e: FindEvent) -> [FindAction] {
    step(e).actions.filter {
      if case .log = $0 { return false }
      return $0 != .statusChanged
    }
  }

  mutating func step(_ e: FindEvent) -> FindPhoneCoordinator.Step {
    c.handle(e, now: now)
  }

  /// Start from idle and confirm the save: the alert is playing.
  mutating func ring(_ d: DeviceID, user: VolumeSetting = VolumeSetting(level: 0.4, muted: true)) {
    _ = on(.deviceStart(d))
    _ = on(.volumeSaved(user, headphones: false))
  }
}

final class FindPhoneCoordinatorTests: XCTestCase {
  let user = VolumeSetting(level: 0.4, muted: true)

  func testStartSavesTheVolumeBeforeRaisingAndRinging() {
    var d = Drive()
    let s = d.step(.deviceStart(deviceA))
    XCTAssertEqual(s.reply, .ringing)
    XCTAssertEqual(
      s.actions,
      [.timer(.arm(.timeout, at: d.now + .seconds(60))), .saveUserVolume, .statusChanged])
    XCTAssertEqual(d.c.status.state, .starting)
    XCTAssertEqual(d.on(.volumeSaved(user, headphones: false)), [.raiseVolume(0.9), .startAlert])
    XCTAssertEqual(d.c.status.state, .ringing)
    XCTAssertEqual(d.c.status.requesters, [deviceA])
    XCTAssertEqual(d.c.status.level, 0.9)
  }

  func testHeadphonesCapTheLevel() {
    var d = Drive(settings: FindPhoneConfig(volume: 0.9, headphoneVolume: 0.3))
    d.on(.deviceStart(deviceA))
    XCTAssertEqual(d.on(.volumeSaved(user, headphones: true)), [.raiseVolume(0.3), .startAlert])
    XCTAssertTrue(d.c.status.headphones)
    var quiet = Drive(settings: FindPhoneConfig(volume: 0.2, headphoneVolume: 0.3))
    quiet.on(.deviceStart(deviceA))
    XCTAssertEqual(
      quiet.on(.volumeSaved(user, headphones: true)), [.raiseVolume(0.2), .startAlert])
  }

  func testFoundStopsThenRestoresThenNotifies() {
    var d = Drive()
    d.ring(deviceA)
    let s = d.step(.found)
    XCTAssertEqual(s.reply, .stopping(notify: [deviceA]))
    XCTAssertEqual(s.actions, [.timer(.cancel(.timeout)), .stopAlert, .statusChanged])
    XCTAssertEqual(d.c.status.notifying, [deviceA])
    // Restoring waits for silence; the notice waits for the restore.
    XCTAssertEqual(d.on(.volumeRestored), [], "a restore nobody asked for is ignored")
    XCTAssertEqual(d.on(.alertStopped), [.restoreVolume(user)])
    XCTAssertEqual(d.on(.volumeRestored), [.forgetSavedVolume, .sendNotice(1, deviceA)])
    XCTAssertEqual(d.c.status.state, .idle)
    XCTAssertEqual(d.c.status.lastEnd, .found)
    XCTAssertEqual(d.c.outstandingNotices, [1: deviceA])
  }

  func testNoticeResultIsReportedAndAFailureNeverRingsAgain() {
    var d = Drive()
    d.ring(deviceA)
    d.on(.found)
    d.on(.alertStopped)
    d.on(.volumeRestored)
    let s = d.step(.noticeResult(1, .failed("link lost")))
    XCTAssertEqual(s.reply, .noticeRecorded)
    XCTAssertEqual(
      s.actions, [.reportNoticeResult(1, deviceA, .failed("link lost")), .statusChanged])
    XCTAssertEqual(d.c.status.state, .idle)
    XCTAssertEqual(
      d.step(.noticeResult(1, .accepted)).reply, .unknownNotice, "one result per notice")
    XCTAssertEqual(d.on(.timerFired), [])
  }

  func testDeviceStopIsNotFound() {
    var d = Drive()
    d.ring(deviceA)
    let s = d.step(.deviceStop(deviceA))
    XCTAssertEqual(s.reply, .stopped)
    XCTAssertEqual(s.actions, [.timer(.cancel(.timeout)), .stopAlert, .statusChanged])
    XCTAssertEqual(d.on(.alertStopped), [.restoreVolume(user)])
    XCTAssertEqual(d.on(.volumeRestored), [.forgetSavedVolume])
    XCTAssertEqual(d.c.status.lastEnd, .deviceStop)
    XCTAssertTrue(d.c.outstandingNotices.isEmpty)
    XCTAssertEqual(d.step(.found).reply, .notRinging)
  }

  func testSecondStartWhileRingingStacksNothing() {
    var d = Drive()
    d.ring(deviceA)
    let again = d.step(.deviceStart(deviceA))
    XCTAssertEqual(again.reply, .alreadyRequested)
    XCTAssertEqual(again.actions, [])
    d.now += .seconds(30)
    let other = d.step(.deviceStart(deviceB))
    XCTAssertEqual(other.reply, .joined)
    XCTAssertEqual(other.actions, [.statusChanged], "no new alert, no new timer")
    XCTAssertEqual(d.c.status.requesters, [deviceA, deviceB])
    XCTAssertEqual(d.c.status.deadline, .zero + .seconds(1060), "the timeout is not extended")
  }

  func testTimeoutStopsWithoutNotice() {
    var d = Drive(settings: FindPhoneConfig(timeout: 60))
    d.ring(deviceA)
    d.now += .seconds(59)
    XCTAssertEqual(d.on(.timerFired), [], "early or stale firings change nothing")
    d.now += .seconds(1)
    XCTAssertEqual(d.on(.timerFired), [.timer(.cancel(.timeout)), .stopAlert])
    d.on(.alertStopped)
    XCTAssertEqual(d.on(.volumeRestored), [.forgetSavedVolume])
    XCTAssertEqual(d.c.status.lastEnd, .timeout)
    XCTAssertEqual(d.c.status.requesters, [])
  }

  func testTwoDevicesOneStopsTheOtherStillRings() {
    var d = Drive()
    d.ring(deviceA)
    d.on(.deviceStart(deviceB))
    let s = d.step(.deviceStop(deviceA))
    XCTAssertEqual(s.reply, .withdrawn)
    XCTAssertEqual(s.actions, [.statusChanged], "A's stop does not silence B's request")
    XCTAssertEqual(d.c.status.state, .ringing)
    XCTAssertEqual(d.step(.found).reply, .stopping(notify: [deviceB]))
    d.on(.alertStopped)
    XCTAssertEqual(d.on(.volumeRestored), [.forgetSavedVolume, .sendNotice(1, deviceB)])
  }

  func testTwoDevicesFoundGivesEachItsOwnNotice() {
    var d = Drive()
    d.ring(deviceA)
    d.on(.deviceStart(deviceB))
    XCTAssertEqual(d.step(.found).reply, .stopping(notify: [deviceA, deviceB]))
    XCTAssertEqual(d.step(.found).reply, .alreadyStopping, "a second found adds no notice")
    d.on(.alertStopped)
    XCTAssertEqual(
      d.on(.volumeRestored),
      [.forgetSavedVolume, .sendNotice(1, deviceA), .sendNotice(2, deviceB)])
    XCTAssertEqual(
      d.on(.noticeResult(2, .accepted)), [.reportNoticeResult(2, deviceB, .accepted)])
    XCTAssertEqual(
      d.on(.noticeResult(1, .failed("no"))), [.reportNoticeResult(1, deviceA, .failed("no"))])
  }

  func testStopFromADeviceThatNeverAskedChangesNothing() {
    var d = Drive()
    d.ring(deviceA)
    let s = d.step(.deviceStop(deviceC))
    XCTAssertEqual(s.reply, .notRequested)
    XCTAssertEqual(s.actions, [])
  }

  func testFoundWhileSavingNeverStartsTheAlert() {
    var d = Drive()
    d.on(.deviceStart(deviceA))
    XCTAssertEqual(d.on(.found), [.timer(.cancel(.timeout))])
    XCTAssertEqual(
      d.on(.volumeSaved(user, headphones: false)), [.forgetSavedVolume, .sendNotice(1, deviceA)],
      "nothing was raised: no restore, no alert")
  }

  func testStartWhileStoppingIsQueuedAndRingsAfterTheNotice() {
    var d = Drive()
    d.ring(deviceA)
    d.on(.found)
    XCTAssertEqual(d.step(.deviceStart(deviceB)).reply, .queued)
    d.on(.alertStopped)
    d.now += .seconds(1)
    XCTAssertEqual(
      d.on(.volumeRestored),
      [
        .forgetSavedVolume, .sendNotice(1, deviceA),
        .timer(.arm(.timeout, at: d.now + .seconds(60))),
        .saveUserVolume,
      ])
    XCTAssertEqual(d.c.status.requesters, [deviceB])
  }

  func testFoundAlsoAnswersQueuedRequests() {
    var d = Drive()
    d.ring(deviceA)
    d.on(.deviceStop(deviceA))
    d.on(.deviceStart(deviceB))
    XCTAssertEqual(d.step(.found).reply, .stopping(notify: [deviceB]))
    d.on(.alertStopped)
    XCTAssertEqual(d.on(.volumeRestored), [.forgetSavedVolume, .sendNotice(1, deviceB)])
    XCTAssertEqual(d.c.status.state, .idle)
  }

  func testLeftoverSavedVolumeIsRestoredAtStart() {
    var d = Drive()
    XCTAssertEqual(d.on(.recover(user)), [.restoreVolume(user)])
    XCTAssertEqual(d.c.status.state, .recovering)
    XCTAssertEqual(d.step(.deviceStart(deviceA)).reply, .queued)
    XCTAssertEqual(
      d.on(.volumeRestored),
      [.forgetSavedVolume, .timer(.arm(.timeout, at: d.now + .seconds(60))), .saveUserVolume])
  }

  func testFailedRestoreStillNotifiesAndKeepsTheSavedVolume() {
    var d = Drive()
    d.ring(deviceA)
    d.on(.found)
    d.on(.alertStopped)
    XCTAssertEqual(d.on(.volumeRestoreFailed("mixer gone")), [.sendNotice(1, deviceA)])
    // The next ring must not save the raised level over the user's.
    XCTAssertEqual(
      d.on(.deviceStart(deviceB)),
      [.timer(.arm(.timeout, at: d.now + .seconds(60))), .raiseVolume(0.9), .startAlert])
    d.on(.deviceStop(deviceB))
    XCTAssertEqual(d.on(.alertStopped), [.restoreVolume(user)])
  }

  func testFailedSaveRingsWithoutRaising() {
    var d = Drive()
    d.on(.deviceStart(deviceA))
    XCTAssertEqual(d.on(.volumeSaveFailed("read-only")), [.startAlert])
    XCTAssertNil(d.c.status.level)
    d.on(.found)
    XCTAssertEqual(d.on(.alertStopped), [.sendNotice(1, deviceA)], "nothing to restore")
  }

  func testAlertFailureEndsTheRingWithoutNotice() {
    var d = Drive()
    d.ring(deviceA)
    XCTAssertEqual(
      d.on(.alertFailed("no device")), [.timer(.cancel(.timeout)), .restoreVolume(user)])
    XCTAssertEqual(d.on(.volumeRestored), [.forgetSavedVolume])
    XCTAssertEqual(d.c.status.lastEnd, .alertFailed)
    XCTAssertTrue(d.c.outstandingNotices.isEmpty)
  }

  func testDeviceGoneFailsItsOutstandingNotices() {
    var d = Drive()
    d.ring(deviceA)
    d.on(.deviceStart(deviceB))
    d.on(.found)
    d.on(.alertStopped)
    d.on(.volumeRestored)
    XCTAssertEqual(
      d.on(.deviceGone(deviceB)),
      [.reportNoticeResult(2, deviceB, .failed("the device disconnected"))])
    XCTAssertEqual(d.c.outstandingNotices, [1: deviceA])
  }

  func testFoundWhenIdleIsNotRinging() {
    var d = Drive()
    let s = d.step(.found)
    XCTAssertEqual(s.reply, .notRinging)
    XCTAssertEqual(s.actions, [])
  }

  func testSavedVolumeRoundTripsAndRejectsGarbage() {
    let v = VolumeSetting(level: 0.42, muted: true)
    XCTAssertEqual(SavedVolume.encode(v), "earshot-saved-volume 1 level=0.420000 muted=1\n")
    XCTAssertEqual(SavedVolume.decode(SavedVolume.encode(v)), v)
    XCTAssertNil(SavedVolume.decode(""))
    XCTAssertNil(SavedVolume.decode("earshot-saved-volume 1 level=0.4"), "truncated")
    XCTAssertNil(SavedVolume.decode("earshot-saved-volume 1 level=7 muted=0"))
    XCTAssertNil(SavedVolume.decode("earshot-saved-volume 2 level=0.1 muted=0"))
    XCTAssertNil(SavedVolume.decode("earshot-saved-volume 1 level=nan muted=0"))
  }
}
