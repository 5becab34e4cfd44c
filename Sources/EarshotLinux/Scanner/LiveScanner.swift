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
///
/// The decisions are `ScanSupervisor`'s; this is its shell: it performs
/// the supervisor's actions (sockets, commands, timers, callbacks) and
/// feeds their outcomes and what the kernel says back as events.
public final class LiveScanner {
  public typealias ReportHandler = (_ micros: Int64, _ report: AdvertisingReport) -> Void
  public typealias StateHandler = (AdapterState) -> Void

  /// Every HCI packet seen or sent (H4, indicator first), for recording.
  public var onPacket: ((_ micros: Int64, _ packet: UnsafeRawBufferPointer) -> Void)?
  /// true: another program's scan stopped and nobody scans until Earshot
  /// retakes it (`retakeSeconds`); false: a scan runs again. No reports
  /// flow meanwhile, so the monitor must not count that time toward exits.
  /// With the kernel's wall-clock stamp of the packet that showed it, when
  /// the pause comes from one.
  public var onScanPaused: ((_ paused: Bool, _ stamp: Int64?) -> Void)?
  /// The timing reports come with from now (the scan started, or its
  /// timing changed after `want`; another program's counts as continuous).
  public var onListening: ((ScanTiming) -> Void)?
  /// A name request's outcome: whether the device answered its page.
  public var onNameAnswer: ((BDAddress, Bool) -> Void)?
  /// Whether the adapter open now can page (BR/EDR Remote Name Request).
  public private(set) var canPage = false

  public var state: AdapterState? { supervisor.state }
  /// The command set in use on the current adapter.
  public var commandSet: ScanCommandSet? { supervisor.commands }
  public var stats: DecodeStats { decoder.stats }

