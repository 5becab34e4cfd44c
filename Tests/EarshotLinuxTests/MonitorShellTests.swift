import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotCore
@testable import EarshotLinux

final class MonitorShellTests: XCTestCase {
  var dir = ""

  override func setUp() {
    dir =
      NSTemporaryDirectory() + "earshot-monitor-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
  }

  override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

  func testStateFileIsReplacedAtomically() throws {
    let f = StateFile(path: dir + "/state")
    XCTAssertNil(try f.read())
    try f.write("one\n")
    try f.write("two\n")
    XCTAssertEqual(try f.read(), "two\n")
    let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir)
    XCTAssertEqual(leftovers, ["state"], "no temporary file left behind")
    // A missing directory is created (a fresh user's $XDG_STATE_HOME/earshot)...
    try StateFile(path: dir + "/missing/deeper/state").write("x")
    XCTAssertEqual(try StateFile(path: dir + "/missing/deeper/state").read(), "x")
    // ...but a path that cannot be a directory is an error.
    XCTAssertThrowsError(try StateFile(path: dir + "/state/inside").write("x"))
  }

  func testHookGetsEnvironmentAndOverdueHookIsKilled() throws {
    var log: [String] = []
    let hooks = HookRunner { log.append($0) }
    let out = dir + "/env"
    hooks.spawn(
      ["/bin/sh", "-c", "echo \"$EARSHOT_REGION $EARSHOT_EVENT $EARSHOT_DISTANCE\" > '\(out)'"],
      environment: [
        ("EARSHOT_REGION", "desk"), ("EARSHOT_EVENT", "enter"), ("EARSHOT_DISTANCE", "1.80"),
      ],
      timeout: 5, label: "t1")
    hooks.spawn(["/bin/sleep", "30"], environment: [], timeout: 0.2, label: "slow")
    hooks.spawn(["/nonexistent/hook"], environment: [], timeout: 1, label: "missing")
    XCTAssertEqual(hooks.running.count, 2, "spawning never waits")
    hooks.finish()
    XCTAssertEqual(try String(contentsOfFile: out, encoding: .utf8), "desk enter 1.80\n")
    XCTAssertTrue(log.contains("t1: exited with status 0"), "\(log)")
    XCTAssertTrue(log.contains("slow: killed by signal 9 (timed out)"), "\(log)")
    XCTAssertTrue(log.contains { $0.hasPrefix("missing: cannot run /nonexistent/hook") }, "\(log)")
  }

  /// A generated capture through the driver, twice, with a state file in
  /// between: hooks run on the real transitions and the restart gives no
  /// second enter.
  func testReplayWithHooksAndStateAcrossARestart() throws {
    var s = Scenario()
    s.duration = 400
    var b = ScenarioBeacon(
      name: "desk",
      id: TrackedID(uuid: BeaconUUID("8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182")!, major: 1, minor: 10))
    b.interval = 1
    b.loss = 0.3
    b.present = [60..<250]
    // A neighbour's beacon, heard all along, so the capture starts at 0 s.
    var other = ScenarioBeacon(name: "other", id: TrackedID(uuid: b.id.uuid, major: 7, minor: 1))
    other.present = [0..<400]
    s.beacons = [b, other]
    let capture = s.capture().bytes
    let marks = dir + "/marks"
    let config = try Config.build(
      IniReader.parse(
        """
        [region "desk"]
        uuid = 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182
        major = 1
        exit_after = 30
        on_enter = /bin/sh -c "echo enter $EARSHOT_MAJOR $EARSHOT_MINOR >> '\(marks)'"
        on_exit = /bin/sh -c "echo exit $EARSHOT_REGION >> '\(marks)'"
        """, file: "t.conf"))

    func replay(until: Int64) throws -> [MonitorEvent] {
      try replayThroughDriver(capture, config: config, stateFile: dir + "/state", until: until)
    }
    // First run: never seen before -> state unknown, then outside, then the
    // arrival at 60 s is an enter; stop at 200 s while inside.
    let first = try replay(until: s.micros(200))
    XCTAssertEqual(first.map(\.kind), [.state, .state, .enter])
    // Second run over the whole capture from the start: still inside at
    // first report -> no enter; leaves at 250 s -> exit.
    let second = try replay(until: s.micros(400))
    XCTAssertEqual(second.map(\.kind), [.state, .state, .exit])
    XCTAssertEqual(second[1].state, .inside)
    let text = try String(contentsOfFile: marks, encoding: .utf8)
    XCTAssertEqual(text, "enter 1 10\nexit desk\n")
    XCTAssertTrue(try StateFile(path: dir + "/state").read()!.contains("\toutside\t"))
  }
}
