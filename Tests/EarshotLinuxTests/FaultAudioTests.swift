import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

/// Audio faults with real ALSA through PulseAudio: SIGTERM mid-alert, and
/// the alert's device going away mid-alert.
///
/// "Unplugged" is a second PulseAudio server with its own null sink
/// ("doomed"), reached through an ALSA pulse PCM with an explicit `server`
/// (defined in the agent's ~/.asoundrc), killed with SIGKILL while the alert
/// plays on it: the ALSA pulse plugin then fails the stream with EIO, as
/// it does when a USB card or a Bluetooth sink vanishes under PulseAudio.
/// The fallback is `default`, the recorded test sink, so the test hears
/// the alert go on there.
final class FaultAudioTests: XCTestCase {
  var recorder: MonitorRecorder!
  var second: (runtime: String, pid: pid_t)?
  var home = ""

  override func setUpWithError() throws {
    try PulseServer.require()
    try PulseServer.resetSink()
    recorder = try MonitorRecorder.shared()
  }

  override func tearDown() {
    if let second {
      kill(second.pid, SIGKILL)
      try? FileManager.default.removeItem(atPath: second.runtime)
    }
    second = nil
    if !home.isEmpty { try? FileManager.default.removeItem(atPath: home) }
    PulseServer.resetSinkQuietly()
  }
  override class func tearDown() { MonitorRecorder.stopShared() }

  func sinkVolume() throws -> Int {
    let out = try PulseServer.pactl("get-sink-volume", PulseServer.sink)
    let percent = out.split(separator: "/").dropFirst().first.map {
      $0.trimmingCharacters(in: .whitespaces)
    }
    return Int(percent?.dropLast() ?? "") ?? -1
  }

  func testSIGTERMMidAlertRestoresTheVolumeSilencesAndExitsZero() throws {
    try PulseServer.pactl("set-sink-volume", PulseServer.sink, "35%")
    let agent = try AgentProcess(
      config: "[audio]\nsound = beep\nfrequency = 1100\nramp = 0\n[find-phone]\nvolume = 0.9\n",
      audio: true)
    let buds = try ControlClient.device("buds", at: agent.socket)
    let requested = Clock.monotonicNanos()
    XCTAssertEqual(try buds.ok(.findStart)["result"], .string("ringing"))
    XCTAssertEqual(try sinkVolume(), 90)
    usleep(500_000)
    kill(agent.process.processIdentifier, SIGTERM)
    agent.process.waitUntilExit()
    let stoppedAt = Clock.monotonicNanos()
    XCTAssertEqual(agent.process.terminationStatus, 0, agent.log)
    XCTAssertEqual(try sinkVolume(), 35, "the user's volume is back")
    XCTAssertTrue(agent.log.contains("signal 15: stopping"), agent.log)

    recorder.waitUntilRecorded(past: stoppedAt, seconds: 0.6)
    let rec = Recording(samples: recorder.samples())
    let onset = try XCTUnwrap(rec.onset(after: recorder.index(at: requested) - rec.frames(50)))
    XCTAssertEqual(rec.dominant(from: onset, 20, 250), 1100, accuracy: 15, "it was ringing")
    XCTAssertLessThan(
      SignalMeasure.dbfs(rec.slice(from: recorder.index(at: stoppedAt), 0, 500)), -60,
      "silent after the agent exited")
  }

  /// Starts the second PulseAudio server and writes an ~/.asoundrc whose
  /// `doomed` PCM plays on it.
  func startDoomedServer() throws {
    guard let pulseaudio = Earshot.tool("pulseaudio") else {
      try requireResource("pulseaudio (scripts/deps.sh test installs it)")
    }
    let runtime = try makeTempDirectory()
    chmod(runtime, 0o700)
    // Daemonized, as scripts/services/pulseaudio.sh does (a long-lived
    // Foundation child here kept Process.waitUntilExit from reaping others).
    let r = try Earshot.run(
      [
        "-c",
        "unset PULSE_SERVER; XDG_RUNTIME_DIR=\"$1\" exec \"$2\" -n --daemonize=yes --exit-idle-time=-1 --use-pid-file=yes -L 'module-null-sink sink_name=doomed' -L module-native-protocol-unix </dev/null >/dev/null 2>&1",
        "sh", runtime, pulseaudio,
      ], executable: "/bin/sh")
    XCTAssertEqual(r.status, 0, r.stderr)
    for _ in 0..<100 where access(runtime + "/pulse/native", F_OK) != 0 { usleep(50_000) }
    let pidText = (try? String(contentsOfFile: runtime + "/pulse/pid", encoding: .utf8)) ?? ""
    let pid = try XCTUnwrap(
      pid_t(pidText.trimmingCharacters(in: .whitespacesAndNewlines)), r.stderr)
    second = (runtime, pid)
    XCTAssertEqual(access(runtime + "/pulse/native", F_OK), 0, "the second server is up")
    home = try makeTempDirectory()
    try """
    pcm.doomed {
      type pulse
      server "unix:\(runtime)/pulse/native"
      device "doomed"
    }

    """.write(toFile: home + "/.asoundrc", atomically: true, encoding: .utf8)
  }

