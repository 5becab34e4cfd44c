import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

/// Faults (issue 11) and what the user sees, with the built `earshot` as a
/// subprocess: a config reload with errors, a corrupt or unwritable state
/// file, a full disk under the proximity log, floods of malformed control
/// requests and of clients. Audio faults are in FaultAudioTests.
final class FaultTests: XCTestCase {
  var dir = ""

  override func setUpWithError() throws { dir = try makeTempDirectory() }
  override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

  let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

  /// The office scenario as a capture (desk inside at its end, lab outside).
  func officeCapture() throws -> String {
    let capture = dir + "/office.btsnoop"
    let sim = try runEarshot([
      "simulate", "scenario", "--spec",
      repo.appendingPathComponent("scenarios/office.scenario").path,
      "--write", capture,
    ])
    XCTAssertEqual(sim.status, 0, sim.err)
    return capture
  }

  func officeRegions() throws -> String {
    try String(contentsOf: repo.appendingPathComponent("scenarios/office.conf"), encoding: .utf8)
  }

  func regionStates(_ agent: AgentProcess) throws -> [String: String] {
    let status = try agent.client().ok(.status)
    var out: [String: String] = [:]
    for r in status["regions"]?.array ?? [] {
      if let name = r["region"]?.string, let state = r["state"]?.string { out[name] = state }
    }
    return out
  }

  func requireTool(_ name: String) throws -> String {
    guard let path = Earshot.tool(name) else {
      try requireResource("\(name) (util-linux)")
    }
    return path
  }

  // MARK: Config reload (SIGHUP)

  func testReloadWithErrorsKeepsTheRunningConfigAndSaysWhereTheyAre() throws {
    let capture = try officeCapture()
    let regions = try officeRegions()
    let agent = try AgentProcess(config: regions, arguments: ["--input", capture])
    XCTAssertTrue(agent.waitForLog("replayed"), agent.log)
    let before = try regionStates(agent)
    XCTAssertEqual(before, ["desk": "inside", "lab": "outside"])

    // A bad UUID on line 3 and an unknown key on line 5 of the new file.
    let configPath = agent.directory + "/earshot.conf"
    try "[region \"desk\"]\n# comment\nuuid = not-a-uuid\n[monitor]\nexit_afterr = 10\n"
      .write(toFile: configPath, atomically: true, encoding: .utf8)
    kill(agent.process.processIdentifier, SIGHUP)
    XCTAssertTrue(agent.waitForLog("keeping the running config"), agent.log)
    XCTAssertTrue(agent.log.contains("reload: \(configPath) has 2 problem(s)"), agent.log)
    XCTAssertTrue(agent.log.contains("\(configPath):3: [region \"desk\"] uuid:"), agent.log)
    XCTAssertTrue(agent.log.contains("\(configPath):5: [monitor] exit_afterr:"), agent.log)
    XCTAssertEqual(try regionStates(agent), before, "nothing changed")
    XCTAssertEqual(agent.stop(), 0)
  }

