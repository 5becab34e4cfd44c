import XCTest

@testable import EarshotCore

/// Mild starts (the Immediate Alert service's level 1): the alert plays at
/// the user's own level; a high request raises it.
final class FindPhoneMildTests: XCTestCase {
  let quiet = VolumeSetting(level: 0.4, muted: false)
  let muted = VolumeSetting(level: 0.4, muted: true)

  func testMildRingsAtTheUsersLevelWithoutTouchingTheMixer() {
    var d = Drive()
    let s = d.step(.deviceStartMild(deviceC))
    XCTAssertEqual(s.reply, .ringing)
    XCTAssertEqual(
      s.actions,
      [.timer(.arm(.timeout, at: d.now + .seconds(60))), .saveUserVolume, .statusChanged],
      "the volume is still saved: a high request may raise it later")
    XCTAssertEqual(d.on(.volumeSaved(quiet, headphones: false)), [.startAlert])
    XCTAssertEqual(d.c.status.state, .ringing)
    XCTAssertNil(d.c.status.level, "not raised")
    // Nothing to restore at the end: the saved copy is only forgotten.
    XCTAssertEqual(d.on(.deviceStop(deviceC)), [.timer(.cancel(.timeout)), .stopAlert])
    XCTAssertEqual(d.on(.alertStopped), [.forgetSavedVolume])
    XCTAssertEqual(d.c.status.state, .idle)
    XCTAssertEqual(d.c.status.lastEnd, .deviceStop)
  }

  func testMildUnmutesAtTheUsersLevelAndRestoresTheMute() {
    var d = Drive()
    d.on(.deviceStartMild(deviceC))
    XCTAssertEqual(d.on(.volumeSaved(muted, headphones: false)), [.raiseVolume(0.4), .startAlert])
    XCTAssertEqual(d.c.status.level, 0.4)
    d.on(.deviceStop(deviceC))
    XCTAssertEqual(d.on(.alertStopped), [.restoreVolume(muted)])
  }

  func testMildIsNeverLouderThanHigh() {
    var d = Drive(settings: FindPhoneConfig(volume: 0.9, headphoneVolume: 0.3))
    d.on(.deviceStartMild(deviceC))
    XCTAssertEqual(
      d.on(.volumeSaved(VolumeSetting(level: 0.8, muted: false), headphones: true)),
      [.raiseVolume(0.3), .startAlert], "headphones cap a mild ring too")
  }

  func testAHighRequestRaisesAMildRing() {
    var d = Drive()
    d.on(.deviceStartMild(deviceC))
    d.on(.volumeSaved(quiet, headphones: false))
    let s = d.step(.deviceStart(deviceA))
    XCTAssertEqual(s.reply, .joined)
    XCTAssertEqual(s.actions, [.raiseVolume(0.9), .statusChanged])
    XCTAssertEqual(d.c.status.level, 0.9)
    // The high one withdraws: the ring stays raised until it ends.
    XCTAssertEqual(d.on(.deviceStop(deviceA)), [])
    XCTAssertEqual(d.c.status.level, 0.9)
    d.on(.deviceStop(deviceC))
    XCTAssertEqual(d.on(.alertStopped), [.restoreVolume(quiet)])
  }

  func testTheSameDeviceGoingFromMildToHighRaisesButNotBack() {
    var d = Drive()
    d.on(.deviceStartMild(deviceC))
    d.on(.volumeSaved(quiet, headphones: false))
    let up = d.step(.deviceStart(deviceC))
    XCTAssertEqual(up.reply, .alreadyRequested)
    XCTAssertEqual(up.actions, [.raiseVolume(0.9), .statusChanged])
    let down = d.step(.deviceStartMild(deviceC))
    XCTAssertEqual(down.reply, .alreadyRequested)
    XCTAssertEqual(down.actions, [])
  }

  func testAMildJoinerLeavesAHighRingAsItIs() {
    var d = Drive()
    d.ring(deviceA)
    let s = d.step(.deviceStartMild(deviceC))
    XCTAssertEqual(s.reply, .joined)
    XCTAssertEqual(s.actions, [.statusChanged])
    XCTAssertEqual(d.c.status.level, 0.9)
  }

  func testAHighRequestDuringTheSaveRaisesOnceSaved() {
    var d = Drive()
    d.on(.deviceStartMild(deviceC))
    XCTAssertEqual(d.step(.deviceStart(deviceA)).reply, .joined)
    XCTAssertEqual(d.on(.volumeSaved(quiet, headphones: false)), [.raiseVolume(0.9), .startAlert])
  }

  func testFoundAfterAMildRingNotifiesAsEver() {
    var d = Drive()
    d.on(.deviceStartMild(deviceC))
    d.on(.volumeSaved(quiet, headphones: false))
    XCTAssertEqual(d.step(.found).reply, .stopping(notify: [deviceC]))
    XCTAssertEqual(d.on(.alertStopped), [.forgetSavedVolume, .sendNotice(1, deviceC)])
  }

  func testAMildRequestQueuedBehindAStopRingsMildNext() {
    var d = Drive()
    d.ring(deviceA)
    d.on(.found)
    XCTAssertEqual(d.step(.deviceStartMild(deviceC)).reply, .queued)
    d.on(.alertStopped)
    XCTAssertEqual(
      d.on(.volumeRestored),
      [
        .forgetSavedVolume, .sendNotice(1, deviceA),
        .timer(.arm(.timeout, at: d.now + .seconds(60))),
        .saveUserVolume,
      ])
    XCTAssertEqual(d.on(.volumeSaved(quiet, headphones: false)), [.startAlert])
  }
}

final class AlertLevelTests: XCTestCase {
  func testDecodesTheThreeLevels() {
    XCTAssertEqual(AlertLevel.decode([0]), .success(.none))
    XCTAssertEqual(AlertLevel.decode([1]), .success(.mild))
    XCTAssertEqual(AlertLevel.decode([2]), .success(.high))
    for level in AlertLevel.allCases {
      XCTAssertEqual(AlertLevel.decode(level.encoded), .success(level), "round trip")
      XCTAssertEqual(AlertLevel(name: level.description), level)
    }
  }

  func testRejectsReservedValuesLengthsAndOffsets() {
    for v in UInt8(3)...255 {
      XCTAssertEqual(AlertLevel.decode([v]), .failure(.reserved(v)))
    }
    XCTAssertEqual(AlertLevel.decode([UInt8]()), .failure(.length(0)))
    XCTAssertEqual(AlertLevel.decode([1, 0]), .failure(.length(2)))
    XCTAssertEqual(AlertLevel.decode([1], offset: 1), .failure(.nonZeroOffset(1)))
    XCTAssertEqual(
      "\(AlertLevel.DecodeError.reserved(7))", "alert level 7 is reserved (0 none, 1 mild, 2 high)")
  }

  func testNames() {
    XCTAssertEqual(AlertLevel(name: "OFF"), AlertLevel.none)
    XCTAssertEqual(AlertLevel(name: "2"), .high)
    XCTAssertNil(AlertLevel(name: "loud"))
    XCTAssertEqual(AlertLevel.immediateAlertService, 0x1802)
    XCTAssertEqual(AlertLevel.characteristic, 0x2A06)
  }
}
