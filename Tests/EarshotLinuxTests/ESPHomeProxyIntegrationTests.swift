import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// The real `earshot run --input CAPTURE --pace N` with [esphome] on,
/// against Home Assistant's own client library, aioesphomeapi, from the
/// test venv (`scripts/deps.sh test` makes it; missing fails in CI). The
/// client side is Tests/esphome/proxy_client.py, which parses the capture
/// itself (not with Earshot's decoder) to know what must arrive.
final class ESPHomeProxyIntegrationTests: XCTestCase {
  static let venvPython =
    ProcessInfo.processInfo.environment["EARSHOT_ESPHOME_VENV"].map { $0 + "/bin/python" }
    ?? "/usr/local/lib/earshot-test/esphome-venv/bin/python"
  let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
  var script: String { repo.appendingPathComponent("Tests/esphome/proxy_client.py").path }
  var dir = ""

  override func setUpWithError() throws {
    guard FileManager.default.isExecutableFile(atPath: Self.venvPython),
      (try? Earshot.run(
        ["-c", "import aioesphomeapi, noise"], executable: Self.venvPython))?.status == 0
    else {
      try requireResource(
        "aioesphomeapi in \(Self.venvPython) (scripts/deps.sh test makes the venv)")
    }
    dir = try makeTempDirectory()
  }

  override func tearDown() {
    try? FileManager.default.removeItem(atPath: dir)
  }

  /// A python helper run in the background; its stdout lines as they come.
  final class Helper {
    let process = Process()
    let out = Pipe()
    private var buffer = Data()

    init(_ python: String, _ args: [String]) throws {
      process.executableURL = URL(fileURLWithPath: python)
      process.arguments = ["-W", "ignore"] + args
      process.standardOutput = out
      process.standardError = FileHandle.nullDevice
      try process.run()
    }

    /// The next line (nil at the end of its output).
    func line() -> String? {
      while !buffer.contains(0x0A) {
        let chunk = out.fileHandleForReading.availableData
        if chunk.isEmpty { break }
        buffer += chunk
      }
      guard !buffer.isEmpty else { return nil }
      let end = buffer.firstIndex(of: 0x0A) ?? buffer.endIndex
      let text = String(decoding: buffer[..<end], as: UTF8.self)
      buffer = end < buffer.endIndex ? Data(buffer[(end + 1)...]) : Data()
      return text
    }

    func json() -> [String: Any]? {
      guard let l = line() else { return nil }
      return try? JSONSerialization.jsonObject(with: Data(l.utf8)) as? [String: Any]
    }

    func stop() {
      if process.isRunning { process.terminate() }
      process.waitUntilExit()
    }

    deinit { stop() }
  }

