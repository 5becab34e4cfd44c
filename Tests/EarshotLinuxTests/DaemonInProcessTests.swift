import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// A recording stand-in for the ALSA player and mixer, for these tests
/// only (the real ones come with the audio work). Each mixer write records
/// what the saved-volume file held at that moment.
final class RecordingAudio: AlertOutput, VolumeControl, @unchecked Sendable {
  private let lock = NSLock()
  private var _calls: [String] = []
  private var _volume: VolumeSetting
  let headphones: Bool
  let failStart: Bool
  var stateFile = ""
  var onFailure: ((String) -> Void)?
  var onChange: ((VolumeSetting) -> Void)?

  init(volume: VolumeSetting, headphones: Bool = false, failStart: Bool = false) {
    _volume = volume
    self.headphones = headphones
    self.failStart = failStart
  }

  var calls: [String] { lock.withLock { _calls } }
  var volume: VolumeSetting { lock.withLock { _volume } }

  private func record(_ s: String) { lock.withLock { _calls.append(s) } }

  func startAlert() throws {
    record("startAlert")
    if failStart { throw SystemError(errno: ENODEV, "no such audio device") }
  }
  func stopAlert() { record("stopAlert") }
  func currentVolume() throws -> VolumeSetting { lock.withLock { _volume } }
  func setVolume(_ v: VolumeSetting) throws {
    let saved = (try? String(contentsOfFile: stateFile, encoding: .utf8)).flatMap(
      SavedVolume.decode)
    record("set \(v) (saved: \(saved.map(\.description) ?? "none"))")
    lock.withLock { _volume = v }
  }
  func outputIsHeadphones() -> Bool { headphones }
}

/// The agent on a thread of this process, with the recording audio.
final class InProcessAgent: @unchecked Sendable {
  let directory: String
  let socket: String
  let audio: RecordingAudio
  private var stopFD: Int32 = -1
  private var startError: String?
  private let ready = DispatchSemaphore(value: 0)
  private let finished = DispatchSemaphore(value: 0)
  private var stopped = false
  private let logLock = NSLock()
  private var logged: [String] = []

  /// What the daemon logged so far.
  var log: [String] { logLock.withLock { logged } }

  var stateDirectory: String { directory + "/state" }
  var stateFile: String { stateDirectory + "/find-phone-volume" }

  init(
    audio: RecordingAudio, findPhone: FindPhoneConfig = FindPhoneConfig(),
    directory: String? = nil
  )
    throws
  {
    self.directory = try directory ?? makeTempDirectory()
    socket = self.directory + "/control.sock"
    self.audio = audio
    audio.stateFile = self.directory + "/state/find-phone-volume"
    let thread = Thread { [self] in self.serve(findPhone) }
    thread.start()
    ready.wait()
    if let startError { throw SystemError(errno: EIO, startError) }
  }

  private func serve(_ findPhone: FindPhoneConfig) {
    do {
      // The agent earshot run builds, with the recording audio.
      var config = Config()
      config.findPhone = findPhone
      let agent = try Agent(
        config: config.inTest(directory),
        surroundings: .test(
          directory: directory, audio: .given(alert: audio, volume: audio),
          log: { [self] line in logLock.withLock { logged.append(line) } }))
      stopFD = agent.daemon.stopDescriptor.rawValue
      ready.signal()
      try agent.run()
    } catch {
      startError = "\(error)"
      ready.signal()
    }
    finished.signal()
  }

  func client() throws -> ControlClient { try ControlClient(path: socket) }

  /// Stops the loop (the daemon silences and restores on the way out).
  func stop() {
    guard !stopped, stopFD >= 0 else { return }
    stopped = true
    var b: UInt8 = 1
    _ = write(stopFD, &b, 1)
    finished.wait()
  }

  deinit {
    stop()
    try? FileManager.default.removeItem(atPath: directory)
  }
}

final class DaemonInProcessTests: XCTestCase {
  let user = VolumeSetting(level: 0.25, muted: true)
  let userText = "0.250 muted"

