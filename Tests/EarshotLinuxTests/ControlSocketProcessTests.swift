import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// `earshot run` as a subprocess, spoken to over its real socket.
final class ControlSocketProcessTests: XCTestCase {
  func testBadLinesEachGetOneErrorAndTheConnectionGoesOn() throws {
    let agent = try AgentProcess()
    let c = try agent.client()
    var input = Array("{not json\n".utf8)
    input += Array(
      ("{\"id\":2,\"cmd\":\"status\",\"pad\":\"" + String(repeating: "x", count: 70_000) + "\"}\n")
        .utf8)
    input += Array("{\"id\":3,\"cmd\":\"reboot\"}\n".utf8)
    input += Array("{\"id\":4,\"cmd\":\"volume.set\"}\n".utf8)
    input += Array("{\"cmd\":\"status\"}\n".utf8)
    input += Array("[1,2]\n\n".utf8)
    input += Array("{\"id\":\"last\",\"cmd\":\"find.status\"}\n".utf8)
    try c.write(input)
    var responses: [JSONValue] = []
    while let m = try c.readMessage() {
      responses.append(m)
      if m["id"] == .string("last") { break }
    }
    let summary = responses.map { "\($0["id"]!.encoded) \($0["error"]?["code"]?.string ?? "ok")" }
    XCTAssertEqual(
      summary,
      [
        "null parse_error", "null line_too_long", "3 unknown_command", "4 missing_field",
        "null missing_field", "null invalid_request", "\"last\" ok",
      ])
    // Still served, same connection and others.
    XCTAssertEqual(try c.ok(.status)["find"]?["state"], .string("idle"))
    XCTAssertEqual(try agent.client().ok(.findStatus)["find"]?["state"], .string("idle"))
    XCTAssertEqual(agent.stop(), 0)
    XCTAssertFalse(FileManager.default.fileExists(atPath: agent.socket), "socket removed on exit")
  }

  func testSocketIsMode0660() throws {
    let agent = try AgentProcess()
    var st = stat()
    XCTAssertEqual(stat(agent.socket, &st), 0)
    XCTAssertEqual(st.st_mode & 0o777, 0o660)
    XCTAssertEqual(st.st_mode & S_IFMT, S_IFSOCK)
  }

  func testSecondAgentOnTheSameSocketIsRefused() throws {
    let agent = try AgentProcess()
    let r = try runEarshot([
      "run", "--socket", agent.socket, "--state-dir", agent.directory + "/s2",
    ])
    XCTAssertEqual(r.status, 1)
    XCTAssertTrue(r.err.contains("already serving"), r.err)
    XCTAssertEqual(
      try agent.client().ok(.findStatus)["ok"], .bool(true), "the first one still serves")
  }

  func testTwoHundredFiftyConcurrentClients() throws {
    let agent = try AgentProcess()
    var clients: [ControlClient] = []
    for _ in 0..<250 { clients.append(try agent.client()) }
    // Every client sends before any reads: all are open at once.
    for (i, c) in clients.enumerated() {
      try c.writeLine(ControlRequest(id: .int(i), command: .status).encoded)
    }
    var seenCounts: [Int] = []
    for (i, c) in clients.enumerated() {
      let r = try XCTUnwrap(try c.readMessage())
      XCTAssertEqual(r["id"], .int(i))
      XCTAssertEqual(r["ok"], .bool(true))
      if let n = r["agent"]?["clients"]?.integer { seenCounts.append(Int(n)) }
    }
    XCTAssertEqual(seenCounts.max(), 250, "all 250 were connected together")
  }

  func testAClientThatDoesNotReadNeverBlocksTheOthers() throws {
    let agent = try AgentProcess()
    // A raw nonblocking client that sends requests until the agent stops
    // taking them, and never reads a response.
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &addr.sun_path) { raw in
      for (i, b) in agent.socket.utf8.enumerated() { raw[i] = b }
    }
    let rc = withUnsafePointer(to: &addr) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    XCTAssertEqual(rc, 0)
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    let burst = Array(String(repeating: "{\"id\":1,\"cmd\":\"status\"}\n", count: 1000).utf8)
    var total = 0
    var stuck = false
    // The agent answers until its queue for this client passes the high-water
    // mark, then stops reading it; the kernel buffers fill and send says EAGAIN.
    while total < 64 * 1024 * 1024 {
      let n = burst.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
      if n < 0 {
        if errno == EAGAIN {
          stuck = true
          break
        }
        break  // dropped by the agent: also fine
      }
      total += n
    }
    XCTAssertTrue(stuck || total > 0, "sent \(total) bytes")
    // The others are served all the while.
    let other = try agent.client()
    XCTAssertEqual(try other.ok(.findStatus)["find"]?["state"], .string("idle"))
    let clients = try other.ok(.status)["agent"]?["clients"]?.integer
    XCTAssertNotNil(clients)
    XCTAssertTrue(agent.process.isRunning)
  }
}
