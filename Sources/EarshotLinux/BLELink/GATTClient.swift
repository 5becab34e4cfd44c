import CBlueZ
import CLinux
import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// A GATT client on a raw L2CAP socket on the ATT fixed channel (CID 4):
/// the central side of the link, without bluetoothd in the way. Sequential
/// (one request at a time, as ATT requires); while it waits for a response
/// it prints notifications, confirms indications and answers the peer's own
/// requests (bluetoothd on the other side discovers our GATT server too).
public final class GATTClient {
  private let fd: Int32
  public private(set) var mtu: UInt16 = 23
  /// Notifications and indications: (handle, value).
  public var onNotification: ((UInt16, [UInt8]) -> Void)?

  public enum Security: Int32, Sendable {
    /// No encryption.
    case low = 1
    /// Encrypted (Just Works pairing is enough).
    case medium = 2
    /// Encrypted with an authenticated (MITM-protected) key.
    case high = 3
  }

  /// Connects from `adapter` (hciN) to `peer` on the LE ATT channel.
  public init(
    adapter: String, peer: BDAddress, randomAddress: Bool, security: Security,
    timeoutSeconds: Double = 20
  ) throws {
    let dev = hci_devid(adapter)
    guard dev >= 0 else {
      throw GATTClientError("no adapter \(adapter) (hciconfig lists the adapters)")
    }
    var local = bdaddr_t()
    guard hci_devba(dev, &local) >= 0 else {
      throw GATTClientError("cannot read \(adapter)'s address: \(String(cString: strerror(errno)))")
    }
    let s = socket(AF_BLUETOOTH, earshot_sock_seqpacket | earshot_sock_cloexec, 0)
    guard s >= 0 else {
      throw GATTClientError(
        "cannot open an L2CAP socket: \(String(cString: strerror(errno))) (is the bluetooth module loaded?)"
      )
    }
    fd = s
    var ok = false
    defer { if !ok { close(s) } }
    var localBytes = [UInt8](repeating: 0, count: 6)
    withUnsafeBytes(of: &local) { for i in 0..<6 { localBytes[i] = $0[i] } }
    var bindAddr = Self.sockaddrL2(address: localBytes, type: 1)
    guard
      bindAddr.withUnsafeMutableBytes({
        bind(s, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), 14)
      }) == 0
    else {
      throw GATTClientError("cannot bind to \(adapter): \(String(cString: strerror(errno)))")
    }
    var sec = bt_security(level: UInt8(security.rawValue), key_size: 0)
    guard setsockopt(s, 274, 4, &sec, socklen_t(MemoryLayout<bt_security>.size)) == 0 else {
      throw GATTClientError("cannot set BT_SECURITY: \(String(cString: strerror(errno)))")
    }
    let flags = fcntl(s, F_GETFL)
    _ = fcntl(s, F_SETFL, flags | O_NONBLOCK)
    var peerBytes = [UInt8](repeating: 0, count: 6)
    for i in 0..<6 { peerBytes[i] = UInt8(truncatingIfNeeded: peer.raw >> UInt64(8 * i)) }
    var remote = Self.sockaddrL2(address: peerBytes, type: randomAddress ? 2 : 1)
    let r = remote.withUnsafeMutableBytes {
      connect(s, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), 14)
    }
    if r != 0 && errno != EINPROGRESS {
      throw GATTClientError(Self.connectMessage(errno, peer, adapter))
    }
    var p = pollfd(fd: s, events: Int16(POLLOUT), revents: 0)
    let n = poll(&p, 1, Int32(timeoutSeconds * 1000))
    guard n > 0 else {
      throw GATTClientError(
        "no connection to \(peer) within \(timeoutSeconds) s: is it advertising connectably?")
    }
    var soError: Int32 = 0
    var len = socklen_t(4)
    getsockopt(s, SOL_SOCKET, SO_ERROR, &soError, &len)
    if soError != 0 { throw GATTClientError(Self.connectMessage(soError, peer, adapter)) }
    ok = true
    if security != .low { try raiseSecurity(security, peer: peer, timeoutSeconds: timeoutSeconds) }
  }

  /// Pairs (or re-encrypts with a stored key) up to `wanted`: asking for it
  /// on a connected socket starts SMP; the kernel holds our sends meanwhile.
  /// The peer's requests are answered while we wait.
  private func raiseSecurity(_ wanted: Security, peer: BDAddress, timeoutSeconds: Double) throws {
    guard securityLevel < Int(wanted.rawValue) else { return }
    var sec = bt_security(level: UInt8(wanted.rawValue), key_size: 0)
    _ = setsockopt(fd, 274, 4, &sec, socklen_t(MemoryLayout<bt_security>.size))
    let deadline = Clock.monotonicNanos() + UInt64(timeoutSeconds * 1e9)
    while securityLevel < Int(wanted.rawValue) {
      guard Clock.monotonicNanos() < deadline else {
        throw GATTClientError(
          "pairing with \(peer) did not reach security level \(wanted.rawValue) in \(timeoutSeconds) s (level \(securityLevel)): is an agent confirming it on both sides?"
        )
      }
      // The kernel has no event for "security raised"; check every 50 ms.
      let step = min(deadline, Clock.monotonicNanos() + 50_000_000)
      if let bytes = try receive(until: step), let pdu = ATT.decode(bytes) {
        _ = try handleUnsolicited(bytes, pdu)
      }
    }
    // The level is the link's; the socket takes sends again once the
    // channel is back to connected, which makes it writable.
    var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
    let left =
      deadline > Clock.monotonicNanos() ? (deadline - Clock.monotonicNanos()) / 1_000_000 : 0
    _ = poll(&p, 1, Int32(min(left, 10_000)))
  }

  deinit { close(fd) }

  /// The link's security level now (the kernel raises it after pairing).
  public var securityLevel: Int {
    var sec = bt_security()
    var len = socklen_t(MemoryLayout<bt_security>.size)
    guard getsockopt(fd, 274, 4, &sec, &len) == 0 else { return -1 }
    return Int(sec.level)
  }

  private static func sockaddrL2(address: [UInt8], type: UInt8) -> [UInt8] {
    // struct sockaddr_l2: family u16, psm u16, bdaddr[6], cid u16, bdaddr_type u8 (+pad).
    var b = [UInt8](repeating: 0, count: 14)
    b[0] = UInt8(AF_BLUETOOTH & 0xFF)
    for i in 0..<6 { b[4 + i] = address[i] }
    b[10] = 4  // ATT fixed channel
    b[12] = type
    return b
  }

  private static func connectMessage(_ e: Int32, _ peer: BDAddress, _ adapter: String) -> String {
    let text = String(cString: strerror(e))
    switch e {
    case ECONNREFUSED:
      return
        "\(peer) refused the connection (\(text)): enable LE on \(adapter) through the management interface (btmgmt -i \(adapter) le on; power on)"
    case EBUSY:
      return
        "another ATT client (bluetoothd?) holds the link to \(peer): disconnect it first (bluetoothctl disconnect \(peer))"
    case EACCES, EPERM:
      return "pairing with \(peer) failed (\(text)): is an agent running to confirm it?"
    default:
      return "cannot connect to \(peer): \(text)"
    }
  }

  // MARK: PDUs

  public func send(_ pdu: [UInt8]) throws {
    var tries = 0
    while true {
      let n = pdu.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }
      if n == pdu.count { return }
      // EAGAIN/ENOTCONN: the kernel holds the channel while the link's
      // security changes; it comes back within a second or two.
      if n < 0 && (errno == EAGAIN || errno == EINTR || errno == ENOTCONN) && tries < 50 {
        // The socket is suspended while the link's security is raised.
        tries += 1
        var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        _ = poll(&p, 1, 100)
        continue
      }
      throw GATTClientError("send failed: \(String(cString: strerror(errno)))")
    }
  }

  /// The next PDU, or nil when `deadline` (monotonic ns) passes first.
  func receive(until deadline: UInt64) throws -> [UInt8]? {
    var buf = [UInt8](repeating: 0, count: 1024)
    while true {
      let now = Clock.monotonicNanos()
      guard now < deadline else { return nil }
      var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      let ms = Int32(min(UInt64(Int32.max), (deadline - now) / 1_000_000 + 1))
      let n = poll(&p, 1, ms)
      if n < 0 && errno == EINTR { continue }
      if n <= 0 { continue }
      let got = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      if got < 0 {
        if errno == EAGAIN || errno == EINTR { continue }
        throw GATTClientError("the link went down: \(String(cString: strerror(errno)))")
      }
      if got == 0 { throw GATTClientError("the peer disconnected") }
      return Array(buf[0..<got])
    }
  }

  /// Handles what the peer sends on its own; true if it was one of those.
  private func handleUnsolicited(_ bytes: [UInt8], _ pdu: ATT.PDU) throws -> Bool {
    switch pdu {
    case .notification(let h, let v):
      onNotification?(h, v)
    case .indication(let h, let v):
      try send([ATT.confirmation])
      onNotification?(h, v)
    case .peerRequest(let op):
      if op == ATT.mtuRequest {
        try send(ATT.mtuReply(mtu))
      } else {
        // We serve no attributes: discovery ends at once.
        let discovery = [
          ATT.findInformationRequest, ATT.findByTypeValueRequest, ATT.readByTypeRequest,
          ATT.readByGroupTypeRequest,
        ]
        let handle = bytes.count >= 3 ? UInt16(bytes[1]) | UInt16(bytes[2]) << 8 : 0
        try send(
          ATT.error(
            request: op, handle: handle,
            code: discovery.contains(op) ? ATT.attributeNotFound : ATT.requestNotSupported))
      }
    case .other: break
    default: return false
    }
    return true
  }

  /// Sends a request and returns its response (or the error response).
  public func request(_ pdu: [UInt8], timeoutSeconds: Double = 30) throws -> ATT.PDU {
    try send(pdu)
    let deadline = Clock.monotonicNanos() + UInt64(timeoutSeconds * 1e9)
    while let bytes = try receive(until: deadline) {
      guard let decoded = ATT.decode(bytes) else { continue }
      if try handleUnsolicited(bytes, decoded) { continue }
      return decoded
    }
    throw GATTClientError("no ATT response in \(timeoutSeconds) s")
  }

  /// Waits for notifications until `deadline`, or until `stop` says so.
  public func pump(until deadline: UInt64, stop: () -> Bool = { false }) throws {
    while !stop(), let bytes = try receive(until: deadline) {
      if let decoded = ATT.decode(bytes) { _ = try handleUnsolicited(bytes, decoded) }
    }
  }

  // MARK: GATT procedures

  public func exchangeMTU(_ want: UInt16 = 247) throws {
    if case .mtu(let theirs) = try request(ATT.exchangeMTU(want)) {
      mtu = max(23, min(want, theirs))
    }
  }

  /// The handle range of the primary service with this 128-bit UUID.
  public func findService(_ uuid: String) throws -> (UInt16, UInt16)? {
    guard let value = ATT.uuidBytes(uuid) else { return nil }
    let pdu = try request(
      ATT.findByTypeValue(start: 1, end: 0xFFFF, type: ATT.primaryService, value: value))
    if case .servicesFound(let found) = pdu { return found.first }
    return nil
  }

  /// The handle range of the primary service with this 16-bit SIG UUID.
  public func findService(_ uuid: UInt16) throws -> (UInt16, UInt16)? {
    let value = [UInt8(uuid & 0xFF), UInt8(uuid >> 8)]
    let pdu = try request(
      ATT.findByTypeValue(start: 1, end: 0xFFFF, type: ATT.primaryService, value: value))
    if case .servicesFound(let found) = pdu { return found.first }
    return nil
  }

  public func characteristics(_ range: (UInt16, UInt16)) throws -> [ATT.Characteristic] {
    var out: [ATT.Characteristic] = []
    var start = range.0
    while start <= range.1 {
      let pdu = try request(ATT.readByType(start: start, end: range.1, type: ATT.characteristic))
      guard case .characteristics(let found) = pdu, let last = found.last else { break }
      out += found
      if last.valueHandle >= range.1 { break }
      start = last.valueHandle + 1
    }
    return out
  }

  /// The Client Characteristic Configuration descriptor after a value handle.
  public func configurationHandle(after value: UInt16, end: UInt16) throws -> UInt16? {
    guard value < end else { return nil }
    let pdu = try request(ATT.findInformation(start: value + 1, end: end))
    guard case .information(let items) = pdu else { return nil }
    return items.first { $0.1 == ATT.clientConfiguration }?.0
  }

  /// Writes without response (ATT Write Command): nothing comes back.
  public func writeWithoutResponse(_ handle: UInt16, _ value: [UInt8]) throws {
    try send(ATT.writeCommand(handle: handle, value: value))
  }

  /// Writes with response: nil on success, else the ATT error code.
  public func write(_ handle: UInt16, _ value: [UInt8]) throws -> UInt8? {
    switch try request(ATT.write(handle: handle, value: value)) {
    case .written: return nil
    case .error(_, _, let code): return code
    default: throw GATTClientError("unexpected answer to a write")
    }
  }
}

public struct GATTClientError: Error, CustomStringConvertible {
  public let description: String
  public init(_ d: String) { description = d }
}