  func testGoodReloadAddsRemovesAndChangesRegionsKeepingUnchangedStates() throws {
    let capture = try officeCapture()
    let agent = try AgentProcess(
      config: try officeRegions() + "\n[find-phone]\ntimeout = 60\n",
      arguments: ["--input", capture])
    XCTAssertTrue(agent.waitForLog("replayed"), agent.log)
    let events = try agent.client()
    _ = try events.ok(.subscribe([.regions]))

    // desk: same beacon, new exit_after and a hook (kept inside); lab
    // removed; porch new; find-phone's timeout and the audio device changed.
    let configPath = agent.directory + "/earshot.conf"
    let new = """
      [region "porch"]
      uuid = 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182
      major = 9
      [region "desk"]
      uuid = 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182
      major = 1
      minor = 10
      exit_after = 45
      on_exit = /bin/true
      [find-phone]
      timeout = 7
      [audio]
      device = plughw:0,0

      """
    try new.write(toFile: configPath, atomically: true, encoding: .utf8)
    kill(agent.process.processIdentifier, SIGHUP)
    XCTAssertTrue(agent.waitForLog("reload: \(configPath): "), agent.log)
    let log = agent.log
    XCTAssertTrue(log.contains("regions added (start unknown): \"porch\""), log)
    XCTAssertTrue(log.contains("regions removed: \"lab\""), log)
    XCTAssertTrue(log.contains("regions changed (state kept): \"desk\""), log)
    XCTAssertTrue(log.contains("applied: [find-phone]"), log)
    XCTAssertTrue(
      log.contains("restart the agent to apply): [audio] device"),
      "says what needs a restart: \(log)")

    let status = try agent.client().ok(.status)
    let regions = status["regions"]?.array ?? []
    XCTAssertEqual(regions.map { $0["region"]?.string ?? "" }, ["porch", "desk"], "config order")
    XCTAssertEqual(try regionStates(agent), ["porch": "unknown", "desk": "inside"])
    XCTAssertEqual(regions.last?["exit_after"], .number(45), "desk has its new exit_after")
    // Subscribers heard about the new region, and nothing about desk.
    let heard = try events.eventsSoFar()
    XCTAssertTrue(
      heard.contains {
        $0["event"] == .string("state") && $0["region"] == .string("porch")
          && $0["state"] == .string("unknown")
      }, "\(heard)")
    XCTAssertFalse(heard.contains { $0["region"] == .string("desk") }, "\(heard)")

    // [find-phone] timeout applies to the next ring.
    let buds = try ControlClient.device("buds", at: agent.socket)
    XCTAssertEqual(try buds.ok(.findStart)["result"], .string("ringing"))
    let left = try XCTUnwrap(try agent.client().ok(.findStatus)["find"]?["seconds_left"]?.number)
    XCTAssertLessThanOrEqual(left, 7)
    _ = try agent.client().ok(.found)
    XCTAssertEqual(agent.stop(), 0)
  }

  // MARK: State file

  func testCorruptStateFileIsAWarningAndIsRewrittenAtTheNextChange() throws {
    let capture = try officeCapture()
    let state = dir + "/state"
    try "earshot-state 1\nregion\tdesk\tgarbage\n\u{1}\u{2}".write(
      toFile: state, atomically: true, encoding: .utf8)
    try (try officeRegions()).write(toFile: dir + "/office.conf", atomically: true, encoding: .utf8)
    let r = try runEarshot([
      "monitor", "--config", dir + "/office.conf", "--input", capture, "--state", state,
      "--no-range", "--no-hooks",
    ])
    XCTAssertEqual(r.status, 0, r.err)
    XCTAssertTrue(
      r.err.contains("warning: the state file \(state) is unreadable"), "names the file: \(r.err)")
    XCTAssertTrue(r.err.contains("every region starts unknown"), r.err)
    let first = r.out.split(separator: "\n").prefix(2)
    XCTAssertTrue(first.allSatisfy { $0.contains("\"state\":\"unknown\"") }, "\(first)")
    // Rewritten, and it reads back as the states the capture ended in.
    let snapshot = try XCTUnwrap(try MonitorSnapshot.load(from: StateFile(path: state)))
    XCTAssertEqual(snapshot.regions.first { $0.name == "desk" }?.known, .inside)
    XCTAssertEqual(snapshot.regions.first { $0.name == "lab" }?.known, .outside)
  }

