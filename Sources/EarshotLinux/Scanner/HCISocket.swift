import CBlueZ
import CLinux
import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// One Bluetooth adapter as the kernel lists it (HCIGETDEVLIST, HCIGETDEVINFO).
public struct HCIAdapter: Equatable, Sendable {
  public let id: UInt16
  /// "hci0"
  public let name: String
  public let address: BDAddress
  public let isUp: Bool
  /// The LMP feature "LE Supported (Controller)". Features are read when the
  /// adapter is first powered, so a never-powered adapter shows none.
  public let supportsLE: Bool
  public let featuresKnown: Bool

  /// Every adapter the kernel has, in index order. An empty list when the
  /// kernel has no Bluetooth support loaded.
  public static func list() throws -> [HCIAdapter] {
    let fd = socket(
      AF_BLUETOOTH, earshot_sock_raw | earshot_sock_cloexec, BTPROTO_HCI)
    if fd < 0 {
      if errno == EAFNOSUPPORT { return [] }
      throw SystemError(errno: errno, "socket(AF_BLUETOOTH)")
    }
    defer { close(fd) }
    // struct hci_dev_list_req: u16 dev_num, then {u16 dev_id; u32 dev_opt} entries at offset 4.
    let maxDevices = 32
    var buffer = [UInt8](repeating: 0, count: 4 + 8 * maxDevices)
    buffer[0] = UInt8(maxDevices)
    let rc = buffer.withUnsafeMutableBytes {
      earshot_ioctl_ptr(fd, earshot_hcigetdevlist(), $0.baseAddress)
    }
    guard rc == 0 else { throw SystemError(errno: errno, "HCIGETDEVLIST") }
    let count = Int(buffer[0]) | Int(buffer[1]) << 8
    var adapters: [HCIAdapter] = []
    for i in 0..<min(count, maxDevices) {
      let id = UInt16(buffer[4 + 8 * i]) | UInt16(buffer[5 + 8 * i]) << 8
      if let a = try? info(fd: fd, id: id) { adapters.append(a) }
    }
    return adapters.sorted { $0.id < $1.id }
  }

  public static func info(id: UInt16) throws -> HCIAdapter {
    let fd = socket(
      AF_BLUETOOTH, earshot_sock_raw | earshot_sock_cloexec, BTPROTO_HCI)
    guard fd >= 0 else { throw SystemError(errno: errno, "socket(AF_BLUETOOTH)") }
    defer { close(fd) }
    return try info(fd: fd, id: id)
  }

  private static func info(fd: Int32, id: UInt16) throws -> HCIAdapter {
    var di = hci_dev_info()
    di.dev_id = id
    guard earshot_ioctl_ptr(fd, earshot_hcigetdevinfo(), &di) == 0 else {
      throw SystemError(errno: errno, "HCIGETDEVINFO hci\(id)")
    }
    let name = withUnsafeBytes(of: di.name) { raw in
      String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
    }
    let features = withUnsafeBytes(of: di.features) { Array($0) }
    let address = withUnsafeBytes(of: di.bdaddr) { raw in
      var v: UInt64 = 0
      for i in 0..<6 { v |= UInt64(raw[i]) << (8 * i) }
      return BDAddress(raw: v)
    }
    return HCIAdapter(
      id: id, name: name.isEmpty ? "hci\(id)" : name, address: address,
      isUp: di.flags & (1 << UInt32(HCI_UP)) != 0,
      supportsLE: features[4] & 0x40 != 0,
      featuresKnown: features.contains { $0 != 0 })
  }

  /// Powers the adapter on (HCIDEVUP), as `hciconfig hciN up` does. Needs
  /// CAP_NET_ADMIN. Already up is fine.
  public static func bringUp(id: UInt16) throws {
    let fd = socket(
      AF_BLUETOOTH, earshot_sock_raw | earshot_sock_cloexec, BTPROTO_HCI)
    guard fd >= 0 else { throw SystemError(errno: errno, "socket(AF_BLUETOOTH)") }
    defer { close(fd) }
    if earshot_ioctl_int(fd, earshot_hcidevup(), Int32(id)) != 0 && errno != EALREADY {
      throw SystemError(errno: errno, "HCIDEVUP hci\(id)")
    }
  }

  /// "hci3" -> 3
  public static func index(fromName name: String) -> UInt16? {
    guard name.hasPrefix("hci") else { return nil }
    return UInt16(name.dropFirst(3))
  }
}

