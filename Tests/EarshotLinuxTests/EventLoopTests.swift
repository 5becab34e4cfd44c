import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

final class EventLoopTests: XCTestCase {
  func testTimersFireInDeadlineOrderAndCancelledOnesDoNot() throws {
    let loop = try EventLoop()
    var fired: [String] = []
    loop.after(nanos: 3_000_000) {
      fired.append("c")
      loop.stop()
    }
    loop.after(nanos: 1_000_000) { fired.append("a") }
    let cancelled = loop.after(nanos: 2_000_000) { fired.append("x") }
    loop.after(nanos: 2_000_000) { fired.append("b") }
    loop.cancel(cancelled)
    try loop.run()
    XCTAssertEqual(fired, ["a", "b", "c"])
  }

  /// A moving deadline keeps one timer: arming the same instant again
  /// changes nothing, a new instant replaces the old one, nil cancels, and
  /// each firing hands over the instant it was armed for.
  func testAMovingDeadlineKeepsOneTimer() throws {
    let loop = try EventLoop()
    let timer = MovingDeadline(monotonicOn: loop)
    let late = MovingDeadline(monotonicOn: loop)
    var fired: [MonotonicTime] = []
    var lateFired: [MonotonicTime] = []
    var expected: [MonotonicTime] = []
    func doneOrNot() { if fired.count == 2 && lateFired.count == 1 { loop.stop() } }
    timer.onFire = { deadline in
      fired.append(deadline)
      if fired.count == 1 {
        XCTAssertNil(timer.deadline, "fired, so no longer armed")
        let now = Clock.now()
        timer.arm(at: now + .milliseconds(1))
        timer.arm(at: nil)
        timer.arm(at: now + .milliseconds(2))
        expected.append(now + .milliseconds(2))
      }
      doneOrNot()
    }
    late.onFire = {
      lateFired.append($0)
      doneOrNot()
    }
    let now = Clock.now()
    timer.arm(at: now + .milliseconds(2))
    timer.arm(at: now + .milliseconds(2))
    timer.arm(at: now + .milliseconds(1))
    expected.append(now + .milliseconds(1))
    XCTAssertEqual(timer.deadline, now + .milliseconds(1))
    // A deadline already past fires at once.
    let past = MonotonicTime(nanos: now.nanos - 1_000_000_000)
    late.arm(at: past)
    // Not a speed limit: only a guard against waiting for ever.
    loop.after(seconds: 10) { loop.stop() }
    try loop.run()
    XCTAssertEqual(fired, expected)
    XCTAssertEqual(lateFired, [past])
  }

  /// A deadline moved later keeps its earlier loop timer (no re-arm per
  /// move), yet `onFire` comes once, at the last deadline, never before it.
  func testAMovingDeadlineMovedLaterFiresOnceAtTheLastDeadline() throws {
    let loop = try EventLoop()
    let timer = MovingDeadline(monotonicOn: loop)
    var fired: [(deadline: MonotonicTime, at: MonotonicTime)] = []
    timer.onFire = {
      fired.append(($0, Clock.now()))
      loop.after(nanos: 20_000_000) { loop.stop() }
    }
    let now = Clock.now()
    for ms in 1...30 { timer.arm(at: now + .milliseconds(ms)) }
    XCTAssertEqual(timer.deadline, now + .milliseconds(30))
    loop.after(seconds: 10) { loop.stop() }
    try loop.run()
    XCTAssertEqual(fired.map(\.deadline), [now + .milliseconds(30)])
    XCTAssertGreaterThanOrEqual(fired.first?.at ?? now, now + .milliseconds(30))
    XCTAssertNil(timer.deadline)
  }

  func testReadableDescriptorCallsItsHandler() throws {
    let loop = try EventLoop()
    var fds: [Int32] = [0, 0]
    XCTAssertEqual(pipe(&fds), 0)
    defer {
      close(fds[0])
      close(fds[1])
    }
    var got: [UInt8] = []
    try loop.watch(FileDescriptor(rawValue: fds[0])) { _ in
      var b = [UInt8](repeating: 0, count: 16)
      let n = read(fds[0], &b, 16)
      got += b.prefix(max(0, n))
      loop.unwatch(FileDescriptor(rawValue: fds[0]))
      loop.stop()
    }
    loop.after(nanos: 1_000_000) { _ = write(fds[1], "hi", 2) }
    try loop.run()
    XCTAssertEqual(got, Array("hi".utf8))
  }

  func testSignalsArriveThroughTheLoop() throws {
    let loop = try EventLoop()
    var received: Int32 = 0
    try loop.handleSignals([SIGUSR1]) { sig in
      received = sig
      loop.stop()
    }
    loop.after(nanos: 1_000_000) { raise(SIGUSR1) }
    try loop.run()
    XCTAssertEqual(received, SIGUSR1)
  }

  /// Parts sharing a loop each register their own signals; none replaces another's.
  func testSignalHandlersAddUp() throws {
    let loop = try EventLoop()
    var got: [String] = []
    try loop.handleSignals([SIGUSR1]) { _ in got.append("usr1") }
    try loop.handleSignals([SIGUSR2]) { _ in
      got.append("usr2")
      loop.stop()
    }
    loop.after(nanos: 1_000_000) {
      raise(SIGUSR1)
      raise(SIGUSR2)
    }
    try loop.run()
    XCTAssertEqual(got, ["usr1", "usr2"])
  }
}
