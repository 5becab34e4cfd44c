import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

/// Find-phone end to end with real audio: `earshot run` plays through ALSA's
/// `default` (the PulseAudio test server; `PipeWireFindPhoneAudioTests`:
/// the `pipewire` PCM and ctl), the null sink's monitor is recorded, and the
/// mixer is read back with pactl.
class FindPhoneAudioTests: XCTestCase {
  var recorder: MonitorRecorder!
  var server: SoundServer { .pulse }

  override func setUpWithError() throws {
    try server.require()
    try server.resetSink()
    recorder = try MonitorRecorder.shared(server)
  }

  override func tearDown() { server.resetSinkQuietly() }
  override class func tearDown() { MonitorRecorder.stopShared() }

  var config: String {
    """
    [audio]
    sound = beep
    frequency = 1300
    ramp = 0
    device = \(server.card)
    mixer_card = \(server.card)
    [find-phone]
    volume = 0.9
    timeout = 60
    """
  }

  /// The sink's volume as pactl prints it (percent of the first channel).
  func sinkVolume() throws -> Int {
    let out = try server.pactl("get-sink-volume", server.sink)
    let percent = out.split(separator: "/").dropFirst().first.map {
      $0.trimmingCharacters(in: .whitespaces)
    }
    return Int(percent?.dropLast() ?? "") ?? -1
  }

  func sinkMuted() throws -> Bool {
    try server.pactl("get-sink-mute", server.sink).contains("yes")
  }

  func testRingIsAudibleAndFoundSilencesAndRestoresBeforeTheNotice() throws {
    // The user's own setting: quiet and muted.
    try server.pactl("set-sink-volume", server.sink, "30%")
    try server.pactl("set-sink-mute", server.sink, "1")
    let agent = try AgentProcess(config: config, audio: true)
    let buds = try ControlClient.device("buds", at: agent.socket)

    let requested = Clock.monotonicNanos()
    XCTAssertEqual(try buds.ok(.findStart)["result"], .string("ringing"))
    XCTAssertEqual(try sinkMuted(), false, "ringing unmutes")
    XCTAssertEqual(try sinkVolume(), 90, "ringing raises to [find-phone] volume")
    usleep(700_000)

    // found: the CLI returns once the alert is stopped and the volume restored.
    let found = try runEarshot(["found", "--socket", agent.socket])
    XCTAssertEqual(found.status, 0, found.err)
    let foundAt = Clock.monotonicNanos()
    // Read back the mixer the moment the notice is in the device's hands.
    let notice = try XCTUnwrap(try buds.waitFor(event: "notice"))
    let volumeAtNotice = try sinkVolume()
    let mutedAtNotice = try sinkMuted()
    XCTAssertEqual(notice["kind"], .string("phone_found"))
    XCTAssertEqual(volumeAtNotice, 30, "volume restored before the notice")
    XCTAssertTrue(mutedAtNotice, "mute restored before the notice")
    _ = try buds.ok(.noticeAck(NoticeID(try XCTUnwrap(notice["notice"]?.integer))))

    recorder.waitUntilRecorded(past: foundAt, seconds: 0.6)
    let rec = Recording(samples: recorder.samples())
    let onset = try XCTUnwrap(
      rec.onset(after: recorder.index(at: requested) - rec.frames(50)), "no tone")
    XCTAssertEqual(
      rec.dominant(from: onset, 20, 400), 1300, accuracy: 15, "the configured alert played")
    // After found returned the output is silent (muted sink or dropped PCM).
    XCTAssertLessThan(SignalMeasure.dbfs(rec.slice(from: recorder.index(at: foundAt), 0, 500)), -60)
    XCTAssertEqual(agent.stop(), 0)
  }

  func testFailedNoticeLeavesItSilentAndTimeoutStops() throws {
    try server.pactl("set-sink-volume", server.sink, "40%")
    let agent = try AgentProcess(
      config: config.replacingOccurrences(of: "timeout = 60", with: "timeout = 1"), audio: true)
    let buds = try ControlClient.device("buds", at: agent.socket)
    XCTAssertEqual(try buds.ok(.findStart)["result"], .string("ringing"))
    // Wait for the timeout to end the ring (the find event says idle).
    var state = ""
    while state != "idle", let e = try buds.nextEvent(timeoutMillis: 30_000) {
      if e["event"]?.string == "find" { state = e["find"]?["state"]?.string ?? "" }
    }
    XCTAssertEqual(state, "idle")
    XCTAssertEqual(try sinkVolume(), 40, "timeout restores the volume")
    XCTAssertEqual(try agent.client().ok(.findStatus)["find"]?["last_end"], .string("timeout"))
    XCTAssertFalse(
      try buds.eventsSoFar().contains { $0["event"] == .string("notice") }, "a timeout is not found"
    )

    // Ring again, found, and fail the notice: nothing rings again.
    XCTAssertEqual(try buds.ok(.findStart)["result"], .string("ringing"))
    _ = try agent.client().ok(.found)
    let notice = try XCTUnwrap(try buds.waitFor(event: "notice"))
    let failedAt = Clock.monotonicNanos()
    _ = try buds.ok(.noticeFail(NoticeID(try XCTUnwrap(notice["notice"]?.integer)), reason: "test"))
    usleep(500_000)
    XCTAssertEqual(try agent.client().ok(.findStatus)["find"]?["state"], .string("idle"))
    recorder.waitUntilRecorded(past: failedAt, seconds: 0.6)
    let rec = Recording(samples: recorder.samples())
    XCTAssertLessThan(
      SignalMeasure.dbfs(rec.slice(from: recorder.index(at: failedAt), 0, 600)), -60)
    XCTAssertEqual(agent.stop(), 0)
  }

  func testKilledMidAlertTheNextStartRestoresTheVolume() throws {
    try server.pactl("set-sink-volume", server.sink, "25%")
    let first = try AgentProcess(config: config, audio: true)
    let buds = try ControlClient.device("buds", at: first.socket)
    XCTAssertEqual(try buds.ok(.findStart)["result"], .string("ringing"))
    XCTAssertEqual(try sinkVolume(), 90)
    kill(first.process.processIdentifier, SIGKILL)
    first.process.waitUntilExit()
    XCTAssertEqual(try sinkVolume(), 90, "nobody restored it yet")

    // A new agent on the same state directory restores the saved volume.
    let second = try AgentProcess(
      config: config, arguments: [], audio: true, directory: first.directory)
    XCTAssertEqual(try sinkVolume(), 25, "restored at start")
    XCTAssertEqual(second.stop(), 0)
  }
}

/// Find-phone with real audio on PipeWire.
final class PipeWireFindPhoneAudioTests: FindPhoneAudioTests {
  override var server: SoundServer { .pipewire }

  /// Linux test discovery lists a class by the tests it declares (then
  /// runs the inherited ones too), so each PipeWire class declares this.
  func testTheServerIsPipeWire() throws { try server.assertIsPipeWire() }
}