/// A raw HCI socket (AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI) on HCI_CHANNEL_RAW,
/// bound to one adapter or to none (then it only hears the kernel's
/// adapter lifecycle events). Non-blocking: reads return `nil` when empty.
public final class HCISocket {
  public let fd: FileDescriptor
  private var raw: Int32 { fd.rawValue }
  /// The adapter index, or `nil` for an unbound (HCI_DEV_NONE) socket.
  public let device: UInt16?
  /// The filter the socket had before `setFilter`, to put back on close.
  private var originalFilter: hci_filter?
  private var closed = false

  public init(device: UInt16?) throws {
    let fd = socket(
      AF_BLUETOOTH,
      earshot_sock_raw | earshot_sock_cloexec | earshot_sock_nonblock,
      BTPROTO_HCI)
    guard fd >= 0 else { throw SystemError(errno: errno, "socket(AF_BLUETOOTH, SOCK_RAW)") }
    var addr = sockaddr_hci()
    addr.hci_family = sa_family_t(AF_BLUETOOTH)
    addr.hci_dev = device ?? UInt16(HCI_DEV_NONE)
    addr.hci_channel = UInt16(HCI_CHANNEL_RAW)
    let rc = withUnsafePointer(to: &addr) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_hci>.size))
      }
    }
    guard rc == 0 else {
      let e = errno
      _ = Glibc.close(fd)
      throw SystemError(errno: e, "bind hci\(device.map(String.init) ?? "(none)")")
    }
    self.fd = FileDescriptor(rawValue: fd)
    self.device = device
  }

  /// Takes over an open descriptor (a socket pair in tests of the
  /// command/answer exchange).
  init(adopting fd: FileDescriptor, device: UInt16?) {
    self.fd = fd
    self.device = device
  }

  deinit { close() }

  /// Restores the original filter and closes the socket.
  public func close() {
    guard !closed else { return }
    closed = true
    if var f = originalFilter {
      _ = setsockopt(raw, SOL_HCI, HCI_FILTER, &f, socklen_t(MemoryLayout<hci_filter>.size))
    }
    fd.close()
  }

  // MARK: Timestamps

  /// Asks the kernel to attach its receive time to every packet (a cmsg),
  /// so packets read in a batch keep the times they arrived.
  public func enableTimestamps() throws {
    var on: Int32 = 1
    guard setsockopt(raw, SOL_HCI, HCI_TIME_STAMP, &on, socklen_t(MemoryLayout<Int32>.size)) == 0
    else { throw SystemError(errno: errno, "setsockopt HCI_TIME_STAMP") }
  }

  /// Room for the timestamp message per packet.
  public static let controlSize = 64

  /// The kernel's receive time (µs since the epoch) in a packet's
  /// ancillary data; `nil` without one.
  public static func receiveTime(control: UnsafeRawBufferPointer) -> Int64? {
    guard
      let data = ControlMessages.find(
        level: Int32(SOL_HCI), type: Int32(HCI_CMSG_TSTAMP), in: control),
      data.count >= 16
    else { return nil }
    // struct timeval: seconds and microseconds, two longs.
    let seconds = data.loadUnaligned(fromByteOffset: 0, as: Int64.self)
    let micros = data.loadUnaligned(fromByteOffset: 8, as: Int64.self)
    guard seconds > 0, (0..<1_000_000).contains(micros) else { return nil }
    return seconds * 1_000_000 + micros
  }

  // MARK: Filter

  public func filter() throws -> hci_filter {
    var f = hci_filter()
    var len = socklen_t(MemoryLayout<hci_filter>.size)
    guard getsockopt(raw, SOL_HCI, HCI_FILTER, &f, &len) == 0 else {
      throw SystemError(errno: errno, "getsockopt HCI_FILTER")
    }
    return f
  }

  /// Installs `f`, remembering the socket's previous filter the first time.
  public func setFilter(_ f: hci_filter) throws {
    if originalFilter == nil { originalFilter = try filter() }
    var f = f
    guard setsockopt(raw, SOL_HCI, HCI_FILTER, &f, socklen_t(MemoryLayout<hci_filter>.size)) == 0
    else { throw SystemError(errno: errno, "setsockopt HCI_FILTER") }
  }

  /// What a scanner needs: LE Meta events (advertising reports), Command
  /// Complete and Command Status (answers to its commands), Hardware Error;
  /// and copies of the commands other programs send (so it notices when
  /// bluetoothd starts or stops a scan).
  public static var scannerFilter: hci_filter {
    var f = hci_filter()
    hci_filter_clear(&f)
    hci_filter_set_ptype(Int32(H4PacketType.event.rawValue), &f)
    hci_filter_set_ptype(Int32(H4PacketType.command.rawValue), &f)
    for code in [
      HCIEventCode.leMeta, .commandComplete, .commandStatus, .hardwareError,
      .remoteNameRequestComplete,
    ] {
      hci_filter_set_event(Int32(code.rawValue), &f)
    }
    return f
  }

  /// Only the kernel's adapter lifecycle events (registered, removed, up,
  /// down), for an unbound socket.
  public static var lifecycleFilter: hci_filter {
    var f = hci_filter()
    hci_filter_clear(&f)
    hci_filter_set_ptype(Int32(H4PacketType.event.rawValue), &f)
    hci_filter_set_event(Int32(HCIEventCode.stackInternal.rawValue), &f)
    return f
  }

  // MARK: I/O

  /// Writes one command. Throws `SystemError` (EPERM without CAP_NET_RAW,
  /// ENETDOWN when the adapter is down, EPIPE/ENODEV when it is gone).
  public func send(_ command: HCICommand) throws {
    let packet = command.packet
    while true {
      let n = packet.withUnsafeBytes { write(raw, $0.baseAddress, $0.count) }
      if n == packet.count { return }
      if n < 0 && errno == EINTR { continue }
      throw SystemError(errno: n < 0 ? errno : EIO, "sending \(command.opcode.name)")
    }
  }

  /// Reads one packet (H4 indicator first) into `buffer`; `nil` when there
  /// is nothing to read.
  public func receive(into buffer: UnsafeMutableRawBufferPointer) throws -> Int? {
    try receive(into: buffer, control: UnsafeMutableRawBufferPointer(start: nil, count: 0))?.bytes
  }

  /// Reads one packet into `buffer` and its ancillary data (the receive
  /// time, once `enableTimestamps` is on) into `control`. Returns both
  /// lengths, or `nil` when there is nothing to read.
  public func receive(
    into buffer: UnsafeMutableRawBufferPointer, control: UnsafeMutableRawBufferPointer
  ) throws -> (bytes: Int, control: Int)? {
    var iov = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
    return try withUnsafeMutablePointer(to: &iov) { iov in
      while true {
        var header = msghdr()
        header.msg_iov = iov
        header.msg_iovlen = 1
        header.msg_control = control.baseAddress
        header.msg_controllen = control.count
        let n = recvmsg(raw, &header, 0)
        if n >= 0 { return (n, Int(header.msg_controllen)) }
        switch errno {
        case EINTR: continue
        case EAGAIN, EWOULDBLOCK: return nil
        default: throw SystemError(errno: errno, "reading hci\(device.map(String.init) ?? "")")
        }
      }
    }
  }

  /// Sends `command` and waits (poll, not sleep) up to `timeout` seconds for
  /// its Command Complete or Command Status. Every other packet read
  /// meanwhile goes to `other` with the kernel's receive time (µs since the
  /// epoch, `nil` without timestamps), so no advertising report is lost or
  /// misdated.
  public func request(
    _ command: HCICommand, timeout: Double,
    other: (UnsafeRawBufferPointer, Int64?) -> Void
  ) throws -> CommandResponse {
    try send(command)
    let deadline = Clock.monotonicNanos() + UInt64(timeout * 1e9)
    var buffer = [UInt8](repeating: 0, count: 1100)
    var control = [UInt8](repeating: 0, count: Self.controlSize)
    while true {
      let now = Clock.monotonicNanos()
      guard now < deadline else { throw HCITimeout(opcode: command.opcode) }
      var p = pollfd(fd: raw, events: Int16(POLLIN), revents: 0)
      let ms = Int32(min(Int(Int32.max), Int((deadline - now + 999_999) / 1_000_000)))
      let rc = poll(&p, 1, ms)
      if rc < 0 {
        if errno == EINTR { continue }
        throw SystemError(errno: errno, "poll")
      }
      if rc == 0 { continue }
      while let (n, c) = try buffer.withUnsafeMutableBytes({ b in
        try control.withUnsafeMutableBytes { try receive(into: b, control: $0) }
      }) {
        let micros = control.withUnsafeBytes {
          Self.receiveTime(control: UnsafeRawBufferPointer(rebasing: $0[0..<min(c, $0.count)]))
        }
        let done: CommandResponse? = buffer.withUnsafeBytes { raw in
          let packet = UnsafeRawBufferPointer(rebasing: raw[0..<n])
          other(packet, micros)
          guard n > 1, packet[0] == H4PacketType.event.rawValue,
            let response = CommandResponse(event: UnsafeRawBufferPointer(rebasing: packet[1...])),
            response.opcode == command.opcode
          else { return nil }
          return response
        }
        if let done { return done }
      }
    }
  }
}

/// The controller did not answer a command in time.
public struct HCITimeout: Error, CustomStringConvertible {
  public let opcode: HCIOpcode
  public var description: String { "no answer to \(opcode.name) from the controller" }
}
