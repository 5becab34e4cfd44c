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

  func testReadableDescriptorCallsItsHandler() throws {
    let loop = try EventLoop()
    var fds: [Int32] = [0, 0]
    XCTAssertEqual(pipe(&fds), 0)
    defer {
      close(fds[0])
      close(fds[1])
    }
    var got: [UInt8] = []
    try loop.watch(fds[0]) { _ in
      var b = [UInt8](repeating: 0, count: 16)
      let n = read(fds[0], &b, 16)
      got += b.prefix(max(0, n))
      loop.unwatch(fds[0])
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
}
