import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// A fresh temporary directory, removed by the caller's teardown.
func makeTempDirectory() throws -> String {
  var template = Array("/tmp/earshot-test-XXXXXX".utf8CString)
  guard let p = mkdtemp(&template) else { throw SystemError(errno: errno, "mkdtemp") }
  return String(cString: p)
}

/// The `earshot` binary that `swift build` put beside the test bundle.
func earshotBinary() throws -> String {
  let candidates = [
    URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
      .appendingPathComponent("earshot").path,
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent(".build/debug/earshot").path,
  ]
  for c in candidates where FileManager.default.isExecutableFile(atPath: c) { return c }
  XCTFail("the earshot binary is not built (looked in \(candidates)); run 'swift build' first")
  throw XCTSkip("no earshot binary")
}

/// Runs `earshot ARGS` to completion and returns its status and output.
/// (EarshotTestSupport's runner: stderr goes to a file, so a chatty command
/// cannot block on a full pipe.)
@discardableResult
func runEarshot(_ args: [String], environment: [String: String] = [:]) throws -> (
  status: Int32, out: String, err: String
) {
  let r = try Earshot.run(args, executable: try earshotBinary(), environment: environment)
  return (r.status, r.stdout, r.stderr)
}

/// `earshot run` as a subprocess on a temporary socket.
final class AgentProcess {
  let directory: String
  private let ownsDirectory: Bool
  let socket: String
  let process = Process()
  let logPath: String

  /// Without `audio` the agent runs with --no-audio (a silent ring): for
  /// tests of the protocol, which must not depend on a sound server.
  /// `directory`: reuse another agent's socket and state directory (a restart).
  /// `environment`: variables added to the agent's. `wrapper`: a command the
  /// agent runs under (it must end by exec'ing its arguments, e.g. unshare).
  ///
  /// Hermetic: the agent always gets --config (an empty file without
  /// `config`), a [state] path in its directory unless the config sets one,
  /// and HOME, XDG_CONFIG_HOME, XDG_STATE_HOME and EARSHOT_CONFIG inside its
  /// directory, so it never reads the host's or the user's config or state;
  /// its session bus address names no bus (no notification on the user's desktop).
  init(
    config: String? = nil, arguments: [String] = [], audio: Bool = false,
    directory reuse: String? = nil, environment: [String: String] = [:], wrapper: [String] = []
  ) throws {
    directory = try reuse ?? makeTempDirectory()
    ownsDirectory = reuse == nil
    socket = directory + "/control.sock"
    logPath = directory + "/agent.log"
    _ = FileManager.default.createFile(atPath: logPath, contents: nil)
    process.executableURL = URL(fileURLWithPath: try earshotBinary())
    process.arguments = ["run", "--socket", socket, "--state-dir", directory + "/state"]
    let path = directory + "/earshot.conf"
    var text = config ?? ""
    if !text.contains("[state]") { text += "\n[state]\npath = \(directory)/state/regions\n" }
    try text.write(toFile: path, atomically: true, encoding: .utf8)
    process.arguments! += ["--config", path]
    process.arguments! += arguments
    if !audio { process.arguments! += ["--no-audio"] }
    let home = directory + "/home"
    process.environment = Earshot.environment(
      [
        "HOME": home, "XDG_CONFIG_HOME": home + "/.config",
        "XDG_STATE_HOME": home + "/.local/state", "EARSHOT_CONFIG": directory + "/no-such.conf",
        // Never the user's session bus: no desktop notification from a test's ring.
        "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(directory)/no-session-bus",
      ].merging(environment) { $1 })
    if let tool = wrapper.first {
      process.arguments =
        Array(wrapper.dropFirst()) + [process.executableURL!.path]
        + process.arguments!
      process.executableURL = URL(fileURLWithPath: tool)
    }
    process.standardError = FileHandle(forWritingAtPath: logPath)
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    // Ready when the socket accepts a connection (or the agent has died).
    while true {
      if let c = try? ControlClient(path: socket), (try? c.call(.findStatus)) != nil { break }
      guard process.isRunning else {
        throw SystemError(errno: ECHILD, "earshot run exited: \(log)")
      }
      usleep(20_000)
    }
  }

  var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

  /// Waits (at most `limit` s) until the log contains `text`.
  @discardableResult
  func waitForLog(_ text: String, limit: Double = 20) -> Bool {
    for _ in 0..<Int(limit * 50) {
      if log.contains(text) { return true }
      usleep(20_000)
    }
    return log.contains(text)
  }

  /// How many times the log contains `text`.
  func logCount(_ text: String) -> Int { log.components(separatedBy: text).count - 1 }

