import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// How to scan.
public struct LiveScanOptions: Sendable {
  /// "hci0"; `nil` picks the first LE-capable adapter.
  public var adapter: String?
  public var scanType: ScanType = .active
  /// Force legacy or extended scan commands; `nil` chooses from the
  /// controller's Supported Commands.
  public var commandSet: ScanCommandSet?
  /// Power the adapter on (HCIDEVUP) when it is down, also when it comes back.
  public var bringUp = false
  /// Off so RSSI keeps flowing (every advertisement is reported).
  public var filterDuplicates = false
  public var timing: ScanTiming = .continuous
  /// How long to wait for the controller to answer a command.
  public var commandTimeout: Double = 2
  /// How often to look for a lost adapter.
  public var retrySeconds: Double = 1
  /// How long another program's scan must stay off before Earshot starts
  /// its own again (the kernel pauses discovery scans briefly, e.g. to
  /// interleave BR/EDR inquiry; taking over then would end its discovery).
  public var retakeSeconds: Double = 5

  public init() {}
}

/// What the scanner's adapter is doing; reported on every change.
public enum AdapterState: Equatable, Sendable {
  /// Earshot's own scan is running.
  case scanning(adapter: String, commands: ScanCommandSet, type: ScanType)
  /// Another program (usually bluetoothd through the kernel) is scanning:
  /// Earshot reads the reports it receives, with its parameters and its
  /// duplicate filter, and changes nothing.
  case sharing(adapter: String)
  /// Powered off; scanning resumes when it is powered on again.
  case down(adapter: String)
  /// Gone (unplugged, driver unloaded); scanning resumes when it comes back.
  case removed(adapter: String)
  /// Scanning could not be restarted; it is retried.
  case failed(adapter: String, reason: String)

  public var adapter: String {
    switch self {
    case .scanning(let a, _, _), .sharing(let a), .down(let a), .removed(let a), .failed(let a, _):
      a
    }
  }

  /// Whether reports are flowing.
  public var isReceiving: Bool {
    switch self {
    case .scanning, .sharing: true
    default: false
    }
  }

  public var message: String {
    switch self {
    case .scanning(let a, let c, let t):
      "\(a): scanning (\(c.rawValue) commands, \(t == .active ? "active" : "passive"))"
    case .sharing(let a):
      "\(a): another program (bluetoothd?) is already scanning (Command Disallowed); "
        + "reading the reports that are already flowing instead, with its parameters "
        + "(duplicates may be filtered). Earshot's own scan starts when that scan stops for 5 s."
    case .down(let a):
      "\(a) is down (powered off); scanning resumes when it is powered on"
    case .removed(let a):
      "\(a) was removed; scanning resumes when it comes back"
    case .failed(let a, let reason):
      "\(a): cannot scan now (\(reason)); retrying"
    }
  }
}

/// A live LE scanner on a raw HCI socket, driven by an `EventLoop`.
///
/// `start()` opens the adapter, picks legacy or extended scan commands
/// from the controller's Supported Commands and starts scanning; reports
/// then arrive through `onReport` with wall-clock time. Adapter changes
/// (down, removed, back, another program scanning) arrive through
/// `onAdapterState`; the scanner keeps trying to get its adapter back.
/// `stop()` disables the scan it started, puts its parameters back to the
/// spec defaults and restores the socket filter. Everything runs on the
/// loop's thread.
public final class LiveScanner {
  public typealias ReportHandler = (_ micros: Int64, _ report: AdvertisingReport) -> Void
  public typealias StateHandler = (AdapterState) -> Void

  /// Every HCI packet seen or sent (H4, indicator first), for recording.
  public var onPacket: ((_ micros: Int64, _ packet: UnsafeRawBufferPointer) -> Void)?
  /// true: another program's scan stopped and nobody scans until Earshot
  /// retakes it (`retakeSeconds`); false: a scan runs again. No reports
  /// flow meanwhile, so the monitor must not count that time toward exits.
  public var onScanPaused: ((Bool) -> Void)?
  private var scanPaused = false

  public private(set) var state: AdapterState?
  /// The command set in use on the current adapter.
  public private(set) var commandSet: ScanCommandSet?
  public var stats: DecodeStats { decoder.stats }