  func testCorruptStateFileDoesNotStopTheAgent() throws {
    // Live monitoring (waiting for an adapter that is not there) needs CAP_NET_RAW.
    guard geteuid() == 0 else { try requireResource("root (CAP_NET_RAW for the live scanner)") }
    let state = dir + "/agent-state"
    try "not a state file".write(toFile: state, atomically: true, encoding: .utf8)
    let agent = try AgentProcess(
      config: try officeRegions() + "\n[state]\npath = \(state)\n[scanner]\nadapter = hci77\n")
    XCTAssertTrue(agent.waitForLog("warning: the state file \(state) is unreadable"), agent.log)
    XCTAssertEqual(try regionStates(agent), ["desk": "unknown", "lab": "unknown"])
    XCTAssertEqual(agent.stop(), 0)
    // The clean stop rewrote it as a valid (empty: nothing known) state file.
    XCTAssertNotNil(try MonitorSnapshot.load(from: StateFile(path: state)))
  }

  /// The state directory on a read-only file system (a tmpfs remounted
  /// read-only in a private mount namespace as root; a 0500 directory as
  /// another user): monitoring goes on and the reason is said once.
  func testUnwritableStateFileIsSaidOnceAndMonitoringGoesOn() throws {
    let capture = try officeCapture()
    try (try officeRegions()).write(toFile: dir + "/office.conf", atomically: true, encoding: .utf8)
    let ro = dir + "/ro"
    try FileManager.default.createDirectory(atPath: ro, withIntermediateDirectories: true)
    let state = ro + "/state"
    let earshot = try earshotBinary()
    let args = [
      "monitor", "--config", dir + "/office.conf", "--input", capture, "--state", state,
      "--no-range", "--no-hooks",
    ]
    let r: Earshot.Result
    if geteuid() == 0 {
      let unshare = try requireTool("unshare")
      r = try Earshot.run(
        [
          "-m", "--propagation", "private", "sh", "-c",
          "mount -t tmpfs -o size=64k,ro tmpfs \"$1\" && shift && exec \"$@\"", "sh", ro, earshot,
        ] + args, executable: unshare)
    } else {
      chmod(ro, 0o500)
      r = try Earshot.run(args, executable: earshot)
    }
    XCTAssertEqual(r.status, 0, r.stderr)
    // Monitoring went on: the scenario's transitions were all printed.
    XCTAssertTrue(r.stdout.contains("\"event\":\"enter\""), r.stdout)
    XCTAssertTrue(r.stdout.contains("\"event\":\"exit\""), r.stdout)
    let said = r.stderr.components(separatedBy: "cannot save region states to \(state)").count - 1
    XCTAssertEqual(said, 1, "said once, not at every change: \(r.stderr)")
    XCTAssertTrue(r.stderr.contains("monitoring continues"), r.stderr)
  }

  // MARK: Disk full under the proximity log