  func testAioesphomeapiGetsTheCaptureByteForByteBesideAStalledAWrongKeyAndAGarbageClient()
    throws
  {
    // The office scenario: 5688 reports over 898 s, played at 100 times capture time.
    let capture = dir + "/office.btsnoop"
    let sim = try Earshot.run([
      "simulate", "scenario", "--spec",
      repo.appendingPathComponent("scenarios/office.scenario").path,
      "--write", capture, "--truth", dir + "/truth",
    ])
    XCTAssertEqual(sim.status, 0, sim.stderr)
    let regions = try String(
      contentsOf: repo.appendingPathComponent("scenarios/office.conf"), encoding: .utf8)
    let key = Data((0..<32).map { UInt8($0 * 7 + 3) }).base64EncodedString()
    try (key + "\n").write(toFile: dir + "/key", atomically: true, encoding: .utf8)
    chmod(dir + "/key", 0o600)
    let port = try Broker.unusedPort()
    let start = Int(Date().timeIntervalSince1970) + 8
    let agent = try AgentProcess(
      config: regions
        + "\n[esphome]\nenabled = true\nport = \(port)\nkey_file = \(dir)/key\nname = earshot-test\n",
      arguments: ["--input", capture, "--pace", "100", "--start-at", String(start)])
    XCTAssertTrue(
      agent.waitForLog("Bluetooth proxy 'earshot-test' on 127.0.0.1:\(port) (encrypted)"))

    // Before the replay starts: a client that subscribes and stops reading,
    // a wrong key, garbage, and the client that must get everything.
    let stalled = try Helper(Self.venvPython, [script, "stall", String(port), key])
    XCTAssertEqual(stalled.line(), "subscribed")
    let wrongKey = try Helper(
      Self.venvPython,
      [script, "wrong-key", String(port), Data(repeating: 1, count: 32).base64EncodedString()])
    let wrong = try XCTUnwrap(wrongKey.json())
    XCTAssertEqual(wrong["error"] as? String, "InvalidEncryptionKeyAPIError", "\(wrong)")
    // One that connects and never speaks: it must not hold a slot for ever.
    let silent = try Helper(Self.venvPython, [script, "silent", String(port)])
    XCTAssertEqual(silent.line(), "connected")
    let garbage = try XCTUnwrap(
      try Helper(Self.venvPython, [script, "garbage", String(port)]).json())
    XCTAssertEqual(garbage["closed"] as? Bool, true, "\(garbage)")
    let receiver = try Helper(
      Self.venvPython, [script, "receive", String(port), key, capture, "40"])
    let subscribed = try XCTUnwrap(receiver.json()?["subscribed"] as? Double)
    XCTAssertLessThan(
      subscribed, Double(start), "subscribed after the replay began: raise the lead")

    let result = try XCTUnwrap(receiver.json(), agent.log)
    XCTAssertEqual(result["expected"] as? Int, 5688)
    XCTAssertEqual(result["received"] as? Int, 5688, "\(result)")
    XCTAssertEqual(result["mismatches"] as? Int, 0, "\(result)")
    // The silent client was closed at its Hello deadline (10 s, swept every 2 s).
    let closed = try XCTUnwrap(silent.json(), agent.log)
    XCTAssertEqual(closed["closed"] as? Bool, true, "\(closed)")
    let after = try XCTUnwrap(closed["after"] as? Double)
    XCTAssertGreaterThanOrEqual(after, 9.5, "\(closed)")
    XCTAssertLessThan(after, 30, "\(closed)")
    XCTAssertTrue(agent.log.contains("no Hello within 10 s of connecting"), agent.log)
    XCTAssertEqual(result["bluetooth_proxy_feature_flags"] as? Int, 1 | 32 | 64)
    XCTAssertEqual(result["name"] as? String, "earshot-test")
    XCTAssertEqual(result["model"] as? String, "Linux")
    // Presence went on meanwhile: the office's final states.
    XCTAssertTrue(agent.waitForLog("replayed \(capture)"))
    let status = try agent.client().ok(.status)
    let states = try XCTUnwrap(status["regions"]?.array).map {
      "\($0["region"]?.string ?? "?")=\($0["state"]?.string ?? "?")"
    }
    XCTAssertEqual(states, ["desk=inside", "lab=outside"], status.encoded)
    // The proxy's own account: every report forwarded; the stalled client's losses counted.
    let proxy = try XCTUnwrap(status["esphome"], status.encoded)
    XCTAssertEqual(proxy["forwarded"], .number(5688), status.encoded)
    XCTAssertEqual(proxy["encrypted"], .bool(true))
    XCTAssertGreaterThan(proxy["batches_dropped"]?.number ?? 0, 0, status.encoded)

    stalled.stop()
    XCTAssertTrue(agent.waitForLog("gone: the client closed the connection (", limit: 10))
    XCTAssertTrue(agent.log.contains("wrong encryption key (handshake MAC failure)"), agent.log)
    // The garbage came from the same address as the wrong key: counted
    // with it and said in the summary at the stop (the bad-input log).
    let badInput = try agent.client().ok(.status)["esphome"]?["bad_input"]
    XCTAssertEqual(badInput?["closed_on_bad_input"], .number(2), agent.log)
    let stalledTally = agent.log.split(separator: "\n").last {
      $0.contains("gone: the client closed the connection (")
    }
    print("esphome figures: \(result); stalled client: \(stalledTally ?? "?")")
    // It got what its socket took, then lost the oldest batches, counted.
    XCTAssertFalse(stalledTally?.contains(" 0 dropped") ?? true, agent.log)
    XCTAssertEqual(agent.stop(), 0)
    XCTAssertTrue(
      agent.log.contains("esphome: closed 1 more connection from 127.0.0.1 in the last"), agent.log)
  }

