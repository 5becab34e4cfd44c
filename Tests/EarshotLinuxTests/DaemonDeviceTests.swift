import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

/// The remote shutter through `earshot run`'s control socket, with a camera
/// that is not there (the real V4L2 path; the vivid camera is the VM's).
final class DaemonShutterTests: XCTestCase {
  let config = """
    [shutter]
    device = /nonexistent/video9
    """

  func testShutterEventsWithAMissingCameraAreAnsweredInOrder() throws {
    let agent = try AgentProcess(config: config)
    let c = try agent.client()
    let enter = try c.ok(.shutter(1))
    XCTAssertEqual(enter["state"], .string("exitedOrUnableToEnter"))
    XCTAssertEqual(enter["code"], .int(0))
    XCTAssertEqual(enter["event"], .string("enter"))
    XCTAssertTrue(
      agent.log.contains("camera /nonexistent/video9 is missing"), "a clear log line: \(agent.log)")
    // Outside photo mode a capture fails and nothing is captured.
    let capture = try c.ok(.shutter(2))
    XCTAssertEqual(capture["state"], .string("photoFailed"))
    XCTAssertEqual(capture["code"], .int(3))
    XCTAssertNil(capture["photo"])
    XCTAssertEqual(try c.ok(.shutter(0))["state"], .string("exitedOrUnableToEnter"))

    // Unknown events: an error, not a state; the agent goes on.
    for raw in [-1, 7] {
      let r = try c.call(.shutter(raw))
      XCTAssertEqual(r["ok"], .bool(false), r.encoded)
      XCTAssertEqual(r["error"]?["code"], .string("unknown_event"), r.encoded)
      XCTAssertTrue(r["error"]?["message"]?.string?.contains("\(raw)") ?? false, r.encoded)
    }
    try c.writeLine(#"{"id":"z","cmd":"shutter","event":"zoom"}"#)
    let zoom = try XCTUnwrap(try c.readMessage(timeoutMillis: 10_000))
    XCTAssertEqual(zoom["error"]?["code"], .string("invalid_request"), zoom.encoded)
    XCTAssertEqual(try c.ok(.status)["shutter"]?["photo_mode"], .bool(false))

    // The CLI goes through the agent and prints the standalone lines.
    let cli = try runEarshot(["shutter", "--socket", agent.socket, "enter", "-1"])
    XCTAssertEqual(cli.status, 1, cli.err)
    XCTAssertEqual(
      cli.out,
      """
      {"event":"enter","value":1,"state":"exitedOrUnableToEnter","code":0}
      {"event":-1,"value":-1,"error":"unknown shutter event -1"}

      """)
    XCTAssertEqual(agent.stop(), 0)
  }

  func testMediaWithoutAudioIsUnavailable() throws {
    let agent = try AgentProcess(config: config)
    let r = try agent.client().call(.mediaPlay(title: "anything"))
    XCTAssertEqual(r["error"]?["code"], .string("unavailable"), r.encoded)
    XCTAssertEqual(try agent.client().call(.mediaPause)["error"]?["code"], .string("unavailable"))
    XCTAssertEqual(agent.stop(), 0)
  }
}

/// Media and volume through `earshot run` with real audio: the PulseAudio
/// test server's null sink recorded, the mixer read back with pactl.
final class DaemonMediaTests: XCTestCase {
  var recorder: MonitorRecorder!
  var library = ""

  override func setUpWithError() throws {
    try PulseServer.require()
    try PulseServer.resetSink()
    recorder = try MonitorRecorder.shared()
    library = try makeTempDirectory()
    guard let sox = Earshot.tool("sox") else { try requireResource("sox (package sox)") }
    let r = try Earshot.run(
      [
        "-n", "-r", "48000", "-c", "1", "--comment", "TITLE=Test Tone", library + "/tone.flac",
        "synth", "20", "sine", "1000", "vol", "0.5",
      ], executable: sox)
    XCTAssertEqual(r.status, 0, r.stderr)
  }

  override func tearDown() {
    PulseServer.resetSinkQuietly()
    try? FileManager.default.removeItem(atPath: library)
  }
  override class func tearDown() { MonitorRecorder.stopShared() }

  var config: String {
    """
    [audio]
    sound = beep
    frequency = 1300
    ramp = 0
    [find-phone]
    volume = 0.9
    [media]
    library = \(library)
    timeout = 5
    """
  }

  func media(_ c: ControlClient) throws -> JSONValue? { try c.ok(.status)["media"] }