  func testFullDiskUnderTheLogIsReportedKeptAndCaughtUpLater() throws {
    guard geteuid() == 0 else {
      try requireResource("root, to mount a tiny tmpfs in a private mount namespace")
    }
    let unshare = try requireTool("unshare")
    let nsenter = try requireTool("nsenter")
    let logDir = dir + "/logfs"
    try FileManager.default.createDirectory(atPath: logDir, withIntermediateDirectories: true)
    let db = logDir + "/proximity.sqlite"
    let agent = try AgentProcess(
      config: "[log]\nenabled = true\npath = \(db)\n",
      wrapper: [
        unshare, "-m", "--propagation", "private", "sh", "-c",
        "mount -t tmpfs -o size=2m tmpfs '\(logDir)' && exec \"$@\"", "sh",
      ])
    let pid = agent.process.processIdentifier
    func inside(_ command: String) throws -> Earshot.Result {
      try Earshot.run(["-t", "\(pid)", "-m", "sh", "-c", command], executable: nsenter)
    }
    // The database exists (created at start); now fill the file system.
    XCTAssertEqual(try inside("test -f '\(db)'").status, 0, agent.log)
    _ = try inside("dd if=/dev/zero of='\(logDir)/filler' bs=64k 2>/dev/null; true")
    XCTAssertNotEqual(
      try inside("dd if=/dev/zero of='\(logDir)/probe' bs=64k count=1 2>/dev/null").status, 0,
      "the file system is full")

    // Find-phone events go to the log: ring and found, twice.
    let buds = try ControlClient.device("buds", at: agent.socket)
    for _ in 0..<2 {
      XCTAssertEqual(try buds.ok(.findStart)["result"], .string("ringing"))
      _ = try agent.client().ok(.found)
      _ = try buds.waitFor(event: "notice").map {
        try buds.ok(.noticeAck(NoticeID(try XCTUnwrap($0["notice"]?.integer))))
      }
    }
    XCTAssertTrue(agent.waitForLog("proximity log: cannot write"), agent.log)
    XCTAssertTrue(agent.log.contains("kept in memory and retried"), agent.log)
    XCTAssertEqual(agent.logCount("proximity log: cannot write"), 1, "said once: \(agent.log)")
    // The agent goes on serving while the log cannot be written.
    XCTAssertEqual(try agent.client().ok(.status)["find"]?["state"], .string("idle"))

    // Space again: the writer catches up at its next flush.
    _ = try inside("rm -f '\(logDir)/filler' '\(logDir)/probe'")
    XCTAssertTrue(agent.waitForLog("proximity log: writing again to \(db)"), agent.log)
    let q = try inside(
      "'\(try earshotBinary())' log --db '\(db)' --since 1h --format json")
    XCTAssertEqual(q.status, 0, q.stderr)
    let started = q.stdout.components(separatedBy: "\"event\":\"started\"").count - 1
    let found = q.stdout.components(separatedBy: "\"event\":\"found\"").count - 1
    XCTAssertEqual(started, 2, q.stdout)
    XCTAssertEqual(found, 2, q.stdout)
    XCTAssertEqual(agent.stop(), 0)
  }

  // MARK: Control socket floods

  /// Malformed requests of every kind, one a line.
  static func malformed(_ i: Int) -> [UInt8] {
    switch i % 10 {
    case 0: return Array("{\"id\":\(i),\"cmd\":\"no.such.command\"}\n".utf8)
    case 1: return Array("{\"id\":\(i),\"cmd\":\n".utf8)
    case 2: return Array("not json at all \(i)\n".utf8)
    case 3: return [0xFF, 0xFE, 0x00, 0x80, 0x0A]
    case 4: return Array("{\"cmd\":\"status\"}\n".utf8)  // no id
    case 5: return Array((String(repeating: "[", count: 4000) + "\n").utf8)
    case 6: return Array("{\"id\":\(i),\"cmd\":\"volume.set\",\"volume\":\"loud\"}\n".utf8)
    case 7: return Array("[1,2,3]\n".utf8)
    case 8: return Array("{\"id\":\(i),\"cmd\":\"notice.ack\"}\n".utf8)
    default:
      // Every hundredth is oversized (past the 64 KiB line bound).
      return i % 100 == 9
        ? Array((String(repeating: "x", count: 70_000) + "\n").utf8)
        : Array("{\"id\":1e999999,\"cmd\":\"status\"}\n".utf8)
    }
  }