  private let loop: EventLoop
  private let options: LiveScanOptions
  private let onReport: ReportHandler
  private let onAdapterState: StateHandler
  private var supervisor: ScanSupervisor
  /// Events waiting for the supervisor: outcomes of the actions being
  /// performed, and packets read meanwhile, in the order they happened.
  private var events: [ScanEvent] = []
  /// The kernel's stamp of the packet being handled, for what it decides.
  private var packetStamp: Int64?
  private var dispatching = false
  /// A `want` not yet taken up.
  private var nextWant: ScanTiming?
  private let timers: LoopTimers<ScanTimer>
  /// The error behind the last failure fed to the supervisor, for `start` to throw.
  private var lastError: (any Error)?
  private var gaveUp: ScanFailure?
  private var decoder = AdvertisingEventDecoder()
  private var socket: HCISocket?
  /// Watches adapters being added, removed, powered on and off.
  private var lifecycle: HCISocket?
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
    timers = LoopTimers(loop: loop)
    supervisor = ScanSupervisor(
      settings: ScanSettings(
        adapter: options.adapter, scanType: options.scanType, timing: options.timing,
        filterDuplicates: options.filterDuplicates, retrySeconds: options.retrySeconds,
        retakeSeconds: options.retakeSeconds))
    timers.onFire = { [unowned self] timer in self.dispatch(.timerFired(timer)) }
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
    guard !supervisor.isRunning else { return }
    if let name = options.adapter, HCIAdapter.index(fromName: name) == nil {
      throw ScanError.badAdapterName(name)
    }
    gaveUp = nil
    lastError = nil
    dispatch(.start(waitForAdapter: waitForAdapter))
    if let failure = gaveUp {
      gaveUp = nil
      if case .refused(let opcode, let status) = failure.kind {
        throw ScanError.commandFailed(supervisor.adapterName ?? "adapter", opcode, status)
      }
      throw lastError ?? ScanError.noAdapter
    }
  }

  /// Stops scanning and restores what was changed: the scan Earshot
  /// enabled is disabled and its parameters reset; another program's scan
  /// is left alone. Safe to call more than once.
  public func stop() {
    dispatch(.stop)
  }

  /// Scans with `timing` from now: Earshot's own scan is changed at once
  /// (disable, parameters, enable), another program's is left alone and
  /// the timing waits for Earshot's next start.
  ///
  /// Taken up on the loop's next turn, not here: the want may come from a
  /// report handler (the region monitor's need moved), and the commands
  /// it sends read the socket that report came from.
  public func want(_ timing: ScanTiming) {
    let scheduled = nextWant != nil
    nextWant = timing
    guard !scheduled else { return }
    _ = loop.after(nanos: 0) { [weak self] in
      guard let self, let timing = self.nextWant else { return }
      self.nextWant = nil
      self.dispatch(.want(timing))
    }
  }

  /// The timing asked for last.
  public var wantedTiming: ScanTiming { nextWant ?? supervisor.wanted }

  /// Scans actively or passively from now (the Bluetooth proxy's clients
  /// asked), changed as `want` changes the timing, on the loop's next turn.
  public func want(type: ScanType) {
    _ = loop.after(nanos: 0) { [weak self] in self?.dispatch(.wantType(type)) }
  }

  /// Pages `address` by name (Remote Name Request); the outcome comes
  /// through `onNameAnswer`, when the page is answered or times out (5.12
  /// s). Refused at once (answered false) when no adapter is open, it
  /// cannot page, or the controller refuses the command. Call from the
  /// loop, not from a report handler (the request reads the socket).
  public func requestName(_ address: BDAddress) {
    guard socket != nil, canPage else {
      onNameAnswer?(address, false)
      return
    }
    // As for the supervisor's commands: what is read meanwhile waits, so
    // no other command goes out before this one's Command Status.
    dispatching = true
    var accepted = false
    do {
      let answer = try request(.remoteNameRequest(address), timeout: min(options.commandTimeout, 1))
      accepted = answer.status.isSuccess
    } catch {}
    dispatching = false
    if accepted {
      pagesInFlight.insert(address)
    } else {
      onNameAnswer?(address, false)
    }
    drainEvents()
  }

  /// Addresses paged by `requestName` whose outcome is still to come (a
  /// page bluetoothd sent is not Earshot's answer).
  private var pagesInFlight: Set<BDAddress> = []

  // MARK: The supervisor

  /// Hands `event` to the supervisor and performs what it decides; events
  /// arising meanwhile queue behind it.
  private func dispatch(_ event: ScanEvent) {
    events.append(event)
    drainEvents()
  }

  /// Hands the queued events to the supervisor, unless a command is being
  /// performed (they wait for it).
  private func drainEvents() {
    guard !dispatching else { return }
    dispatching = true
    defer { dispatching = false }
    while !events.isEmpty {
      let next = events.removeFirst()
      for action in supervisor.handle(next, now: Clock.now()) { perform(action) }
    }
  }

  private func perform(_ action: ScanAction) {
    switch action {
    case .openLifecycle: openLifecycle()
    case .closeLifecycle: closeLifecycle()
    case .openAdapter: openAdapter()
    case .send(let command):
      do {
        let answer = try request(command)
        events.append(.answered(answer.opcode, answer.status))
      } catch {
        events.append(.sendFailed(failure(error)))
      }
    case .restore(let commands):
      for command in commands {
        // Best effort: a controller that is going away cannot be restored.
        _ = try? request(command, timeout: min(options.commandTimeout, 1))
      }
    case .closeAdapter: teardown()
    case .timer(let action): timers.apply(action)
    case .report(let state): onAdapterState(state)
    case .scanPaused(let paused): onScanPaused?(paused, packetStamp)
    case .giveUp(let failure): gaveUp = failure
    case .listening(let timing): onListening?(timing)
    }
  }

  private func failure(_ error: any Error) -> ScanFailure {
    lastError = error
    if let e = error as? ScanError { return e.failure }
    return ScanFailure(.other, reason: "\(error)")
  }

  // MARK: Adapter

  /// Picks the adapter, powers it on if allowed, opens its socket and
  /// reads which scan commands it has.
  private func openAdapter() {
    var picked: String?
    do {
      let adapter = try resolveAdapter()
      picked = adapter.name
      let set = try open(adapter)
      events.append(.adapterOpened(name: adapter.name, index: adapter.id, commands: set))
    } catch {
      events.append(.openFailed(failure(error), adapter: picked))
    }
  }

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

  private func open(_ adapter: HCIAdapter) throws -> ScanCommandSet {
    let name = adapter.name
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

    let answer = try request(.readLocalSupportedCommands, adapter: name)
    guard answer.status.isSuccess, case .complete(_, let p) = answer,
      let supported = SupportedCommands(returnParameters: p)
    else { throw ScanError.commandFailed(name, .readLocalSupportedCommands, answer.status) }
    guard let set = ScanCommandSet.choose(supported, forced: options.commandSet) else {
      throw ScanError.noLEScanning(name)
    }
    canPage = supported.supports(.remoteNameRequest)
    return set
  }

  /// One command and its answer, with system errors turned into what they
  /// mean for the user.
  private func request(_ command: HCICommand, timeout: Double? = nil, adapter: String? = nil)
    throws -> CommandResponse
  {
    let name = adapter ?? supervisor.adapterName ?? "hci?"
    guard let s = socket else { throw ScanError.adapterGone(name) }
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
    // Their answers will not come (the monitor's own wait ends them).
    pagesInFlight.removeAll()
  }

  // MARK: Adapters coming and going

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
    var devices: [(event: HCIDeviceEvent, index: UInt16)] = []
    do {
      while let n = try buffer.withUnsafeMutableBytes({ try s.receive(into: $0) }) {
        let device = buffer.withUnsafeBytes { raw -> (event: HCIDeviceEvent, index: UInt16)? in
          guard n > 1, raw[0] == H4PacketType.event.rawValue else { return nil }
          return HCIStackInternal.deviceEvent(event: UnsafeRawBufferPointer(rebasing: raw[1..<n]))
        }
        if let device { devices.append(device) }
      }
    } catch {
      closeLifecycle()
      return
    }
    for (event, index) in devices { dispatch(.device(event, index: index)) }
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
      dispatch(.readFailed(adapterDown: e.errno == ENETDOWN))
    } catch {
      dispatch(.readFailed(adapterDown: false))
    }
  }

  private func handle(_ packet: UnsafeRawBufferPointer, micros: Int64) {
    guard let indicator = packet.first else { return }
    packetStamp = micros
    defer { packetStamp = nil }
    onPacket?(micros, packet)
    let body = UnsafeRawBufferPointer(rebasing: packet[1...])
    switch H4PacketType(rawValue: indicator) {
    case .command:
      // A command another program sent (the kernel copies them to raw sockets).
      if let command = HCICommand(packet: body), command.scanEnableValue != nil {
        dispatch(.otherProgramSent(command))
      }
    case .event:
      if body.first == HCIEventCode.remoteNameRequestComplete.rawValue {
        if let result = RemoteNameResult(event: body),
          pagesInFlight.remove(result.address) != nil
        {
          onNameAnswer?(result.address, result.answered)
        }
        return
      }
      let outcome = decoder.decode(event: body) { report in onReport(micros, report) }
      // Every answer, even with nothing recorded yet: the command it answers
      // may still be queued behind the action being performed.
      if outcome == .notAdvertising, let response = CommandResponse(event: body) {
        dispatch(.responseSeen(response.opcode, response.status))
      }
    default:
      break
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