  func testVolumeIsSavedBeforeTheRaiseAndRestoredBeforeTheNotice() throws {
    let agent = try InProcessAgent(audio: RecordingAudio(volume: user))
    let buds = try ControlClient.device("buds", at: agent.socket)
    XCTAssertEqual(try buds.ok(.findStart)["result"], .string("ringing"))
    XCTAssertEqual(
      agent.audio.calls, ["set 0.900 (saved: \(userText))", "startAlert"],
      "the user's volume was on disk before the raise")
    _ = try agent.client().ok(.found)
    let notice = try XCTUnwrap(try buds.waitFor(event: "notice"))
    // What had happened by the time the device saw its notice:
    XCTAssertEqual(
      agent.audio.calls,
      [
        "set 0.900 (saved: \(userText))", "startAlert", "stopAlert",
        "set \(userText) (saved: \(userText))",
      ])
    XCTAssertFalse(
      FileManager.default.fileExists(atPath: agent.stateFile), "forgotten once restored")
    XCTAssertEqual(agent.audio.volume, user)
    _ = try buds.ok(.noticeFail(NoticeID(notice["notice"]!.integer!), reason: "no"))
    _ = try agent.client().ok(.findStatus)
    XCTAssertEqual(
      agent.audio.calls.filter { $0 == "startAlert" }.count, 1, "a failed notice never rings again")
  }

  func testHeadphonesCapTheRingLevel() throws {
    let agent = try InProcessAgent(
      audio: RecordingAudio(volume: user, headphones: true),
      findPhone: FindPhoneConfig(volume: 0.9, headphoneVolume: 0.3))
    let buds = try ControlClient.device("buds", at: agent.socket)
    _ = try buds.ok(.findStart)
    XCTAssertEqual(agent.audio.calls.first, "set 0.300 (saved: \(userText))")
    XCTAssertEqual(try agent.client().ok(.findStatus)["find"]?["headphones"], .bool(true))
  }

  func testLeftoverSavedVolumeIsRestoredAtStart() throws {
    let dir = try makeTempDirectory()
    try SavedVolumeFile(directory: dir + "/state").save(VolumeSetting(level: 0.42, muted: false))
    // As after a kill -9 mid-alert: the mixer still holds the raised level.
    let agent = try InProcessAgent(
      audio: RecordingAudio(volume: VolumeSetting(level: 0.9, muted: false)), directory: dir)
    _ = try agent.client().ok(.findStatus)
    XCTAssertEqual(agent.audio.calls, ["set 0.420 (saved: 0.420)"])
    XCTAssertEqual(agent.audio.volume, VolumeSetting(level: 0.42, muted: false))
    XCTAssertFalse(FileManager.default.fileExists(atPath: agent.stateFile))
  }

  func testDeviceStopRestoresAndSendsNoNotice() throws {
    let agent = try InProcessAgent(audio: RecordingAudio(volume: user))
    let buds = try ControlClient.device("buds", at: agent.socket)
    _ = try buds.ok(.findStart)
    XCTAssertEqual(try buds.ok(.findStop)["result"], .string("stopped"))
    XCTAssertEqual(
      agent.audio.calls.suffix(2), ["stopAlert", "set \(userText) (saved: \(userText))"])
    XCTAssertFalse(try buds.eventsSoFar().contains { $0["event"] == .string("notice") })
  }

  func testAlertThatCannotPlayEndsTheRingAndRestores() throws {
    let agent = try InProcessAgent(audio: RecordingAudio(volume: user, failStart: true))
    let buds = try ControlClient.device("buds", at: agent.socket)
    _ = try buds.ok(.findStart)
    let f = try agent.client().ok(.findStatus)["find"]
    XCTAssertEqual(f?["state"], .string("idle"))
    XCTAssertEqual(f?["last_end"], .string("alert_failed"))
    XCTAssertEqual(agent.audio.calls.last, "set \(userText) (saved: \(userText))")
    XCTAssertEqual(agent.audio.volume, user)
  }

  func testTimeoutStopsTheAlert() throws {
    let agent = try InProcessAgent(
      audio: RecordingAudio(volume: user), findPhone: FindPhoneConfig(timeout: 0.2))
    let buds = try ControlClient.device("buds", at: agent.socket)
    _ = try buds.ok(.findStart)
    var lastEnd: JSONValue? = nil
    while lastEnd != .string("timeout") {
      guard let e = try buds.waitFor(event: "find") else { break }
      lastEnd = e["find"]?["last_end"]
    }
    XCTAssertEqual(lastEnd, .string("timeout"))
    _ = try buds.ok(.findStatus)
    XCTAssertEqual(
      agent.audio.calls.suffix(2), ["stopAlert", "set \(userText) (saved: \(userText))"])
    XCTAssertFalse(try buds.eventsSoFar().contains { $0["event"] == .string("notice") })
  }