  func testTenThousandMalformedRequestsOnOneConnectionAndAcross() throws {
    let agent = try AgentProcess()
    // Warm up (allocator pools, first connection), then measure.
    let warm = try agent.client()
    for i in 0..<500 { try warm.write(Self.malformed(i)) }
    for _ in 0..<500 { _ = try XCTUnwrap(try warm.readMessage(timeoutMillis: 30_000)) }
    let rssBefore = agent.residentKB

    // One connection: each request answered with an error, in chunks so
    // neither side's buffers fill.
    let one = try agent.client()
    var errors = 0
    for chunk in stride(from: 0, to: 10_000, by: 250) {
      var bytes: [UInt8] = []
      for i in chunk..<chunk + 250 { bytes += Self.malformed(i) }
      try one.write(bytes)
      for _ in 0..<250 {
        let m = try XCTUnwrap(try one.readMessage(timeoutMillis: 30_000), "no answer")
        if m["ok"] == .bool(false), m["error"]?["code"]?.string != nil { errors += 1 }
      }
    }
    XCTAssertEqual(errors, 10_000, "every malformed request gets an error response")
    XCTAssertEqual(try one.ok(.findStatus)["find"]?["state"], .string("idle"), "still answers")

    // Across connections: 10,000 connections of one malformed request each.
    var across = 0
    for i in 0..<10_000 {
      let c = try agent.client()
      try c.write(Self.malformed(i))
      if let m = try c.readMessage(timeoutMillis: 30_000), m["ok"] == .bool(false) { across += 1 }
    }
    XCTAssertEqual(across, 10_000)
    XCTAssertEqual(
      try agent.client().ok(.status)["agent"]?["clients"]?.integer, 3, "all gone but three")
    let rssAfter = agent.residentKB
    print("VmRSS before \(rssBefore) kB, after 20,000 malformed requests \(rssAfter) kB")
    XCTAssertGreaterThan(rssBefore, 0)
    XCTAssertLessThan(rssAfter - rssBefore, 8 * 1024, "memory does not grow without bound")
    XCTAssertEqual(agent.stop(), 0)
  }

  /// Raises this process's soft open-file limit so it can hold the clients.
  func raiseOwnFileLimit(to want: Int) throws {
    var r = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &r)
    if r.rlim_cur < UInt(want) {
      r.rlim_cur = min(r.rlim_max, UInt(want))
      setrlimit(Int32(RLIMIT_NOFILE.rawValue), &r)
    }
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &r)
    if r.rlim_cur < UInt(want) {
      try requireResource("an open-file limit of \(want) (ulimit -Hn is \(r.rlim_max))")
    }
  }

  func testThousandConcurrentClientsAreAllServed() throws {
    try raiseOwnFileLimit(to: 2200)
    let agent = try AgentProcess()
    var clients: [ControlClient] = []
    for _ in 0..<1000 { clients.append(try agent.client()) }
    // Every one sends before any reads: all are connected at once.
    var ids: [JSONValue] = []
    for c in clients { ids.append(try c.send(.findStatus)) }
    var served = 0
    for (c, id) in zip(clients, ids) {
      if let m = try c.readMessage(timeoutMillis: 30_000), m["id"] == id, m["ok"] == .bool(true) {
        served += 1
      }
    }
    XCTAssertEqual(served, 1000)
    XCTAssertEqual(try clients[0].ok(.status)["agent"]?["clients"]?.integer, 1000)
    XCTAssertFalse(agent.log.contains("out of file descriptors"), agent.log)
    clients.removeAll()
    XCTAssertEqual(agent.stop(), 0)
  }

  func testClientsBeyondTheCapAreRefusedWithOneLogLine() throws {
    try raiseOwnFileLimit(to: 512)
    let agent = try AgentProcess(config: "[control]\nmax_clients = 50\n")
    var held: [ControlClient] = []
    for _ in 0..<50 { held.append(try agent.client()) }
    _ = try held[49].ok(.findStatus)  // all 50 admitted
    var refused = 0
    for _ in 0..<20 {
      let c = try agent.client()
      if let m = try c.readMessage(timeoutMillis: 30_000),
        m["error"]?["code"] == .string("too_many_clients")
      {
        refused += 1
      }
    }
    XCTAssertEqual(refused, 20)
    XCTAssertEqual(agent.logCount("the cap ([control] max_clients = 50)"), 1, agent.log)
    held.removeLast(10)
    XCTAssertTrue(agent.waitForLog("below the cap again; 20 client(s) were refused"), agent.log)
    XCTAssertEqual(try agent.client().ok(.findStatus)["find"]?["state"], .string("idle"))
    XCTAssertEqual(agent.stop(), 0)
  }
}
