import CLinux

#if canImport(Glibc)
  import Glibc
#endif

/// Reads whole packets (raw HCI, SOCK_SEQPACKET: one packet per message)
/// from a non-blocking socket, up to `batch` per system call with
/// recvmmsg(2). A batch that comes back short means the queue was empty,
/// so no further call is spent learning that it is: one call per wakeup
/// instead of a read per packet plus the read that says EAGAIN.
public final class PacketReader {
  public let slotSize: Int
  public let controlSize: Int
  public let batch: Int
  private let storage: UnsafeMutableRawPointer
  private let control: UnsafeMutableRawPointer
  private let vectors: UnsafeMutablePointer<iovec>
  private let headers: UnsafeMutablePointer<earshot_mmsghdr>
  /// Packets longer than a slot (cut short; none are expected from HCI,
  /// whose packets are under 260 bytes).
  public private(set) var truncated = 0

  /// `controlSize`: room per packet for ancillary data (timestamps).
  public init(slotSize: Int = 1024, controlSize: Int = 0, batch: Int = 32) {
    precondition(slotSize > 0 && batch > 0 && controlSize >= 0)
    self.slotSize = slotSize
    self.controlSize = controlSize
    self.batch = batch
    storage = .allocate(byteCount: slotSize * batch, alignment: 16)
    control = .allocate(byteCount: max(1, controlSize * batch), alignment: 16)
    vectors = .allocate(capacity: batch)
    headers = .allocate(capacity: batch)
    // The kernel reads these and writes back msg_len, msg_flags and
    // msg_controllen (reset before each call).
    for i in 0..<batch {
      vectors[i] = iovec(iov_base: storage + i * slotSize, iov_len: slotSize)
      headers[i] = earshot_mmsghdr()
      headers[i].msg_hdr.msg_iov = vectors + i
      headers[i].msg_hdr.msg_iovlen = 1
      if controlSize > 0 { headers[i].msg_hdr.msg_control = control + i * controlSize }
    }
  }

  deinit {
    storage.deallocate()
    control.deallocate()
    vectors.deallocate()
    headers.deallocate()
  }

  /// Reads everything queued on `fd`, handing each packet and its
  /// ancillary data to `body` in order; `body` returns false to stop early
  /// (the rest of its batch is dropped, so stop only when the socket is
  /// going away). An empty packet is a stream socket's end (the peer
  /// closed). Returns the packets read.
  @discardableResult
  public func drain(
    _ fd: FileDescriptor,
    _ body: (_ packet: UnsafeRawBufferPointer, _ control: UnsafeRawBufferPointer) -> Bool
  ) throws -> Int {
    var total = 0
    while true {
      if controlSize > 0 {
        for i in 0..<batch { headers[i].msg_hdr.msg_controllen = controlSize }
      }
      let n = earshot_recvmmsg(fd.rawValue, headers, UInt32(batch), earshot_msg_dontwait)
      if n < 0 {
        if errno == EINTR { continue }
        if errno == EAGAIN || errno == EWOULDBLOCK { return total }
        throw SystemError(errno: errno, "recvmmsg")
      }
      for i in 0..<Int(n) {
        if headers[i].msg_hdr.msg_flags & earshot_msg_trunc != 0 { truncated += 1 }
        let length = min(Int(headers[i].msg_len), slotSize)
        let controlLength =
          controlSize > 0 ? min(headers[i].msg_hdr.msg_controllen, controlSize) : 0
        total += 1
        let more = body(
          UnsafeRawBufferPointer(start: storage + i * slotSize, count: length),
          UnsafeRawBufferPointer(start: control + i * controlSize, count: controlLength))
        if !more { return total }
      }
      if Int(n) < batch { return total }
    }
  }
}

/// Ancillary data (cmsg) walked by hand: the CMSG_* macros do not import.
public enum ControlMessages {
  /// The data of the first message at `level`/`type`, if any.
  public static func find(
    level: Int32, type: Int32, in control: UnsafeRawBufferPointer
  ) -> UnsafeRawBufferPointer? {
    // struct cmsghdr: size_t cmsg_len; int cmsg_level; int cmsg_type; then
    // data, each message padded to the alignment of size_t.
    let header = MemoryLayout<Int>.size + 8
    let align = MemoryLayout<Int>.size
    var offset = 0
    while offset + header <= control.count {
      let length = control.loadUnaligned(fromByteOffset: offset, as: Int.self)
      guard length >= header, offset + length <= control.count else { return nil }
      let l = control.loadUnaligned(fromByteOffset: offset + align, as: Int32.self)
      let t = control.loadUnaligned(fromByteOffset: offset + align + 4, as: Int32.self)
      if l == level && t == type {
        return UnsafeRawBufferPointer(rebasing: control[(offset + header)..<(offset + length)])
      }
      offset += (length + align - 1) / align * align
    }
    return nil
  }
}