  private let loop: EventLoop
  private let options: LiveScanOptions
  private let onReport: ReportHandler
  private let onAdapterState: StateHandler
  private var decoder = AdvertisingEventDecoder()
  private var socket: HCISocket?
  private var adapterName: String?
  /// Watches adapters being added, removed, powered on and off.
  private var lifecycle: HCISocket?
  /// True while the scan running is ours (so `stop` must undo it).
  private var ours = false
  private var running = false
  private var retryTimer: EventLoop.TimerID?
  private var retakeTimer: EventLoop.TimerID?
  /// Scan enable commands other programs sent, waiting for their answer.
  private var foreignScan: [HCIOpcode: Bool] = [:]
  private var buffer = [UInt8](repeating: 0, count: 1100)
  /// The scan socket's packets, many per system call.
  private let reader = PacketReader(controlSize: HCISocket.controlSize)
  /// Busy air is read in batches: after a read the socket rests this long,
  /// so 1,000 reports/s cost ~100 wakeups, not 1,000. Packets keep the
  /// kernel's receive time, so nothing but this delay changes.
  public static let readBatchNanos: UInt64 = 10_000_000

  public init(
    loop: EventLoop, options: LiveScanOptions,
    onReport: @escaping ReportHandler,
    onAdapterState: @escaping StateHandler
  ) {
    self.loop = loop
    self.options = options
    self.onReport = onReport
    self.onAdapterState = onAdapterState
  }

  // MARK: Start and stop

  /// Opens the adapter and starts scanning. Throws `ScanError` saying what
  /// to do when that is impossible; once started, later trouble is
  /// reported through `onAdapterState` and retried.
  ///
  /// `waitForAdapter` (for a long-running agent): an adapter that is
  /// missing, down or failing now is reported through `onAdapterState` and
  /// waited for, as if it went away after starting; only what waiting
  /// cannot fix (a missing capability, a bad adapter name) throws.
  public func start(waitForAdapter: Bool = false) throws {
    guard !running else { return }
    if let name = options.adapter, HCIAdapter.index(fromName: name) == nil {
      throw ScanError.badAdapterName(name)
    }
    running = true
    do {
      openLifecycle()
      try acquire(resolveAdapter())
    } catch {
      if waitForAdapter, !Self.isPermanent(error) {
        teardown()
        wait(after: error)
        return
      }
      running = false
      teardown()
      closeLifecycle()
      throw error
    }
  }

  private static func isPermanent(_ error: any Error) -> Bool {
    switch error as? ScanError {
    case .missingCapability?, .badAdapterName?: true
    default: false
    }
  }

  /// Stops scanning and restores what was changed: the scan Earshot
  /// enabled is disabled and its parameters reset; another program's scan
  /// is left alone. Safe to call more than once.
  public func stop() {
    guard running else { return }
    running = false
    if let t = retryTimer { loop.cancel(t) }
    if let t = retakeTimer { loop.cancel(t) }
    retryTimer = nil
    retakeTimer = nil
    if ours, let set = commandSet, socket != nil {
      for command in set.restore {
        // Best effort: a controller that is going away cannot be restored.
        _ = try? request(command, timeout: min(options.commandTimeout, 1))
      }
    }
    ours = false
    teardown()
    closeLifecycle()
  }

  // MARK: Adapter

  private func resolveAdapter() throws -> HCIAdapter {
    let adapters: [HCIAdapter]
    do { adapters = try HCIAdapter.list() } catch let e as SystemError {
      throw ScanError.system("adapters", e)
    }
    if let name = options.adapter {
      guard let a = adapters.first(where: { $0.name == name }) else {
        throw ScanError.noSuchAdapter(name, available: adapters.map(\.name))
      }
      return a
    }
    // First one that is up and LE-capable, then any LE-capable one (a
    // down adapter gives the "down" error), then one whose features are
    // unknown because it was never powered.
    if let a = adapters.first(where: { $0.isUp && $0.supportsLE })
      ?? adapters.first(where: { $0.supportsLE })
      ?? adapters.first(where: { !$0.featuresKnown })
    {
      return a
    }
    if adapters.isEmpty { throw ScanError.noAdapter }
    throw ScanError.noLEScanning(adapters.map(\.name).joined(separator: ", "))
  }

