import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

/// Real ALSA through a sound server's null sink: play, record the monitor,
/// measure the recording. PulseAudio here (ALSA's `default`),
/// `PipeWireAlertPlayerTests` the same on PipeWire (the `pipewire` PCM).
class AlertPlayerTests: XCTestCase {
  var recorder: MonitorRecorder!
  var server: SoundServer { .pulse }

  override func setUpWithError() throws {
    try server.require()
    try server.resetSink()
    recorder = try MonitorRecorder.shared(server)
  }

  override class func tearDown() {
    MonitorRecorder.stopShared()
  }

  struct Played {
    let recording: Recording
    let requested: Int
    let onset: Int
    let stopped: Int
    let player: AlertPlayer
    /// Milliseconds from the request to the first sound in the recording.
    var onsetMs: Double { Double(onset - requested) * 1000 / Double(recording.rate) }
  }

  /// Starts `sound`, services it from a poll loop for `seconds`, stops it,
  /// and records half a second after the stop.
  func play(
    _ sound: AlertSound, seconds: Double, ramp: GainRamp? = nil,
    settings: AlertPlayer.Settings? = nil, stall: Double = 0
  ) throws -> Played {
    usleep(200_000)  // a quiet gap before, so the onset is this sound's
    let player = AlertPlayer(settings: settings ?? .init(device: server.card))
    let requestedAt = Clock.monotonicNanos()
    try player.start(sound: sound, ramp: ramp)
    let fds = player.pollDescriptors()
    XCTAssertFalse(fds.isEmpty, "a playing PCM has descriptors to poll")
    let end = requestedAt + UInt64(seconds * 1e9)
    var stalled = stall == 0
    while Clock.monotonicNanos() < end {
      if !stalled && Clock.monotonicNanos() > requestedAt + 300_000_000 {
        usleep(useconds_t(stall * 1e6))  // the loop is held up: the device underruns
        stalled = true
      }
      var ready = fds
      let now = Clock.monotonicNanos()
      let left = now < end ? Int32((end - now) / 1_000_000) : 0
      let n = ready.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), left) }
      if n > 0 { try player.handleReady(ready) }
    }
    let stoppedAt = Clock.monotonicNanos()
    print("audio: \(sound.name) played \(seconds) s with \(player.recoveries) recoveries")
    player.stop()
    XCTAssertFalse(player.isPlaying)
    XCTAssertTrue(player.pollDescriptors().isEmpty)
    recorder.waitUntilRecorded(past: stoppedAt, seconds: 0.6)
    let recording = Recording(samples: recorder.samples())
    let requested = recorder.index(at: requestedAt)
    // Search from a little before the request: the recording's clock is
    // known to a few milliseconds, and the 200 ms before were quiet.
    let onset = try XCTUnwrap(
      recording.onset(after: requested - recording.frames(100)),
      "no sound recorded after the request")
    return Played(
      recording: recording, requested: requested, onset: onset,
      stopped: recorder.index(at: stoppedAt), player: player)
  }

  func assertSilentAfterStop(_ p: Played, file: StaticString = #filePath, line: UInt = #line) {
    // Within one period (10 ms), with 20 ms for the recording's clock.
    let after = p.recording.slice(from: p.stopped, 30, 600)
    XCTAssertGreaterThan(
      after.count, 25_000, "recording too short after stop", file: file, line: line)
    XCTAssertLessThan(SignalMeasure.dbfs(after), -60, "sound after stop", file: file, line: line)
    let tail = p.recording.lastSound(
      from: p.stopped - p.recording.frames(100), before: p.stopped + p.recording.frames(600))
    let tailMs = tail.map { Double($0 - p.stopped) * 1000 / Double(p.recording.rate) } ?? -100
    print("audio: sound ends \(JSONLine.format(tailMs, decimals: 1)) ms after stop()")
  }

  func testRingPlaysBothTonesStartsPromptlyAndStopsSilent() throws {
    let p = try play(.pattern(.ring(frequency: 800)), seconds: 1.0)
    print(
      "audio: ring onset \(JSONLine.format(p.onsetMs, decimals: 1)) ms after start(); first write "
        + "\(JSONLine.format(Double(p.player.startLatencyNanos) / 1e6, decimals: 1)) ms; "
        + "period \(p.player.periodFrames) frames, buffer \(p.player.bufferFrames)")
    XCTAssertEqual(p.player.device, server.card)
    XCTAssertEqual(p.player.periodFrames, 480)  // 10 ms at 48 kHz
    XCTAssertGreaterThanOrEqual(p.onsetMs, -20)
    XCTAssertLessThan(p.onsetMs, 250, "sound must start promptly after the request")
    let r = p.recording
    // Both tones, over the whole second (robust to a dropout on a loaded
    // machine), and the first 50 ms is the lower one.
    let (a, b) = r.twoStrongest(from: p.onset, 0, 1000)
    XCTAssertEqual(min(a, b), 800, accuracy: 10)
    XCTAssertEqual(max(a, b), 1000, accuracy: 10)
    XCTAssertEqual(r.dominant(from: p.onset, 8, 45), 800, accuracy: 20)
    XCTAssertGreaterThan(SignalMeasure.dbfs(r.slice(from: p.onset, 0, 1000)), -10)
    assertSilentAfterStop(p)
  }

  func testChirpRisesAtTheConfiguredFrequency() throws {
    let p = try play(.pattern(.chirp(frequency: 700)), seconds: 0.7)
    let r = p.recording
    let early = r.dominant(from: p.onset, 10, 100)
    let late = r.dominant(from: p.onset, 400, 490)
    XCTAssertTrue((690...880).contains(early), "early \(early)")
    XCTAssertTrue((1220...1410).contains(late), "late \(late)")
    assertSilentAfterStop(p)
  }

  func testBeepAtACustomFrequency() throws {
    let p = try play(.pattern(.beep(frequency: 1500)), seconds: 0.6)
    XCTAssertEqual(p.recording.dominant(from: p.onset, 20, 280), 1500, accuracy: 10)
    assertSilentAfterStop(p)
  }

  func testSoundFilesFromTheSoundsDirectory() throws {
    let library = SoundLibrary(directory: Self.soundsDirectory)
    XCTAssertEqual(library.files(), ["bell.flac", "descend.flac", "pips.wav"])
    // pips.wav: 1760 Hz pips at 48 kHz. bell.flac: 1320 Hz at 44.1 kHz.
    let pips = try play(library.resolve("pips"), seconds: 0.5)
    XCTAssertEqual(pips.recording.dominant(from: pips.onset, 10, 90), 1760, accuracy: 10)
    assertSilentAfterStop(pips)
    let bell = try play(library.resolve("bell.flac"), seconds: 0.5)
    XCTAssertEqual(bell.player.periodFrames, 480, "a 44.1 kHz file is converted to 48 kHz")
    XCTAssertLessThanOrEqual(bell.player.recoveries, server.startRecoveries)
    XCTAssertEqual(bell.recording.dominant(from: bell.onset, 10, 200), 1320, accuracy: 10)
    assertSilentAfterStop(bell)
  }

  func testRampRisesFromQuietToFullAndHolds() throws {
    // beep: 0.3 s on, 0.2 s off; ramp -30 dB to full over 2 s. Played
    // 3.4 s so the last window (3.18 s after the onset) ends before the
    // stop however late the server starts (PipeWire: up to 165 ms).
    let p = try play(.pattern(.beep(frequency: 1000)), seconds: 3.4, ramp: GainRamp(seconds: 2))
    let r = p.recording
    let first = r.peakLevel(from: p.onset, 20, 280)
    let held1 = r.peakLevel(from: p.onset, 2520, 2780)
    let held2 = r.peakLevel(from: p.onset, 3020, 3180)
    XCTAssertLessThan(first, held1 - 20, "starts about 28 dB down")
    XCTAssertEqual(held1, held2, accuracy: 1, "holds at full")
    XCTAssertEqual(held1, -6, accuracy: 2, "full is the pattern's 0.7 peak (-6 dBFS RMS)")
  }

  func testRecoversWhenTheLoopStalls() throws {
    let p = try play(.pattern(.beep(frequency: 1200)), seconds: 1.5, stall: 0.3)
    // After the stall the alert keeps playing.
    let late = p.recording.slice(from: p.stopped, -480, -20)
    XCTAssertGreaterThan(SignalMeasure.rms(late), 0.05, "still playing after the stall")
    print("audio: recoveries after a 300 ms stall: \(p.player.recoveries)")
    XCTAssertGreaterThanOrEqual(p.player.recoveries, 1, "a 300 ms stall underruns a 40 ms buffer")
    assertSilentAfterStop(p)
  }

  func testFallsBackInOrderAndNamesEachFailure() throws {
    let player = AlertPlayer(
      settings: .init(device: "hw:7,0", fallbacks: ["earshot_no_such_pcm", server.card]))
    try player.start(sound: .pattern(.beep(frequency: 1000)))
    defer { player.stop() }
    XCTAssertEqual(player.device, server.card)
    XCTAssertEqual(player.skipped.map(\.device), ["hw:7,0", "earshot_no_such_pcm"])
    XCTAssertTrue(player.skipped[0].description.contains("cannot open audio device 'hw:7,0'"))
    XCTAssertTrue(player.skipped[0].description.contains("aplay -L"))
  }

  func testNoDeviceAtAllSaysWhichAndWhy() throws {
    let player = AlertPlayer(settings: .init(device: "hw:7,0", fallbacks: ["plughw:8,0"]))
    XCTAssertThrowsError(try player.start(sound: .pattern(.ring(frequency: 800)))) { error in
      let text = "\(error)"
      XCTAssertTrue(text.contains("'hw:7,0'"), text)
      XCTAssertTrue(text.contains("'plughw:8,0'"), text)
      XCTAssertTrue(text.contains("No such file or directory"), text)
    }
    XCTAssertFalse(player.isPlaying)
  }

  func testBusyDeviceErrorSaysWhatToDo() {
    let e = AudioDeviceError(device: "hw:0,0", action: "open", code: -EBUSY)
    XCTAssertEqual(
      e.description,
      "cannot open audio device 'hw:0,0': Device or resource busy (another program is using it; "
        + "close that program or use a shared device such as 'default')")
  }

  func testRestartReplacesThePlayingSound() throws {
    let player = AlertPlayer(settings: .init(device: server.card))
    try player.start(sound: .pattern(.beep(frequency: 1000)))
    let first = player.pollDescriptors()
    try player.start(sound: .pattern(.chirp(frequency: 1000)))
    XCTAssertTrue(player.isPlaying)
    XCTAssertFalse(player.pollDescriptors().isEmpty)
    _ = first
    player.stop()
    player.stop()  // idempotent
    XCTAssertFalse(player.isPlaying)
  }

  static var soundsDirectory: String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent("sounds").path
  }
}

/// The alert tests that play, on PipeWire.
final class PipeWireAlertPlayerTests: AlertPlayerTests {
  override var server: SoundServer { .pipewire }

  /// Linux test discovery lists a class by the tests it declares (then
  /// runs the inherited ones too), so each PipeWire class declares this.
  func testTheServerIsPipeWire() throws { try server.assertIsPipeWire() }
}