  /// An agent with the proxy on (encrypted) and no radio to speak of: the
  /// demo capture, whose replay starts an hour from now.
  func idleProxy() throws -> (agent: AgentProcess, port: Int, key: String) {
    let key = Data((0..<32).map { UInt8($0 * 7 + 3) }).base64EncodedString()
    try (key + "\n").write(toFile: dir + "/key", atomically: true, encoding: .utf8)
    chmod(dir + "/key", 0o600)
    let port = try Broker.unusedPort()
    let agent = try AgentProcess(
      config:
        "[esphome]\nenabled = true\nport = \(port)\nkey_file = \(dir)/key\nname = earshot-test\n",
      arguments: [
        "--input", repo.appendingPathComponent("captures/demo.btsnoop").path, "--pace", "1",
        "--start-at", String(Int(Date().timeIntervalSince1970) + 3600),
      ])
    XCTAssertTrue(agent.waitForLog("Bluetooth proxy 'earshot-test' on 127.0.0.1:\(port)"))
    return (agent, port, key)
  }

  /// Issue 42's lockout: eight connections that never say a byte, each
  /// reopened as soon as the proxy closes it, held for a minute
  /// (max_clients = 8). Before, they kept aioesphomeapi out the whole time
  /// ("EOF received"). Now each of its ten tries is in within 2 s (taking
  /// the place of the oldest silent one when all are taken); the log says
  /// it in a bounded number of lines.
  func testSilentConnectionsHeldAndReopenedNeverKeepAioesphomeapiOut() throws {
    let (agent, port, key) = try idleProxy()
    let holders = try Helper(Self.venvPython, [script, "hold", String(port), "8", "62"])
    XCTAssertEqual(holders.line(), "holding")
    // Silent, they reach the proxy after TCP_DEFER_ACCEPT (about 3 s).
    var status = try agent.client().ok(.status)
    for _ in 0..<150 where status["esphome"]?["clients"] != .number(8) {
      usleep(100_000)
      status = try agent.client().ok(.status)
    }
    XCTAssertEqual(status["esphome"]?["clients"], .number(8), status.encoded)
    // Ten tries, 5 s apart, each connecting, reading the device info, leaving.
    let tries = try XCTUnwrap(
      try Helper(Self.venvPython, [script, "connect", String(port), key, "10", "5"]).json(),
      agent.log)
    XCTAssertEqual(tries["errors"] as? [String], [], "\(tries)")
    let took = try XCTUnwrap(tries["took"] as? [Double], "\(tries)")
    XCTAssertEqual(took.count, 10, "\(tries)")
    for t in took { XCTAssertLessThan(t, 2, "\(took)") }
    let held = try XCTUnwrap(holders.json(), agent.log)
    let reopened = try XCTUnwrap(held["reopened"] as? Int)
    // The silent ones were closed (no Hello in 10 s, or displaced) and came back.
    XCTAssertGreaterThanOrEqual(reopened, 10, "\(held)")
    let after = try agent.client().ok(.status)
    let counted = after["esphome"]?["bad_input"]
    // The first try found every slot taken (at least it displaced one;
    // later ones may find a slot whose silent holder is still on its way
    // back, held up by TCP_DEFER_ACCEPT).
    XCTAssertGreaterThanOrEqual(counted?["displaced"]?.number ?? 0, 1, after.encoded)
    XCTAssertEqual(agent.stop(), 0)
    // Bounded: per kind a first line and a summary (at the stop, within a
    // minute), whatever the number of displaced and reopened connections.
    let esphomeLines = agent.log.split(separator: "\n").filter {
      $0.contains("esphome:") && !$0.contains("Bluetooth proxy") && !$0.contains("(try-")
        && !$0.contains("the client disconnected")
    }
    print(
      "lockout figures: tries took \(took) s; \(reopened) reopenings; \(esphomeLines.count) bad-input lines; \(counted?.encoded ?? "?")"
    )
    XCTAssertLessThanOrEqual(esphomeLines.count, 2 * 4, esphomeLines.joined(separator: "\n"))
  }

