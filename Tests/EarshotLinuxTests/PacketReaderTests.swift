import CLinux
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

/// Batched packet reads (recvmmsg), their ancillary data, the loop's
/// batching of a busy descriptor, and an HCI command's wait for its answer,
/// on real sockets.
final class PacketReaderTests: XCTestCase {
  private func pair() throws -> (Int32, Int32) {
    var fds: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, earshot_sock_seqpacket | earshot_sock_nonblock, 0, &fds) == 0 else {
      throw SystemError(errno: errno, "socketpair")
    }
    return (fds[0], fds[1])
  }

  func testDrainReadsEveryQueuedPacketInOrderThenTheEnd() throws {
    let (r, w) = try pair()
    defer { close(r) }
    for n in 1...70 {
      let packet = (0..<n).map { UInt8(truncatingIfNeeded: n &* 7 &+ $0) }
      XCTAssertEqual(packet.withUnsafeBytes { write(w, $0.baseAddress, n) }, n)
    }
    let reader = PacketReader(slotSize: 128, batch: 32)
    var got: [[UInt8]] = []
    let count = try reader.drain(FileDescriptor(rawValue: r)) { packet, control in
      XCTAssertEqual(control.count, 0)
      got.append(Array(packet))
      return true
    }
    XCTAssertEqual(count, 70)
    XCTAssertEqual(got.map(\.count), Array(1...70))
    XCTAssertEqual(got[41], (0..<42).map { UInt8(truncatingIfNeeded: 42 &* 7 &+ $0) })
    XCTAssertEqual(
      try reader.drain(FileDescriptor(rawValue: r)) { _, _ in true }, 0, "the queue is empty")
    close(w)
    var sawEnd = false
    try reader.drain(FileDescriptor(rawValue: r)) { packet, _ in
      sawEnd = packet.isEmpty
      return false
    }
    XCTAssertTrue(sawEnd, "the peer's close reads as an empty packet")
  }

  func testLongPacketIsCutToTheSlotAndCounted() throws {
    let (r, w) = try pair()
    defer {
      close(r)
      close(w)
    }
    let long = [UInt8](repeating: 9, count: 300)
    _ = long.withUnsafeBytes { write(w, $0.baseAddress, 300) }
    let reader = PacketReader(slotSize: 64, batch: 4)
    var lengths: [Int] = []
    try reader.drain(FileDescriptor(rawValue: r)) { packet, _ in
      lengths.append(packet.count)
      return true
    }
    XCTAssertEqual(lengths, [64])
    XCTAssertEqual(reader.truncated, 1)
  }

  /// cmsg buffers as the kernel lays them out: an unrelated message, then
  /// HCI's timestamp (level SOL_HCI = 0, type HCI_CMSG_TSTAMP = 2).
  func testHCITimestampIsFoundInAncillaryData() {
    var control: [UInt8] = []
    func message(level: Int32, type: Int32, data: [UInt8]) {
      let length = 16 + data.count
      withUnsafeBytes(of: Int(length).littleEndian) { control += $0 }
      withUnsafeBytes(of: level.littleEndian) { control += $0 }
      withUnsafeBytes(of: type.littleEndian) { control += $0 }
      control += data
      while control.count % 8 != 0 { control.append(0) }
    }
    message(level: 1, type: 29, data: [1, 2, 3, 4, 5])
    var timeval: [UInt8] = []
    withUnsafeBytes(of: Int64(1_767_225_600).littleEndian) { timeval += $0 }
    withUnsafeBytes(of: Int64(123_456).littleEndian) { timeval += $0 }
    message(level: 0, type: 2, data: timeval)
    control.withUnsafeBytes {
      XCTAssertEqual(HCISocket.receiveTime(control: $0), 1_767_225_600_123_456)
      XCTAssertNil(
        HCISocket.receiveTime(control: UnsafeRawBufferPointer(rebasing: $0[0..<24])),
        "only the unrelated message")
      XCTAssertNil(
        HCISocket.receiveTime(control: UnsafeRawBufferPointer(rebasing: $0[0..<40])),
        "the timestamp message is cut short")
    }
    XCTAssertNil(HCISocket.receiveTime(control: UnsafeRawBufferPointer(start: nil, count: 0)))
  }

  func testBusyDescriptorIsReadInBatchesAndAQuietOneAtOnce() throws {
    let (r, w) = try pair()
    defer { close(r) }
    let loop = try EventLoop()
    let reader = PacketReader(slotSize: 64, batch: 32)
    var calls = 0
    var packets = 0
    var perCall: [Int] = []
    var ended = false
    try loop.watch(FileDescriptor(rawValue: r), batchingFor: 10_000_000) { _ in
      calls += 1
      let n =
        (try? reader.drain(FileDescriptor(rawValue: r)) { packet, _ in
          if packet.isEmpty {
            ended = true
            loop.stop()
            return false
          }
          return true
        }) ?? 0
      packets += ended ? n - 1 : n
      perCall.append(n)
    }
    // Quiet: three packets 50 ms apart, each read as soon as it comes.
    // Busy: then 300 packets 1 ms apart from another thread.
    let writer = Thread {
      let one: [UInt8] = [4]
      for _ in 0..<3 {
        _ = one.withUnsafeBytes { write(w, $0.baseAddress, 1) }
        usleep(50_000)
      }
      for _ in 0..<300 {
        _ = one.withUnsafeBytes { write(w, $0.baseAddress, 1) }
        usleep(1_000)
      }
      close(w)
    }
    writer.start()
    try loop.run()
    XCTAssertTrue(ended)
    XCTAssertEqual(packets, 303, "nothing lost")
    XCTAssertEqual(Array(perCall.prefix(3)), [1, 1, 1], "quiet packets are not held back")
    XCTAssertLessThan(calls, 303 / 3, "busy packets are read in batches (\(calls) reads)")
  }

  /// A batching handler that closes its descriptor, whose number is then
  /// reused and watched by someone else: the new owner is not put to rest.
  func testAReusedDescriptorNumberIsNotTouchedByTheOldBatching() throws {
    let loop = try EventLoop()
    var (r, w) = try pair()
    var newCalls = 0
    var reused = false
    var oldCalls = 0
    try loop.watch(FileDescriptor(rawValue: r), batchingFor: 50_000_000) { _ in
      oldCalls += 1
      loop.unwatch(FileDescriptor(rawValue: r))
      close(r)
      close(w)
      // The next socketpair gets the lowest free numbers: r's among them.
      let (r2, w2) = try! self.pair()
      reused = r2 == r || w2 == r
      let mine = r2 == r ? r2 : w2
      let other = r2 == r ? w2 : r2
      try! loop.watch(FileDescriptor(rawValue: mine)) { _ in
        var b = [UInt8](repeating: 0, count: 8)
        _ = read(mine, &b, 8)
        newCalls += 1
        if newCalls == 3 { loop.stop() }
      }
      for i in 0..<3 {
        loop.after(nanos: UInt64(i + 1) * 5_000_000) { _ = write(other, "x", 1) }
      }
      (r, w) = (mine, other)
    }
    _ = write(w, "go", 2)
    loop.after(seconds: 5) { loop.stop() }
    try loop.run()
    close(r)
    close(w)
    XCTAssertEqual(oldCalls, 1)
    XCTAssertTrue(reused, "the test needs the number reused")
    XCTAssertEqual(newCalls, 3, "the new owner hears every write, not only the first")
  }

  /// A command's answer may come after other packets (a report, another
  /// command's answer): each goes to `other` in order, without a receive
  /// time on a socket that has none, and the answer ends the wait.
  func testARequestPassesOnWhatComesBeforeItsAnswer() throws {
    let (r, w) = try pair()
    defer { close(w) }
    let hci = HCISocket(adopting: FileDescriptor(rawValue: r), device: 0)
    let report: [UInt8] = [0x04, 0x3E, 0x03, 0x02, 0x00, 0x00]
    let otherAnswer: [UInt8] = [0x04, 0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00]
    let answer: [UInt8] = [0x04, 0x0E, 0x05, 0x01, 0x02, 0x10, 0x00, 0xAA]
    for packet in [report, otherAnswer, answer] {
      XCTAssertEqual(packet.withUnsafeBytes { write(w, $0.baseAddress, $0.count) }, packet.count)
    }
    var seen: [([UInt8], Int64?)] = []
    let response = try hci.request(.readLocalSupportedCommands, timeout: 5) {
      seen.append((Array($0), $1))
    }
    XCTAssertEqual(
      response, .complete(opcode: .readLocalSupportedCommands, returnParameters: [0x00, 0xAA]))
    XCTAssertEqual(seen.map(\.0), [report, otherAnswer, answer])
    XCTAssertTrue(seen.allSatisfy { $0.1 == nil })
    // The command went out as an H4 packet: indicator, opcode, no parameters.
    var sent = [UInt8](repeating: 0, count: 16)
    let n = sent.withUnsafeMutableBytes { read(w, $0.baseAddress, $0.count) }
    XCTAssertEqual(Array(sent[0..<max(n, 0)]), [0x01, 0x02, 0x10, 0x00])
  }

  /// No answer: the request gives up with the command's name.
  func testARequestWithoutAnAnswerTimesOut() throws {
    let (r, w) = try pair()
    defer { close(w) }
    let hci = HCISocket(adopting: FileDescriptor(rawValue: r), device: 0)
    XCTAssertThrowsError(try hci.request(.readLocalSupportedCommands, timeout: 0.05) { _, _ in }) {
      XCTAssertEqual("\($0)", "no answer to Read Local Supported Commands from the controller")
    }
  }
}