  func testPlayCompletesOnceAndFindPhonePausesAndResumesIt() throws {
    let agent = try AgentProcess(config: config, audio: true)
    let c = try agent.client()

    // Unknown title: notFound, at once.
    let missing = try c.ok(.mediaPlay(title: "no such song"))
    XCTAssertEqual(missing["result"], .string("notFound"), missing.encoded)
    XCTAssertEqual(missing["code"], .int(1))

    let requested = Clock.monotonicNanos()
    let done = try c.ok(.mediaPlay(title: "test tone"))
    XCTAssertEqual(done["result"], .string("success"), done.encoded)
    XCTAssertEqual(done["code"], .int(0))
    XCTAssertEqual(done["title"], .string("Test Tone"))
    // Exactly one completion: nothing more arrives for that id.
    XCTAssertTrue(try c.eventsSoFar().isEmpty)
    XCTAssertEqual(try media(c)?["state"], .string("playing"))
    let playingAt = Clock.monotonicNanos()
    usleep(600_000)

    // A ring pauses it; found resumes it once the alert is silent.
    let buds = try ControlClient.device("buds", at: agent.socket)
    XCTAssertEqual(try buds.ok(.findStart)["result"], .string("ringing"))
    let ringAt = Clock.monotonicNanos()
    XCTAssertEqual(try media(c)?["state"], .string("paused"))
    XCTAssertEqual(try media(c)?["by_ring"], .bool(true))
    usleep(700_000)
    let found = try runEarshot(["found", "--socket", agent.socket])
    XCTAssertEqual(found.status, 0, found.err)
    let notice = try XCTUnwrap(try buds.waitFor(event: "notice"))
    _ = try buds.ok(.noticeAck(NoticeID(try XCTUnwrap(notice["notice"]?.integer))))
    XCTAssertEqual(try media(c)?["state"], .string("playing"))
    let resumedAt = Clock.monotonicNanos()
    recorder.waitUntilRecorded(past: resumedAt, seconds: 1.0)

    let rec = Recording(samples: recorder.samples())
    let onset = try XCTUnwrap(
      rec.onset(after: recorder.index(at: requested) - rec.frames(50)), "nothing played")
    XCTAssertLessThan(onset, recorder.index(at: playingAt) + rec.frames(300))
    XCTAssertEqual(rec.dominant(from: onset, 100, 400), 1000, accuracy: 15, "the file's tone")
    XCTAssertEqual(
      rec.dominant(from: recorder.index(at: ringAt), 80, 280), 1300, accuracy: 15,
      "the alert, not the file, while ringing")
    XCTAssertEqual(
      rec.dominant(from: recorder.index(at: resumedAt), 300, 800), 1000, accuracy: 15,
      "the file again after found")

    _ = try c.ok(.mediaStop)
    XCTAssertEqual(try media(c)?["state"], .string("idle"))
    XCTAssertEqual(agent.stop(), 0)
  }

  func testVolumeCommandGoesThroughTheAgent() throws {
    try PulseServer.pactl("set-sink-volume", PulseServer.sink, "30%")
    let agent = try AgentProcess(config: config, audio: true)
    let watcher = try agent.client()
    _ = try watcher.ok(.subscribe([.volume]))

    let set = try runEarshot(["volume", "--socket", agent.socket, "set", "0.42"])
    XCTAssertEqual(set.status, 0, set.err)
    XCTAssertEqual(set.out, "{\"volume\":0.42,\"muted\":false}\n")
    XCTAssertTrue(
      try PulseServer.pactl("get-sink-volume", PulseServer.sink).contains("42%"),
      "pactl sees the agent's setting")
    let event = try XCTUnwrap(try watcher.waitFor(event: "volume"))
    XCTAssertEqual(event["volume"]?["level"], .number(0.42), "the agent's subscribers hear of it")

    try PulseServer.pactl("set-sink-volume", PulseServer.sink, "55%")
    let get = try runEarshot(["volume", "--socket", agent.socket])
    XCTAssertEqual(get.out, "{\"volume\":0.55,\"muted\":false}\n", get.err)
    let mute = try runEarshot(["volume", "--socket", agent.socket, "mute"])
    XCTAssertEqual(mute.out, "{\"volume\":0.55,\"muted\":true}\n", mute.err)
    XCTAssertTrue(try PulseServer.pactl("get-sink-mute", PulseServer.sink).contains("yes"))

    // While find-phone owns the volume the agent refuses, and says why.
    let buds = try ControlClient.device("buds", at: agent.socket)
    _ = try buds.ok(.findStart)
    let refused = try runEarshot(["volume", "--socket", agent.socket, "set", "0.1"])
    XCTAssertEqual(refused.status, 1)
    XCTAssertTrue(refused.err.contains("busy"), refused.err)
    _ = try buds.ok(.findStop)
    XCTAssertEqual(agent.stop(), 0)
  }

  /// The default library missing (a server, root's home) is no news at
  /// start: `status` says so. A library the user chose is reported.
  func testAMissingDefaultLibraryIsQuietAndAConfiguredOneIsReported() throws {
    let quiet = try AgentProcess(config: "[audio]\nramp = 0\n", audio: true)
    let status = try quiet.client().ok(.status)
    let library = try XCTUnwrap(status["media"]?["library"])
    XCTAssertEqual(library["path"], .string("~/Music"))
    XCTAssertEqual(library["titles"], .int(0))
    XCTAssertEqual(library["problems"]?.array?.count, 1, library.encoded)
    XCTAssertFalse(quiet.log.contains("media:"), quiet.log)

    let loud = try AgentProcess(
      config: "[audio]\nramp = 0\n[media]\nlibrary = /nonexistent/music\n", audio: true)
    XCTAssertTrue(loud.waitForLog("media: 0 titles in /nonexistent/music"), loud.log)
    XCTAssertTrue(loud.log.contains("media: cannot read /nonexistent/music"), loud.log)
  }
}

/// `[link]` in the config file: LinkConfig's keys, errors with file and line.
final class LinkConfigSectionTests: XCTestCase {
  func testLinkSectionParsesAndRejectsWithTheLine() throws {
    let ok = try Config.build(
      IniReader.parse(
        """
        [link]
        enabled = true
        allow = AA:BB:CC:DD:EE:FF
        security = encrypted
        name = desk
        adapter = hci1
        """, file: "t.conf"))
    XCTAssertTrue(ok.link.enabled)
    XCTAssertEqual(ok.link.security, .encrypted)
    XCTAssertEqual(ok.link.name, "desk")
    XCTAssertEqual(ok.link.adapter, "hci1")
    XCTAssertEqual(ok.link.allow, .addresses([BDAddress("AA:BB:CC:DD:EE:FF")!]))
    XCTAssertThrowsError(
      try Config.build(IniReader.parse("[link]\n\nsecurity = loose\n", file: "t.conf"))
    ) { error in
      XCTAssertTrue("\(error)".contains("t.conf:3"), "\(error)")
      XCTAssertTrue("\(error)".contains("authenticated"), "\(error)")
    }
  }
}
