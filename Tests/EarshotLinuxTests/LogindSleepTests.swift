import EarshotCore
import EarshotLinux
import EarshotTestSupport
import XCTest

#if canImport(Glibc)
  import Glibc
#endif

/// logind's PrepareForSleep and the delay inhibitor, against a stand-in for
/// systemd-logind on a private bus (the machine has no logind to suspend).
final class LogindSleepTests: XCTestCase {
  /// The stand-in: answers Inhibit with one end of a pipe, as logind does
  /// with a FIFO, and keeps the other end to see when it is released.
  final class StandIn {
    let bus: DBusConnection
    var inhibits: [[DBusValue]] = []
    var readEnds: [Int32] = []

    init(loop: EventLoop, address: String) throws {
      bus = try DBusConnection(loop: loop, address: address)
      try bus.serve(prefix: LogindSleep.path) { [unowned self] call in
        guard call.member == "Inhibit" else { return false }
        self.inhibits.append(call.arguments)
        var ends: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&ends), 0)
        self.readEnds.append(ends[0])
        call.reply([.unixFD(ends[1])])  // sd-bus sends a copy
        close(ends[1])
        return true
      }
      try bus.requestName(LogindSleep.service)
    }

    deinit { for fd in readEnds { close(fd) } }

    func prepareForSleep(_ sleeping: Bool) throws {
      try bus.emit(
        path: LogindSleep.path, interface: LogindSleep.manager, member: "PrepareForSleep",
        [.bool(sleeping)])
    }

    /// Whether every holder of the inhibitor `n` has let it go (EOF).
    func released(_ n: Int) -> Bool {
      var p = pollfd(fd: readEnds[n], events: Int16(POLLIN), revents: 0)
      guard poll(&p, 1, 0) == 1 else { return false }
      var byte: UInt8 = 0
      return read(readEnds[n], &byte, 1) == 0
    }
  }

  func testTheInhibitorHoldsTheSleepUntilTheAgentIsReadyAndIsTakenAgainAtTheWake() throws {
    let bus = try PrivateBus(activation: false)
    let loop = try EventLoop()
    let logind = try StandIn(loop: loop, address: bus.address)
    let agentBus = try DBusConnection(loop: loop, address: bus.address)
    var logs: [String] = []
    let watch = LogindSleep(bus: agentBus, log: { logs.append($0) })
    var steps: [String] = []
    watch.onSleep = {
      steps.append("sleep, inhibitor released: \(logind.released(0))")
    }
    watch.onWake = { steps.append("wake") }
    try watch.start()
    func spin(until done: @escaping () -> Bool) throws {
      let deadline = Clock.monotonicNanos() + 5_000_000_000
      while !done() && Clock.monotonicNanos() < deadline {
        loop.after(seconds: 0.01) { loop.stop() }
        try loop.run()
      }
    }
    try spin { watch.inhibitor != nil }
    XCTAssertNotNil(watch.inhibitor, "the inhibitor is taken at start")
    XCTAssertEqual(
      logind.inhibits.first,
      [
        .string("sleep"), .string("Earshot"),
        .string("saves presence state and pauses decisions before the machine sleeps"),
        .string("delay"),
      ])
    XCTAssertFalse(logind.released(0))

    try logind.prepareForSleep(true)
    try spin { !steps.isEmpty && logind.released(0) }
    XCTAssertEqual(steps, ["sleep, inhibitor released: false"], "held while the agent prepares")
    XCTAssertNil(watch.inhibitor)

    try logind.prepareForSleep(false)
    try spin { steps.count == 2 && watch.inhibitor != nil }
    XCTAssertEqual(steps.last, "wake")
    XCTAssertEqual(logind.inhibits.count, 2, "taken again for the next sleep")
    XCTAssertFalse(logind.released(1))
    XCTAssertEqual(logs, [])
  }

  func testSilentWithoutLogind() throws {
    let bus = try PrivateBus(activation: false)
    let loop = try EventLoop()
    let agentBus = try DBusConnection(loop: loop, address: bus.address)
    var logs: [String] = []
    let watch = LogindSleep(bus: agentBus, log: { logs.append($0) })
    try watch.start()
    loop.after(seconds: 0.3) { loop.stop() }
    try loop.run()
    XCTAssertNil(watch.inhibitor)
    XCTAssertEqual(logs, [])
  }
}
