import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

/// `earshot alert` and `earshot sounds` as a user runs them, recorded
/// from PulseAudio's null sink.
final class AlertCommandTests: XCTestCase {
  var recorder: MonitorRecorder!

  override func setUpWithError() throws {
    try PulseServer.require()
    try PulseServer.resetSink()
    recorder = try MonitorRecorder.shared()
  }

  override class func tearDown() {
    MonitorRecorder.stopShared()
  }

  func testPlaysForTheDurationAtTheFrequencyAsked() throws {
    usleep(200_000)
    let requested = Clock.monotonicNanos()
    let r = try Earshot.run([
      "alert", "--sound", "ring", "--frequency", "1500", "--duration", "0.6",
    ])
    let exited = Clock.monotonicNanos()
    XCTAssertEqual(r.status, 0, r.stderr)
    let lines = r.stdout.split(separator: "\n").map(String.init)
    XCTAssertEqual(lines.count, 2, r.stdout)
    XCTAssertTrue(
      lines[0].hasPrefix("{\"event\":\"playing\",\"device\":\"default\",\"sound\":\"ring\""),
      lines[0])
    XCTAssertTrue(lines[1].hasPrefix("{\"event\":\"stopped\",\"reason\":\"duration\""), lines[1])
    recorder.waitUntilRecorded(past: exited, seconds: 0.3)
    let rec = Recording(samples: recorder.samples())
    let onset = try XCTUnwrap(rec.onset(after: recorder.index(at: requested)))
    XCTAssertEqual(rec.dominant(from: onset, 8, 45), 1500, accuracy: 15)
    XCTAssertEqual(rec.dominant(from: onset, 58, 95), 1875, accuracy: 15)
    // The ring's first 1.2 s are all tone, so the sound ends when the
    // command stops it: 0.6 s after it started (which is after our
    // request), and before it exited.
    let last = try XCTUnwrap(
      rec.lastSound(from: onset, before: recorder.index(at: exited) + rec.frames(300)))
    XCTAssertGreaterThanOrEqual(last, recorder.index(at: requested) + rec.frames(600 - 20))
    XCTAssertLessThanOrEqual(last, recorder.index(at: exited) + rec.frames(30))
  }

  func testSIGINTStopsAtOnceAndExitsCleanly() throws {
    usleep(200_000)
    let p = Process()
    p.executableURL = URL(fileURLWithPath: Earshot.binary)
    p.arguments = ["alert", "--sound", "ring", "--frequency", "600"]
    let out = Pipe()
    p.standardOutput = out
    p.standardError = FileHandle.nullDevice
    try p.run()
    let lines = LineReader(out.fileHandleForReading.fileDescriptor)
    let playing = try XCTUnwrap(lines.next())
    XCTAssertTrue(playing.contains("\"event\":\"playing\""), playing)
    usleep(700_000)
    let interruptedAt = Clock.monotonicNanos()
    kill(p.processIdentifier, SIGINT)
    p.waitUntilExit()
    XCTAssertEqual(p.terminationReason, .exit)
    XCTAssertEqual(p.terminationStatus, 0)
    XCTAssertTrue(lines.next()?.hasPrefix("{\"event\":\"stopped\",\"reason\":\"signal\"") ?? false)
    recorder.waitUntilRecorded(past: interruptedAt, seconds: 0.6)
    let rec = Recording(samples: recorder.samples())
    let stop = recorder.index(at: interruptedAt)
    XCTAssertGreaterThan(
      SignalMeasure.dbfs(rec.slice(from: stop, -200, -10)), -12, "playing until the signal")
    XCTAssertLessThan(
      SignalMeasure.dbfs(rec.slice(from: stop, 50, 600)), -60, "silent after the signal")
    let tone = rec.dominant(from: stop, -45, -10)
    XCTAssertTrue(
      abs(tone - 600) <= 15 || abs(tone - 750) <= 15, "the ring's tones, got \(tone) Hz")
  }

  func testSoundsListsPatternsAndTheRepositoryFiles() throws {
    let r = try Earshot.run(["sounds"])
    XCTAssertEqual(r.status, 0)
    for name in ["ring ", "chirp ", "beep ", "bell.flac ", "descend.flac ", "pips.wav "] {
      XCTAssertTrue(r.stdout.contains(name), "\(name) missing from:\n\(r.stdout)")
    }
    XCTAssertTrue(r.stdout.contains("bell.flac     file: 1.50 s, 44100 Hz, mono"), r.stdout)
    XCTAssertTrue(
      r.stdout.hasSuffix("sounds directory: \(AlertPlayerTests.soundsDirectory)\n"), r.stdout)
  }

  func testSoundsDirectoryCanBeOverridden() throws {
    let dir = NSTemporaryDirectory() + "earshot-sounds-\(getpid())"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try FileManager.default.copyItem(
      atPath: AlertPlayerTests.soundsDirectory + "/pips.wav", toPath: dir + "/mine.wav")
    setenv("EARSHOT_SOUNDS", dir, 1)
    defer { unsetenv("EARSHOT_SOUNDS") }
    let r = try Earshot.run(["sounds"])
    XCTAssertTrue(r.stdout.contains("mine.wav"), r.stdout)
    XCTAssertFalse(r.stdout.contains("bell.flac"), r.stdout)
    let missing = try Earshot.run(["alert", "--sound", "bell", "--duration", "0.1"])
    XCTAssertEqual(missing.status, 1)
    XCTAssertTrue(
      missing.stderr.contains(
        "no sound named 'bell' (built-in patterns: ring, chirp, beep; files in \(dir): mine.wav)"),
      missing.stderr)
  }

  func testBadRequestsSayWhatIsWrong() throws {
    let cases: [([String], Int32, String)] = [
      (["alert", "--frequency", "20"], 2, "--frequency must be within 50…8000 Hz"),
      (["alert", "--duration", "-1"], 2, "--duration must be within"),
      (
        ["alert", "--sound", "pips", "--frequency", "900"], 2,
        "--frequency applies to the built-in patterns"
      ),
      (["alert", "--sound", "/nonexistent/x.wav"], 1, "cannot play sound file /nonexistent/x.wav"),
      (
        ["alert", "--device", "hw:7,0", "--duration", "0.2"], 1, "cannot open audio device 'hw:7,0'"
      ),
    ]
    for (args, status, message) in cases {
      let r = try Earshot.run(args)
      XCTAssertEqual(r.status, status, args.joined(separator: " "))
      XCTAssertTrue(r.stderr.contains(message), "\(args): \(r.stderr)")
    }
  }

  func testFallbackDeviceIsUsedAndTheFailureReported() throws {
    let r = try Earshot.run([
      "alert", "--device", "hw:7,0", "--fallback", "earshot_no_such_pcm default", "--duration",
      "0.2",
    ])
    XCTAssertEqual(r.status, 0, r.stderr)
    XCTAssertTrue(r.stdout.contains("\"device\":\"default\""), r.stdout)
    XCTAssertTrue(r.stderr.contains("cannot open audio device 'hw:7,0'"), r.stderr)
    XCTAssertTrue(r.stderr.contains("cannot open audio device 'earshot_no_such_pcm'"), r.stderr)
  }
}