  func testVolumeCommandsAndEvents() throws {
    let agent = try InProcessAgent(audio: RecordingAudio(volume: user))
    let watcher = try agent.client()
    _ = try watcher.ok(.subscribe([.volume]))
    let c = try agent.client()
    XCTAssertEqual(
      try c.ok(.volumeGet)["volume"], .object([("level", .number(0.25)), ("muted", .bool(true))]))
    XCTAssertEqual(try c.ok(.volumeSet(0.5))["volume"]?["level"], .number(0.5))
    XCTAssertEqual(try c.ok(.volumeUnmute)["volume"]?["muted"], .bool(false))
    let e = try XCTUnwrap(try watcher.waitFor(event: "volume"))
    XCTAssertEqual(e["volume"]?["level"], .number(0.5))
    // While find-phone owns the volume, changes are refused.
    let buds = try ControlClient.device("buds", at: agent.socket)
    _ = try buds.ok(.findStart)
    XCTAssertEqual(try c.call(.volumeSet(0.1))["error"]?["code"], .string("busy"))
    _ = try c.ok(.found)
    XCTAssertEqual(agent.audio.volume, VolumeSetting(level: 0.5, muted: false))
  }

  func testStoppingTheAgentWhileRingingRestoresTheVolume() throws {
    let agent = try InProcessAgent(audio: RecordingAudio(volume: user))
    let buds = try ControlClient.device("buds", at: agent.socket)
    _ = try buds.ok(.findStart)
    agent.stop()
    XCTAssertEqual(
      agent.audio.calls.suffix(2), ["stopAlert", "set \(userText) (saved: \(userText))"])
    XCTAssertFalse(FileManager.default.fileExists(atPath: agent.stateFile))
    XCTAssertFalse(FileManager.default.fileExists(atPath: agent.socket))
  }

  func testOtherUsersAreRefusedByPeerCredentials() throws {
    guard getuid() == 0 else { throw XCTSkip("needs root to act as another user (setpriv)") }
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else {
      try requireResource("setpriv (util-linux)")
    }
    let nobody = Process()
    nobody.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
    nobody.arguments = [
      "--reuid=65534", "--regid=65534", "--clear-groups", try earshotBinary(), "--version",
    ]
    nobody.standardOutput = FileHandle.nullDevice
    nobody.standardError = FileHandle.nullDevice
    try nobody.run()
    nobody.waitUntilExit()
    guard nobody.terminationStatus == 0 else {
      throw XCTSkip(
        "user nobody cannot run the earshot binary from where it was built (a private directory)")
    }
    let agent = try InProcessAgent(audio: RecordingAudio(volume: user))
    chmod(agent.directory, 0o755)
    // Past the file mode, so that only SO_PEERCRED stands in the way.
    chmod(agent.socket, 0o666)
    // Five tries: each refused, one line logged and the rest counted.
    for _ in 0..<5 {
      let p = Process()
      p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
      p.arguments = [
        "--reuid=65534", "--regid=65534", "--clear-groups", try earshotBinary(), "status",
        "--socket", agent.socket,
      ]
      let err = Pipe()
      p.standardError = err
      p.standardOutput = FileHandle.nullDevice
      try p.run()
      let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
      p.waitUntilExit()
      XCTAssertEqual(p.terminationStatus, 1)
      XCTAssertTrue(text.contains("permission_denied"), text)
    }
    XCTAssertEqual(try agent.client().ok(.findStatus)["ok"], .bool(true), "root is served")
    let first = agent.log.filter { $0.contains("control socket: refused") }
    XCTAssertEqual(first.count, 1, "\(first)")
    XCTAssertTrue(
      first.first?.hasSuffix("uid 65534: not root, not uid 0, not in the allowed group") ?? false,
      "\(first)")
    agent.stop()
    let refused = agent.log.filter { $0.contains("control socket: refused") }
    XCTAssertEqual(refused.count, 2, "\(refused)")
    XCTAssertTrue(
      refused.last?.hasPrefix(
        "control socket: refused 4 more connections from uid 65534 in the last")
        ?? false, "\(refused)")
  }
}
