import CNL80211
import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// The Wi-Fi side of the laptop's places, from nl80211 through libnl: the
/// access points of the scans the system makes anyway (NetworkManager,
/// wpa_supplicant, iwd) and the network the laptop is on. Earshot never
/// triggers a scan: the radio is shared, and a scan takes it off its
/// channel. It listens to nl80211's `scan` and `mlme` multicast groups; on
/// NEW_SCAN_RESULTS it dumps the kernel's scan results of that interface
/// (GET_SCAN), and on a connect, roam or disconnect it dumps them to see
/// which network the interface is associated with. What they mean is the
/// core's `LaptopSignals`.
public final class WiFiPlaces {
  public enum Event: Equatable {
    case accessPoints(Set<String>)
    case moved(LaptopMove)
  }

  /// Each scan's access points, and moves, in the order they happen.
  public var onEvent: ((Event) -> Void)?
  public private(set) var signals: LaptopSignals
  /// Scans read, and messages from the kernel that could not be read.
  public private(set) var scans = 0
  public private(set) var malformed = 0

  private let loop: EventLoop
  private let now: () -> MonotonicTime
  /// Multicast events (non-blocking, on the loop) and dumps (blocking, with
  /// a timeout): two sockets, so a dump's answer never mixes with events.
  private let events: OpaquePointer
  private let query: OpaquePointer
  private let family: Int32
  private let fd: FileDescriptor
  private var triggered: [Int32: MonotonicTime] = [:]
  /// The BSSes of the dump being read, bounded.
  private var dump: [WiFiBSS] = []
  private var dumpDropped = 0
  private static let maximumDump = 4096
  private static let skip = Int32(NL_SKIP.rawValue)

  /// Opens nl80211; throws when the kernel has none (no Wi-Fi at all) or a
  /// socket cannot be made. `now` must read CLOCK_BOOTTIME: the kernel
  /// stamps when it last heard each BSS on it.
  public init(
    loop: EventLoop, now: @escaping () -> MonotonicTime,
    settings: LaptopSignals.Settings = LaptopSignals.Settings()
  ) throws {
    self.loop = loop
    self.now = now
    signals = LaptopSignals(settings: settings)
    guard let events = nl_socket_alloc() else {
      throw WiFiError("cannot allocate a netlink socket")
    }
    guard let query = nl_socket_alloc() else {
      nl_socket_free(events)
      throw WiFiError("cannot allocate a netlink socket")
    }
    self.events = events
    self.query = query
    var groups: [Int32] = []
    var family: Int32 = -1
    do {
      for s in [events, query] {
        let r = genl_connect(s)
        guard r == 0 else { throw WiFiError("generic netlink: \(Self.message(r))") }
      }
      family = genl_ctrl_resolve(query, "nl80211")
      guard family >= 0 else { throw WiFiError("no nl80211 in this kernel (no Wi-Fi)") }
      for name in ["scan", "mlme"] {
        let g = genl_ctrl_resolve_grp(query, "nl80211", name)
        guard g >= 0 else { throw WiFiError("nl80211 has no '\(name)' group") }
        groups.append(g)
      }
    } catch {
      nl_socket_free(events)
      nl_socket_free(query)
      throw error
    }
    self.family = family
    fd = FileDescriptor(rawValue: nl_socket_get_fd(events))
    for g in groups { _ = nl_socket_add_membership(events, g) }
    // Multicast messages carry no sequence numbers to check.
    nl_socket_disable_seq_check(events)
    _ = nl_socket_set_nonblocking(events)
    // A dump the kernel does not finish must not hold the agent's loop.
    var timeout = timeval(tv_sec: 2, tv_usec: 0)
    _ = setsockopt(
      nl_socket_get_fd(query), SOL_SOCKET, SO_RCVTIMEO, &timeout,
      socklen_t(MemoryLayout<timeval>.size))
    let me = Unmanaged.passUnretained(self).toOpaque()
    _ = nl_socket_modify_cb(
      events, NL_CB_VALID, NL_CB_CUSTOM,
      { msg, arg in
        Unmanaged<WiFiPlaces>.fromOpaque(arg!).takeUnretainedValue().event(msg)
      }, me)
    _ = nl_socket_modify_cb(
      query, NL_CB_VALID, NL_CB_CUSTOM,
      { msg, arg in
        Unmanaged<WiFiPlaces>.fromOpaque(arg!).takeUnretainedValue().bss(msg)
      }, me)
    try loop.watch(fd) { [unowned self] _ in _ = nl_recvmsgs_default(self.events) }
  }