  /// The agent's resident memory in kB (VmRSS).
  var residentKB: Int {
    let status =
      (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8))
      ?? ""
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
      return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? -1
    }
    return -1
  }

  func client() throws -> ControlClient { try ControlClient(path: socket) }

  /// SIGTERM, then the exit status.
  func stop() -> Int32 {
    if process.isRunning {
      process.terminate()
      process.waitUntilExit()
    }
    return process.terminationStatus
  }

  deinit {
    _ = stop()
    if ownsDirectory { try? FileManager.default.removeItem(atPath: directory) }
  }
}

extension ControlClient {
  /// Calls and asserts success; returns the response.
  func ok(_ command: ControlCommand, file: StaticString = #filePath, line: UInt = #line) throws
    -> JSONValue
  {
    let r = try call(command)
    XCTAssertEqual(
      r["ok"], .bool(true), "\(command.name) failed: \(r.encoded)", file: file, line: line)
    return r
  }

  /// Registers as a device and subscribes to find events.
  static func device(_ name: String, at path: String) throws -> ControlClient {
    let c = try ControlClient(path: path)
    _ = try c.ok(.deviceRegister(name: name))
    _ = try c.ok(.subscribe([.find]))
    return c
  }

  /// Reads events until one named `name` arrives (nil if the stream ends).
  func waitFor(event name: String) throws -> JSONValue? {
    while let e = try nextEvent(timeoutMillis: 30_000) {
      if e["event"]?.string == name { return e }
    }
    return nil
  }

  /// Events that arrive before the response to a fresh request: proves
  /// what has (not) been sent so far, without waiting on a clock.
  func eventsSoFar() throws -> [JSONValue] {
    let id = try send(.findStatus)
    var seen = takeQueuedEvents()
    while let m = try readMessage() {
      if m["id"] == id { return seen }
      seen.append(m)
    }
    return seen
  }
}

/// Reports the test hands the agent's monitor itself (a replay it starts
/// when it chooses, or reports fed one by one), in capture time unless
/// `capturesTime` is false; `onStart` runs when the agent starts its reports.
struct TestReports: ReportSource {
  var capturesTime = true
  var onStart: (AgentMonitor, Agent) throws -> Void = { _, _ in }
  func start(_ monitor: AgentMonitor, of agent: Agent) throws { try onStart(monitor, agent) }
}

extension AgentSurroundings {
  /// An agent of `earshot run` in this process, hermetic: its socket
  /// (`control.sock`) and state (`state/`) in `directory`, no signal
  /// handling (which would block the signals of the whole test process),
  /// no config file to reload, and bus addresses that name no bus unless
  /// given (never the host's system or session bus).
  static func test(
    directory: String, reports: (any ReportSource)? = nil, audio: Audio = .silent,
    log: @escaping (String) -> Void = { _ in }
  ) -> AgentSurroundings {
    var s = AgentSurroundings(version: "test", reports: reports, audio: audio, log: log)
    s.socketPath = directory + "/control.sock"
    s.stateDirectory = directory + "/state"
    s.handleSignals = false
    s.systemBus = "unix:path=\(directory)/no-system-bus"
    s.sessionBus = "unix:path=\(directory)/no-session-bus"
    return s
  }
}

extension Config {
  /// The config with what the agent would read or write in the user's
  /// home moved into `directory` (as `AgentProcess` does): the media
  /// library (`~/Music`, an empty folder), the photos and, unless set, the
  /// state file.
  func inTest(_ directory: String) -> Config {
    var c = self
    c.media.library = directory + "/music"
    try? FileManager.default.createDirectory(
      atPath: c.media.library, withIntermediateDirectories: true)
    if c.shutter.directory == nil { c.shutter.directory = directory + "/photos" }
    if c.state.path == Config().state.path { c.state.path = directory + "/state.json" }
    return c
  }
}

extension XCTestCase {
  /// Runs an agent's loop until `done` holds (checked every 50 ms), failing
  /// after `seconds` (generous: the loop returns as soon as it holds, and a
  /// notification server on a loaded 2-core machine can take seconds).
  func spin(
    _ loop: EventLoop, seconds: Double = 30, _ what: String, file: StaticString = #filePath,
    line: UInt = #line, until done: @escaping () -> Bool
  ) {
    let deadline = Date().addingTimeInterval(seconds)
    var met = false
    func check() {
      if done() {
        met = true
        loop.stop()
      } else if Date() > deadline {
        loop.stop()
      } else {
        _ = loop.after(seconds: 0.05) { check() }
      }
    }
    _ = loop.after(seconds: 0.01) { check() }
    XCTAssertNoThrow(try loop.run(), file: file, line: line)
    XCTAssertTrue(met, "timed out waiting: \(what)", file: file, line: line)
  }
}
