import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

/// The daemon's audio (AlertOutput, VolumeControl) over ALSA, driven by a
/// real EventLoop, against the PulseAudio test server
/// (`PipeWireDaemonAudioTests`: the same on PipeWire).
class DaemonAudioTests: XCTestCase {
  var recorder: MonitorRecorder!
  var server: SoundServer { .pulse }

  override func setUpWithError() throws {
    try server.require()
    try server.resetSink()
    recorder = try MonitorRecorder.shared(server)
  }

  override func tearDown() {
    server.resetSinkQuietly()
  }

  override class func tearDown() {
    MonitorRecorder.stopShared()
  }

  func config(sound: String = "beep", frequency: Double = 1300) -> AudioConfig {
    var c = AudioConfig()
    c.sound = sound
    c.frequency = frequency
    c.ramp = 0
    c.device = server.card
    c.mixerCard = server.card
    return c
  }

  func testAlertPlaysOnTheLoopAndStopsSilent() throws {
    var logged: [String] = []
    let loop = try EventLoop()
    let (alert, volume) = try DaemonAudio.make(
      config(), findPhoneSound: nil, loop: loop, log: { logged.append($0) })
    XCTAssertNotNil(volume)
    XCTAssertEqual(logged, [])
    var failure: String? = nil
    alert.onFailure = { failure = $0 }
    usleep(200_000)
    let requested = Clock.monotonicNanos()
    try alert.startAlert()
    try alert.startAlert()  // a second start stacks nothing
    var stoppedAt: UInt64 = 0
    loop.after(seconds: 0.8) {
      alert.stopAlert()
      stoppedAt = Clock.monotonicNanos()
      loop.stop()
    }
    try loop.run()
    XCTAssertNil(failure)
    XCTAssertFalse(alert.player.isPlaying)
    recorder.waitUntilRecorded(past: stoppedAt, seconds: 0.5)
    let rec = Recording(samples: recorder.samples())
    let onset = try XCTUnwrap(rec.onset(after: recorder.index(at: requested) - rec.frames(50)))
    XCTAssertEqual(rec.dominant(from: onset, 20, 280), 1300, accuracy: 10)
    XCTAssertGreaterThan(rec.peakLevel(from: onset, 500, 780), -10, "still playing at 0.5 s")
    XCTAssertLessThan(
      SignalMeasure.dbfs(rec.slice(from: recorder.index(at: stoppedAt), 30, 500)), -60)
  }

  func testFindPhoneSoundOverridesTheAudioSound() throws {
    let (alert, _) = try DaemonAudio.make(
      config(sound: "ring"), findPhoneSound: "chirp", loop: try EventLoop(), log: { _ in })
    XCTAssertEqual(alert.sound.name, "chirp")
  }

  func testAnUnknownSoundIsAConfigError() {
    XCTAssertThrowsError(
      try DaemonAudio.make(
        config(sound: "siren"), findPhoneSound: nil, loop: try EventLoop(), log: { _ in })
    ) { error in
      XCTAssertTrue("\(error)".hasPrefix("[audio] sound: no sound named 'siren'"), "\(error)")
    }
  }

  func testAMissingMixerIsLoggedNotFatal() throws {
    var c = config()
    c.mixerCard = "hw:7"
    var logged: [String] = []
    let (_, volume) = try DaemonAudio.make(
      c, findPhoneSound: nil, loop: try EventLoop(), log: { logged.append($0) })
    XCTAssertNil(volume)
    XCTAssertEqual(logged.count, 1)
    XCTAssertTrue(logged[0].contains("cannot open the mixer of card 'hw:7'"), logged[0])
  }

  func testVolumeControlSetsExactlyAndReportsOthersChanges() throws {
    let loop = try EventLoop()
    let (_, v) = try DaemonAudio.make(config(), findPhoneSound: nil, loop: loop, log: { _ in })
    let volume = try XCTUnwrap(v)
    XCTAssertFalse(volume.outputIsHeadphones(), "a sound server's plugin has no jack control")
    try volume.setVolume(VolumeSetting(level: 0.4, muted: true))
    XCTAssertEqual(try volume.currentVolume().level, 0.4, accuracy: 0.0001)
    XCTAssertTrue(try volume.currentVolume().muted)
    XCTAssertTrue(try server.pactl("get-sink-mute", server.sink).contains("yes"))
    try volume.setVolume(VolumeSetting(level: 0.7, muted: false))
    XCTAssertEqual(try volume.currentVolume().level, 0.7, accuracy: 0.0001)
    XCTAssertFalse(try volume.currentVolume().muted)

    var changes: [VolumeSetting] = []
    volume.onChange = { changes.append($0) }
    let server = self.server
    loop.after(seconds: 0.1) {
      _ = try? server.pactl("set-sink-volume", server.sink, "55%")
    }
    loop.after(seconds: 1.5) { loop.stop() }
    try loop.run()
    XCTAssertEqual(changes.last?.level ?? -1, 0.55, accuracy: 0.005)
    XCTAssertEqual(changes.last?.muted, false)
  }
}

/// The daemon's audio on PipeWire.
final class PipeWireDaemonAudioTests: DaemonAudioTests {
  override var server: SoundServer { .pipewire }

  /// Linux test discovery lists a class by the tests it declares (then
  /// runs the inherited ones too), so each PipeWire class declares this.
  func testTheServerIsPipeWire() throws { try server.assertIsPipeWire() }
}