  /// 500 connections at a proxy whose eight slots are held by subscribed
  /// aioesphomeapi clients: each is refused (nothing to displace), and the
  /// log says so in two lines (the first, then the count at the stop)
  /// where it wrote one per connection before.
  func testFiveHundredRefusedConnectionsAreTwoLines() throws {
    let (agent, port, key) = try idleProxy()
    let clients = try Helper(Self.venvPython, [script, "load", String(port), key, "8", "60"])
    XCTAssertEqual(clients.line(), "subscribed")
    let flood = try XCTUnwrap(
      try Helper(Self.venvPython, [script, "flood", String(port), "500"]).json())
    XCTAssertEqual(flood["opened"] as? Int, 500)
    var refused = 0.0
    for _ in 0..<100 {
      refused =
        (try agent.client().ok(.status))["esphome"]?["bad_input"]?["refused"]?.number ?? 0
      if refused >= 500 { break }
      usleep(50_000)
    }
    XCTAssertEqual(refused, 500, agent.log)
    XCTAssertEqual(agent.logCount("esphome: refused"), 1, agent.log)
    clients.stop()
    XCTAssertEqual(agent.stop(), 0)
    let lines = agent.log.split(separator: "\n").filter { $0.contains("esphome: refused") }
    print("refused figures: 500 connections, \(lines.count) lines: \(lines)")
    XCTAssertEqual(lines.count, 2, agent.log)
    XCTAssertTrue(
      lines.last?.contains("refused 499 more connections from 127.0.0.1 in the last") ?? false,
      agent.log)
  }

  /// `insecure_plaintext = true`: aioesphomeapi without a key gets the
  /// demo's 400 advertisements; a client with a key is told the device is
  /// plaintext; the agent warned at start.
  func testPlaintextOnlyWhenAskedAndLoudly() throws {
    let capture = repo.appendingPathComponent("captures/demo.btsnoop").path
    let port = try Broker.unusedPort()
    let start = Int(Date().timeIntervalSince1970) + 6
    let agent = try AgentProcess(
      config: "[esphome]\nenabled = true\nport = \(port)\ninsecure_plaintext = true\n",
      arguments: ["--input", capture, "--pace", "1", "--start-at", String(start)])
    XCTAssertTrue(agent.waitForLog("WITHOUT encryption on 127.0.0.1:\(port)"), agent.log)
    let keyed = try XCTUnwrap(
      try Helper(
        Self.venvPython,
        [script, "wrong-key", String(port), Data(repeating: 1, count: 32).base64EncodedString()]
      ).json())
    XCTAssertEqual(keyed["error"] as? String, "EncryptionPlaintextAPIError", "\(keyed)")
    let receiver = try Helper(
      Self.venvPython, [script, "receive", String(port), "", capture, "20"])
    let subscribed = try XCTUnwrap(receiver.json()?["subscribed"] as? Double)
    XCTAssertLessThan(subscribed, Double(start))
    let result = try XCTUnwrap(receiver.json(), agent.log)
    XCTAssertEqual(result["expected"] as? Int, 400)
    XCTAssertEqual(result["received"] as? Int, 400, "\(result)")
    XCTAssertEqual(result["mismatches"] as? Int, 0, "\(result)")
    XCTAssertEqual(result["bluetooth_proxy_feature_flags"] as? Int, 1 | 32 | 64)
    XCTAssertEqual(agent.stop(), 0)
  }
}