  func testDeviceGoneMidAlertFallsBackToTheNextDevice() throws {
    try startDoomedServer()
    try PulseServer.pactl("set-sink-volume", PulseServer.sink, "40%")
    let agent = try AgentProcess(
      config: """
        [audio]
        device = doomed
        fallback = default
        sound = beep
        frequency = 1250
        ramp = 0
        """, audio: true, environment: ["HOME": home])
    let buds = try ControlClient.device("buds", at: agent.socket)
    let requested = Clock.monotonicNanos()
    XCTAssertEqual(try buds.ok(.findStart)["result"], .string("ringing"))
    usleep(600_000)
    let killedAt = Clock.monotonicNanos()
    kill(second!.pid, SIGKILL)
    XCTAssertTrue(
      agent.waitForLog("audio device 'doomed' failed mid-alert"), "says what happened: \(agent.log)"
    )
    XCTAssertTrue(agent.log.contains("the alert continues on 'default'"), agent.log)
    XCTAssertEqual(try agent.client().ok(.findStatus)["find"]?["state"], .string("ringing"))

    recorder.waitUntilRecorded(past: killedAt, seconds: 1.0)
    let rec = Recording(samples: recorder.samples())
    // Before the kill the alert played on the other server: the test sink was silent.
    XCTAssertLessThan(
      SignalMeasure.dbfs(rec.slice(from: recorder.index(at: requested), 100, 500)), -60,
      "the alert played on 'doomed' first")
    let onset = try XCTUnwrap(
      rec.onset(after: recorder.index(at: killedAt)), "no tone after the kill")
    XCTAssertEqual(rec.dominant(from: onset, 20, 250), 1250, accuracy: 15, "the fallback plays it")

    _ = try agent.client().ok(.found)
    XCTAssertEqual(try sinkVolume(), 40)
    XCTAssertEqual(agent.stop(), 0)
  }

  func testDeviceGoneWithNoFallbackStopsWithAClearErrorAndRestores() throws {
    try startDoomedServer()
    try PulseServer.pactl("set-sink-volume", PulseServer.sink, "45%")
    let agent = try AgentProcess(
      config: "[audio]\ndevice = doomed\nsound = beep\nramp = 0\n", audio: true,
      environment: ["HOME": home])
    let buds = try ControlClient.device("buds", at: agent.socket)
    XCTAssertEqual(try buds.ok(.findStart)["result"], .string("ringing"))
    XCTAssertEqual(try sinkVolume(), 90)
    usleep(300_000)
    kill(second!.pid, SIGKILL)
    XCTAssertTrue(agent.waitForLog("the alert has stopped"), agent.log)
    XCTAssertTrue(agent.log.contains("no fallback device is left after 'doomed'"), agent.log)
    var state: JSONValue? = nil
    for _ in 0..<200 {
      state = try agent.client().ok(.findStatus)["find"]
      if state?["state"] == .string("idle") { break }
      usleep(20_000)
    }
    XCTAssertEqual(state?["state"], .string("idle"))
    XCTAssertEqual(state?["last_end"], .string("alert_failed"))
    XCTAssertEqual(try sinkVolume(), 45, "the volume is restored")
    XCTAssertTrue(agent.process.isRunning, "no crash")
    XCTAssertEqual(agent.stop(), 0)
  }

  /// `earshot alert` on its own takes the same fallback as the agent.
  func testStandaloneAlertFallsBackMidAlert() throws {
    try startDoomedServer()
    let alert = Process()
    alert.executableURL = URL(fileURLWithPath: Earshot.binary)
    alert.arguments = [
      "alert", "--device", "doomed", "--fallback", "default", "--sound", "beep", "--frequency",
      "1300", "--duration", "2",
    ]
    var env = ProcessInfo.processInfo.environment
    env["HOME"] = home
    alert.environment = env
    let errPath = NSTemporaryDirectory() + "earshot-alert-fallback-\(getpid()).err"
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    defer { try? FileManager.default.removeItem(atPath: errPath) }
    alert.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
    alert.standardOutput = FileHandle.nullDevice
    try alert.run()
    usleep(600_000)
    let killedAt = Clock.monotonicNanos()
    kill(second!.pid, SIGKILL)
    alert.waitUntilExit()
    let stderr = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
    XCTAssertEqual(alert.terminationStatus, 0, stderr)
    XCTAssertTrue(stderr.contains("audio device 'doomed' failed mid-alert"), stderr)
    XCTAssertTrue(stderr.contains("the alert continues on 'default'"), stderr)
    recorder.waitUntilRecorded(past: killedAt, seconds: 1.0)
    let rec = Recording(samples: recorder.samples())
    let onset = try XCTUnwrap(
      rec.onset(after: recorder.index(at: killedAt)), "no tone after the kill")
    XCTAssertEqual(rec.dominant(from: onset, 20, 250), 1300, accuracy: 15, "the fallback plays it")
  }
}