  deinit {
    loop.unwatch(fd)
    nl_socket_free(events)
    nl_socket_free(query)
  }

  private static func message(_ code: Int32) -> String { String(cString: nl_geterror(code)) }

  // MARK: Events

  /// One multicast message: a scan began or ended, or a connection changed.
  private func event(_ msg: OpaquePointer?) -> Int32 {
    guard let msg, let (command, attrs) = parse(msg) else {
      malformed += 1
      return Self.skip
    }
    guard let ifAttr = attrs[Int(NL80211_ATTR_IFINDEX.rawValue)] else { return Self.skip }
    let interface = Int32(bitPattern: nla_get_u32(ifAttr))
    switch UInt32(command) {
    case NL80211_CMD_TRIGGER_SCAN.rawValue:
      triggered[interface] = now()
      if triggered.count > 16 { triggered.removeAll() }
    case NL80211_CMD_SCAN_ABORTED.rawValue:
      triggered[interface] = nil
    case NL80211_CMD_NEW_SCAN_RESULTS.rawValue:
      let since = triggered.removeValue(forKey: interface)
      guard let bss = read(interface) else { break }
      scans += 1
      if let move = signals.network(bss, interface: interface) { onEvent?(.moved(move)) }
      // A second of slack: the first answers may come before the trigger's event is read.
      let from = since.map { MonotonicTime(nanos: $0.nanos &- min($0.nanos, 1_000_000_000)) }
      onEvent?(.accessPoints(signals.accessPoints(bss, triggered: from, now: now())))
    case NL80211_CMD_CONNECT.rawValue, NL80211_CMD_ROAM.rawValue,
      NL80211_CMD_DISCONNECT.rawValue:
      guard let bss = read(interface) else { break }
      if let move = signals.network(bss, interface: interface) { onEvent?(.moved(move)) }
    default: break
    }
    return Self.skip
  }

  /// The command and attributes of a generic netlink message of nl80211's.
  private func parse(_ msg: OpaquePointer) -> (UInt8, [UnsafeMutablePointer<nlattr>?])? {
    guard let nlh = nlmsg_hdr(msg), Int32(nlh.pointee.nlmsg_type) == family,
      genlmsg_valid_hdr(nlh, 0) != 0
    else { return nil }
    let gnlh = genlmsg_hdr(nlh)!
    var attrs = [UnsafeMutablePointer<nlattr>?](
      repeating: nil, count: Int(NL80211_ATTR_MAX.rawValue) + 1)
    let r = attrs.withUnsafeMutableBufferPointer {
      nla_parse(
        $0.baseAddress, Int32(NL80211_ATTR_MAX.rawValue), genlmsg_attrdata(gnlh, 0),
        genlmsg_attrlen(gnlh, 0), nil)
    }
    return r == 0 ? (gnlh.pointee.cmd, attrs) : nil
  }

  // MARK: The scan dump