  private func acquire(_ adapter: HCIAdapter) throws {
    let name = adapter.name
    adapterName = name
    if !adapter.isUp {
      guard options.bringUp else { throw ScanError.adapterDown(name) }
      do { try HCIAdapter.bringUp(id: adapter.id) } catch let e as SystemError {
        switch e.errno {
        case EPERM, EACCES:
          throw ScanError.missingCapability(
            name, needs: "CAP_NET_ADMIN", during: "powering on (HCIDEVUP)")
        case ERFKILL: throw ScanError.blocked(name)
        case ENODEV: throw ScanError.adapterGone(name)
        default: throw ScanError.system(name, e)
        }
      }
    }
    let s: HCISocket
    do {
      s = try HCISocket(device: adapter.id)
      try s.setFilter(HCISocket.scannerFilter)
      // Without kernel timestamps packets get their read time: still fine.
      try? s.enableTimestamps()
    } catch let e as SystemError {
      throw e.errno == ENODEV ? ScanError.adapterGone(name) : ScanError.system(name, e)
    }
    socket = s
    try loop.watch(s.fd, batchingFor: Self.readBatchNanos) { [unowned self] _ in self.readQueued() }

    let answer = try request(.readLocalSupportedCommands)
    guard answer.status.isSuccess, case .complete(_, let p) = answer,
      let supported = SupportedCommands(returnParameters: p)
    else { throw ScanError.commandFailed(name, .readLocalSupportedCommands, answer.status) }
    guard let set = ScanCommandSet.choose(supported, forced: options.commandSet) else {
      throw ScanError.noLEScanning(name)
    }
    commandSet = set
    try startScan()
  }

  /// Sends the scan parameters and enable. Command Disallowed means
  /// someone else is scanning: read their reports instead.
  private func startScan() throws {
    guard let set = commandSet, let name = adapterName else { return }
    for command in set.start(
      type: options.scanType, timing: options.timing, filterDuplicates: options.filterDuplicates)
    {
      let answer = try request(command)
      if answer.status == .commandDisallowed {
        ours = false
        setState(.sharing(adapter: name))
        return
      }
      guard answer.status.isSuccess else {
        throw ScanError.commandFailed(name, command.opcode, answer.status)
      }
      if command.scanEnableValue == true { ours = true }
    }
    setState(.scanning(adapter: name, commands: set, type: options.scanType))
  }

  /// One command and its answer, with system errors turned into what they
  /// mean for the user.
  private func request(_ command: HCICommand, timeout: Double? = nil) throws -> CommandResponse {
    guard let s = socket else { throw ScanError.adapterGone(adapterName ?? "adapter") }
    let name = adapterName ?? "hci?"
    if let onPacket {
      let micros = Clock.realtimeMicros()
      command.packet.withUnsafeBytes { onPacket(micros, $0) }
    }
    do {
      return try s.request(command, timeout: timeout ?? options.commandTimeout) { packet, time in
        handle(packet, micros: time ?? Clock.realtimeMicros())
      }
    } catch let e as SystemError {
      switch e.errno {
      case EPERM, EACCES:
        throw ScanError.missingCapability(
          name, needs: "CAP_NET_RAW (and CAP_NET_ADMIN to power it on)",
          during: "sending \(command.opcode.name)")
      case ENETDOWN: throw ScanError.adapterDown(name)
      case EPIPE, ENODEV, ENXIO: throw ScanError.adapterGone(name)
      default: throw ScanError.system(name, e)
      }
    } catch let e as HCITimeout {
      throw ScanError.timeout(name, e.opcode)
    }
  }

  private func teardown() {
    if let s = socket {
      loop.unwatch(s.fd)
      s.close()
    }
    socket = nil
    foreignScan.removeAll()
  }

  private func setState(_ new: AdapterState) {
    if scanPaused && new.isReceiving {
      scanPaused = false
      onScanPaused?(false)
    }
    guard new != state else { return }
    state = new
    onAdapterState(new)
  }

  // MARK: Losing and regaining the adapter

  private func adapterLost(down: Bool) {
    guard socket != nil, let name = adapterName else { return }
    teardown()
    ours = false
    if let t = retakeTimer { loop.cancel(t) }
    retakeTimer = nil
    setState(down ? .down(adapter: name) : .removed(adapter: name))
    scheduleRetry()
  }

  private func scheduleRetry() {
    guard running, retryTimer == nil else { return }
    retryTimer = loop.after(seconds: options.retrySeconds) { [unowned self] in
      self.retryTimer = nil
      self.reacquire()
    }
  }

  /// Tries to get an adapter back; on failure reports why and tries again later.
  private func reacquire() {
    guard running, socket == nil else { return }
    do {
      try acquire(resolveAdapter())
    } catch {
      teardown()
      wait(after: error)
    }
  }

  /// Reports why there is no scan now and tries again later.
  private func wait(after error: any Error) {
    let name = options.adapter ?? adapterName ?? "adapter"
    switch error as? ScanError {
    case .noAdapter? where adapterName == nil:
      // Never had one: say so plainly rather than "removed".
      setState(.failed(adapter: name, reason: "no Bluetooth adapter found"))
    case .noSuchAdapter?, .noAdapter?, .adapterGone?: setState(.removed(adapter: name))
    case .adapterDown?: setState(.down(adapter: name))
    case let e?: setState(.failed(adapter: name, reason: e.description))
    case nil: setState(.failed(adapter: name, reason: "\(error)"))
    }
    scheduleRetry()
  }

