import CLinux
import EarshotCore
import XCTest

@testable import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

/// The stream server on loopback TCP with a line protocol of its own: an
/// oversize line is answered "oversized" and the client closed, a client
/// past the cap is told "full".
final class StreamServerTests: XCTestCase {
  func testAFrameSplitAcrossReadsArrivesWhole() throws {
    let fixture = try Fixture()
    let client = try fixture.connect()
    defer { client.close() }
    try client.write("hel")
    try fixture.run { fixture.service.admitted == 1 }
    try fixture.run(for: 20_000_000)
    XCTAssertEqual(fixture.service.allFrames, [])
    try client.write("lo\n")
    try fixture.run { !fixture.service.allFrames.isEmpty }
    XCTAssertEqual(fixture.service.allFrames, ["hello"])
  }

  func testSeveralFramesInOneReadAllArriveInOrder() throws {
    let fixture = try Fixture()
    let client = try fixture.connect()
    defer { client.close() }
    try client.write("a\nbb\nccc\n")
    try fixture.run { fixture.service.allFrames.count == 3 }
    XCTAssertEqual(fixture.service.allFrames, ["a", "bb", "ccc"])
  }

  func testAnOversizeFrameIsAnsweredThenTheClientDropped() throws {
    let fixture = try Fixture(maxFrame: 16)
    let client = try fixture.connect()
    defer { client.close() }
    try client.write(String(repeating: "x", count: 40) + "\nafter\n")
    try fixture.run { !fixture.service.drops.isEmpty }
    XCTAssertEqual(Array(fixture.service.drops.values), [.closed("oversized")])
    XCTAssertEqual(fixture.service.allFrames, [], "nothing after the oversize frame is handled")
    XCTAssertEqual(try client.readToEnd(), "oversized\n")
    XCTAssertEqual(fixture.server.clientCount, 0)
  }

  func testOneClientPastTheLimitIsRefusedAndTheOthersGoOn() throws {
    let fixture = try Fixture(maxClients: 2)
    let first = try fixture.connect()
    let second = try fixture.connect()
    let third = try fixture.connect()
    defer { for client in [first, second, third] { client.close() } }
    try fixture.run { fixture.service.refused == 1 && fixture.service.admitted == 2 }
    XCTAssertEqual(try third.readToEnd(), "full\n")
    XCTAssertEqual(fixture.server.clientCount, 2)
    try first.write("one\n")
    try second.write("two\n")
    try fixture.run { fixture.service.allFrames.count == 2 }
    XCTAssertEqual(Set(fixture.service.allFrames), ["one", "two"])
  }

  /// A full server whose service names a client to make room: that one
  /// is dropped (`displaced`, told once), the newcomer served, the cap kept.
  func testAServiceMayGiveAClientsPlaceToANewcomer() throws {
    let fixture = try Fixture(maxClients: 2)
    fixture.service.displaceOldest = true
    let first = try fixture.connect()
    let second = try fixture.connect()
    try fixture.run { fixture.service.admitted == 2 }
    let third = try fixture.connect()
    defer { for client in [first, second, third] { client.close() } }
    try fixture.run { fixture.service.admitted == 3 }
    XCTAssertEqual(fixture.service.drops, [1: .displaced])
    XCTAssertEqual(try first.readToEnd(), "")
    XCTAssertEqual(fixture.server.clientCount, 2)
    try second.write("two\n")
    try third.write("three\n")
    try fixture.run { fixture.service.allFrames.count == 2 }
    XCTAssertEqual(fixture.service.allFrames, ["two", "three"])
  }

  func testASlowClientIsDroppedWhileTheOthersContinue() throws {
    let fixture = try Fixture(maxQueuedBytes: 64 * 1024)
    let slow = try fixture.connect(receiveBuffer: 4096)
    let fast = try fixture.connect()
    defer { for client in [slow, fast] { client.close() } }
    try fixture.run { fixture.service.admitted == 2 }
    // Client IDs are given in accept order.
    let (slowID, fastID) = (1, 2)
    let chunk = [UInt8](repeating: 0x2E, count: 4096)
    let chunks = 256  // 1 MiB: far more than the kernel buffers for the slow one
    var sent = 0
    var fastReceived = 0
    var buffer = [UInt8](repeating: 0, count: 65536)
    try fixture.loop.watch(fast.fd) { _ in
      let n = buffer.withUnsafeMutableBytes { recv(fast.fd.rawValue, $0.baseAddress, $0.count, 0) }
      if n > 0 { fastReceived += n }
    }
    func sendSome() {
      for _ in 0..<8 where sent < chunks {
        fixture.server.send(chunk, to: slowID)
        fixture.server.send(chunk, to: fastID)
        sent += 1
      }
      if sent < chunks { fixture.loop.after(nanos: 1_000_000) { sendSome() } }
    }
    sendSome()
    try fixture.run { fastReceived == chunks * chunk.count }
    fixture.loop.unwatch(fast.fd)
    XCTAssertEqual(fixture.service.drops[slowID], .outputOverflow)
    XCTAssertNil(fixture.service.drops[fastID])
    XCTAssertTrue(fixture.server.isConnected(fastID))
    XCTAssertEqual(fastReceived, chunks * chunk.count)
  }
}