  /// The kernel's scan results of `interface` (what it heard last; nothing
  /// is scanned), or nil when the dump fails.
  private func read(_ interface: Int32) -> [WiFiBSS]? {
    guard let msg = nlmsg_alloc() else { return nil }
    defer { nlmsg_free(msg) }
    // NLM_F_DUMP (NLM_F_ROOT | NLM_F_MATCH), a macro Swift does not import.
    let dumpFlag: Int32 = 0x300
    guard
      genlmsg_put(msg, 0, 0, family, 0, dumpFlag, UInt8(NL80211_CMD_GET_SCAN.rawValue), 0) != nil,
      nla_put_u32(msg, Int32(NL80211_ATTR_IFINDEX.rawValue), UInt32(bitPattern: interface)) == 0,
      nl_send_auto(query, msg) >= 0
    else { return nil }
    dump = []
    dumpDropped = 0
    let r = nl_recvmsgs_default(query)
    defer { dump = [] }
    guard r >= 0 else {
      malformed += 1
      return nil
    }
    return dump
  }

  /// One BSS of the dump.
  private func bss(_ msg: OpaquePointer?) -> Int32 {
    guard let msg, let (_, attrs) = parse(msg),
      let nested = attrs[Int(NL80211_ATTR_BSS.rawValue)]
    else {
      malformed += 1
      return Self.skip
    }
    var b = [UnsafeMutablePointer<nlattr>?](
      repeating: nil, count: Int(NL80211_BSS_MAX.rawValue) + 1)
    let r = b.withUnsafeMutableBufferPointer {
      nla_parse_nested($0.baseAddress, Int32(NL80211_BSS_MAX.rawValue), nested, nil)
    }
    guard r == 0, let bssid = b[Int(NL80211_BSS_BSSID.rawValue)], nla_len(bssid) == 6 else {
      malformed += 1
      return Self.skip
    }
    guard dump.count < Self.maximumDump else {
      dumpDropped += 1
      return Self.skip
    }
    let elements =
      b[Int(NL80211_BSS_INFORMATION_ELEMENTS.rawValue)] ?? b[Int(NL80211_BSS_BEACON_IES.rawValue)]
    let ssid = elements.flatMap { ie in
      WiFiElements.ssid(
        in: UnsafeRawBufferPointer(start: nla_data(ie), count: Int(max(0, nla_len(ie)))))
    }
    let status = b[Int(NL80211_BSS_STATUS.rawValue)].map { nla_get_u32($0) }
    dump.append(
      WiFiBSS(
        bssid: Array(UnsafeRawBufferPointer(start: nla_data(bssid), count: 6)),
        lastSeen: b[Int(NL80211_BSS_LAST_SEEN_BOOTTIME.rawValue)].map {
          MonotonicTime(nanos: nla_get_u64($0))
        },
        associated: status == NL80211_BSS_STATUS_ASSOCIATED.rawValue,
        ssid: ssid))
    return Self.skip
  }
}

public struct WiFiError: Error, CustomStringConvertible {
  public let description: String
  init(_ description: String) { self.description = description }
}

/// Mains unplugged, from sysfs (`/sys/class/power_supply`, what UPower
/// reads): a cheap poll of a few small files every `interval`, since
/// the kernel's uevents for a power supply need a netlink socket of their
/// own for one bit, and a laptop's charger changes a few times a day.
public final class MainsWatch {
  public var onUnplugged: (() -> Void)?
  public private(set) var signals = LaptopSignals()
  private let reader: PowerSupplyReader
  private let loop: EventLoop
  private let interval: Double
  private var timer: EventLoop.TimerID?

  public init(
    loop: EventLoop, root: String = "/sys/class/power_supply", interval: Double = 10
  ) {
    self.loop = loop
    self.interval = interval
    reader = PowerSupplyReader(root: root, refreshSeconds: 0)
    check()
  }

  deinit { if let timer { loop.cancel(timer) } }

  /// Reads the supplies now, and again after `interval`.
  public func check() {
    if signals.mains(online: LaptopSignals.mainsOnline(reader.entries())) != nil {
      onUnplugged?()
    }
    if let timer { loop.cancel(timer) }
    timer = loop.after(seconds: interval) { [weak self] in
      self?.timer = nil
      self?.check()
    }
  }
}