  private func openLifecycle() {
    guard lifecycle == nil, let s = try? HCISocket(device: nil) else { return }
    do {
      try s.setFilter(HCISocket.lifecycleFilter)
      try loop.watch(s.fd) { [unowned self] _ in self.lifecycleReadable() }
      lifecycle = s
    } catch {
      s.close()  // the retry timer still finds the adapter, only later
    }
  }

  private func closeLifecycle() {
    if let s = lifecycle {
      loop.unwatch(s.fd)
      s.close()
    }
    lifecycle = nil
  }

  /// The kernel's stack-internal device events (`HCIStackInternal`).
  private func lifecycleReadable() {
    guard let s = lifecycle else { return }
    var events: [(event: HCIDeviceEvent, index: UInt16)] = []
    do {
      while let n = try buffer.withUnsafeMutableBytes({ try s.receive(into: $0) }) {
        let device = buffer.withUnsafeBytes { raw -> (event: HCIDeviceEvent, index: UInt16)? in
          guard n > 1, raw[0] == H4PacketType.event.rawValue else { return nil }
          return HCIStackInternal.deviceEvent(event: UnsafeRawBufferPointer(rebasing: raw[1..<n]))
        }
        if let device { events.append(device) }
      }
    } catch {
      closeLifecycle()
      return
    }
    for (event, index) in events {
      let mine = socket?.device == index
      switch event {
      case .unregistered where mine: adapterLost(down: false)
      case .down where mine: adapterLost(down: true)
      case .registered, .up:  // maybe ours is back
        if socket == nil && running {
          if let t = retryTimer { loop.cancel(t) }
          retryTimer = nil
          reacquire()
        }
      default: break
      }
    }
  }

  // MARK: Reading

  /// Reads what is queued on the scan socket: when it is readable, and
  /// for whoever must see every report up to this moment (even while the
  /// socket rests between batches).
  public func readQueued() {
    guard let s = socket else { return }
    do {
      try reader.drain(s.fd) { packet, control in
        handle(packet, micros: HCISocket.receiveTime(control: control) ?? Clock.realtimeMicros())
        return socket != nil
      }
    } catch let e as SystemError {
      adapterLost(down: e.errno == ENETDOWN)
    } catch {
      adapterLost(down: false)
    }
  }

  private func handle(_ packet: UnsafeRawBufferPointer, micros: Int64) {
    guard let indicator = packet.first else { return }
    onPacket?(micros, packet)
    let body = UnsafeRawBufferPointer(rebasing: packet[1...])
    switch H4PacketType(rawValue: indicator) {
    case .command:
      // A command another program sent (the kernel copies them to raw sockets).
      if let command = HCICommand(packet: body), let enable = command.scanEnableValue {
        foreignScan[command.opcode] = enable
      }
    case .event:
      let outcome = decoder.decode(event: body) { report in onReport(micros, report) }
      if outcome == .notAdvertising, !foreignScan.isEmpty,
        let response = CommandResponse(event: body),
        let enable = foreignScan.removeValue(forKey: response.opcode), response.status.isSuccess
      {
        foreignScanChanged(enabled: enable)
      }
    default:
      break
    }
  }

  /// Another program turned scanning on or off. On: its reports flow, read
  /// them. Off: Earshot's scan (if it was running) is gone too; start it
  /// again unless the other program turns scanning back on soon.
  private func foreignScanChanged(enabled: Bool) {
    guard running, let name = adapterName else { return }
    if let t = retakeTimer { loop.cancel(t) }
    retakeTimer = nil
    ours = false
    if enabled {
      setState(.sharing(adapter: name))
      return
    }
    if !scanPaused {
      scanPaused = true
      onScanPaused?(true)
    }
    retakeTimer = loop.after(seconds: options.retakeSeconds) { [unowned self] in
      self.retakeTimer = nil
      guard self.running, self.socket != nil, !self.ours else { return }
      do { try self.startScan() } catch let e as ScanError {
        self.setState(.failed(adapter: name, reason: e.description))
        self.adapterLost(down: false)
      } catch {}
    }
  }
}

extension LiveScanOptions {
  /// Scanning as `[scanner]` says (adapter, passive, mode).
  public init(config: ScannerConfig) {
    self.init()
    adapter = config.adapter
    scanType = config.passive ? .passive : .active
    switch config.mode {
    case .legacy: commandSet = .legacy
    case .extended: commandSet = .extended
    case .auto: commandSet = nil
    }
  }
}