/// A line protocol for the tests.
private final class LineService: StreamService {
  final class Connection {
    var framer: LineFramer
    init(maxFrame: Int) { framer = LineFramer(limit: maxFrame) }
  }

  let maxFrame: Int
  weak var server: StreamServer<LineService>?
  var admitted = 0
  var refused = 0
  /// When full: take the place of the oldest client instead of refusing.
  var displaceOldest = false
  private var served: [StreamClientID] = []
  var frames: [StreamClientID: [String]] = [:]
  var drops: [StreamClientID: StreamDropReason] = [:]

  init(maxFrame: Int) { self.maxFrame = maxFrame }

  var allFrames: [String] { frames.keys.sorted().flatMap { frames[$0]! } }

  func admit(_ socket: FileDescriptor, from peer: SocketAddress, as id: StreamClientID, full: Bool)
    -> StreamAdmission<Connection>
  {
    if full, displaceOldest {
      admitted += 1
      served.append(id)
      return .acceptDisplacing(Connection(maxFrame: maxFrame), served.removeFirst())
    }
    if full {
      refused += 1
      return .refuse(farewell: Array("full\n".utf8))
    }
    admitted += 1
    // Small kernel buffers: a client that does not read fills them fast.
    var size: Int32 = 4096
    setsockopt(socket.rawValue, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    served.append(id)
    return .accept(Connection(maxFrame: maxFrame))
  }

  func received(
    _ bytes: UnsafeRawBufferPointer, from client: StreamClientID, _ connection: Connection
  ) {
    for item in connection.framer.push(bytes) {
      switch item {
      case .line(let line):
        frames[client, default: []].append(String(decoding: line, as: UTF8.self))
      case .oversized:
        server?.send(Array("oversized\n".utf8), to: client)
        server?.close(client, reason: "oversized")
        return
      }
    }
  }

  func nextOutput(for connection: Connection) -> [UInt8]? { nil }

  func dropped(_ client: StreamClientID, _ connection: Connection, _ reason: StreamDropReason) {
    XCTAssertNil(drops[client], "told once")
    drops[client] = reason
  }

  func acceptPaused(errno: Int32) {}
}

private struct Fixture {
  let loop: EventLoop
  let service: LineService
  let server: StreamServer<LineService>
  let port: Int

  init(maxClients: Int = 8, maxFrame: Int = 1024, maxQueuedBytes: Int = .max) throws {
    loop = try EventLoop()
    service = LineService(maxFrame: maxFrame)
    let address = SocketAddress(ip: "127.0.0.1", port: 0)!
    let listener = FileDescriptor(rawValue: socket(AF_INET, earshot_sock_stream, 0))
    listener.setNonblocking()
    XCTAssertEqual(address.withSockaddr { bind(listener.rawValue, $0, $1) }, 0)
    XCTAssertEqual(listen(listener.rawValue, 16), 0)
    var bound = SocketAddress()
    _ = bound.withMutableSockaddr { getsockname(listener.rawValue, $0, $1) }
    port = bound.port
    var limits = StreamServer<LineService>.Limits(maxClients: maxClients)
    limits.maxQueuedBytes = maxQueuedBytes
    server = try StreamServer(loop: loop, listener: listener, limits: limits, service: service)
    service.server = server
  }

  /// A blocking loopback client; `receiveBuffer` set before connecting.
  func connect(receiveBuffer: Int32? = nil) throws -> TestClient {
    let fd = FileDescriptor(rawValue: socket(AF_INET, earshot_sock_stream, 0))
    if var size = receiveBuffer {
      setsockopt(fd.rawValue, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    let address = SocketAddress(ip: "127.0.0.1", port: port)!
    guard address.withSockaddr({ Glibc.connect(fd.rawValue, $0, $1) }) == 0 else {
      throw SystemError(errno: errno, "connect")
    }
    return TestClient(fd: fd)
  }

  /// Runs the loop until `done` (checked every millisecond), failing after 5 s.
  func run(until done: @escaping () -> Bool) throws {
    var timedOut = false
    let deadline = loop.after(seconds: 5) {
      timedOut = true
      loop.stop()
    }
    func check() {
      if done() { loop.stop() } else { loop.after(nanos: 1_000_000) { check() } }
    }
    loop.after(nanos: 0) { check() }
    try loop.run()
    loop.cancel(deadline)
    XCTAssertFalse(timedOut, "timed out")
  }

  func run(for nanos: UInt64) throws {
    loop.after(nanos: nanos) { loop.stop() }
    try loop.run()
  }
}

private struct TestClient {
  let fd: FileDescriptor

  func write(_ text: String) throws {
    let bytes = Array(text.utf8)
    let n = bytes.withUnsafeBytes { send(fd.rawValue, $0.baseAddress, $0.count, 0) }
    guard n == bytes.count else { throw SystemError(errno: errno, "send") }
  }

  /// What the server sent until it closed (blocking, with a 5 s timeout).
  func readToEnd() throws -> String {
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(
      fd.rawValue, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var all: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let n = buffer.withUnsafeMutableBytes { recv(fd.rawValue, $0.baseAddress, $0.count, 0) }
      if n < 0 { throw SystemError(errno: errno, "recv") }
      if n == 0 { break }
      all += buffer[0..<n]
    }
    return String(decoding: all, as: UTF8.self)
  }

  func close() { fd.close() }
}
