/// How the supervisor scans and how patiently it waits.
public struct ScanSettings: Equatable, Sendable {
  /// The adapter asked for ("hci0"), for messages before one was found;
  /// `nil`: the shell picks one.
  public var adapter: String?
  public var scanType: ScanType
  public var timing: ScanTiming
  public var filterDuplicates: Bool
  /// How often to look for a lost adapter.
  public var retrySeconds: Double
  /// How long another program's scan must stay off before Earshot starts
  /// its own again (the kernel pauses discovery scans briefly, e.g. to
  /// interleave BR/EDR inquiry; taking over then would end its discovery).
  public var retakeSeconds: Double

  public init(
    adapter: String? = nil, scanType: ScanType = .active, timing: ScanTiming = .continuous,
    filterDuplicates: Bool = false, retrySeconds: Double = 1, retakeSeconds: Double = 5
  ) {
    self.adapter = adapter
    self.scanType = scanType
    self.timing = timing
    self.filterDuplicates = filterDuplicates
    self.retrySeconds = retrySeconds
    self.retakeSeconds = retakeSeconds
  }
}

/// The supervisor's two timers.
public enum ScanTimer: Hashable, Sendable {
  /// Look for the lost adapter again.
  case retry
  /// Another program's scan stayed off long enough: scan again.
  case retake
}

/// What happens to the scanner: the user's start and stop, the shell's
/// answers to actions, and what the kernel says.
public enum ScanEvent: Equatable, Sendable {
  /// `waitForAdapter`: a first attempt that fails (but not permanently)
  /// is reported and retried instead of giving up.
  case start(waitForAdapter: Bool)
  case stop
  /// `.openAdapter` done: the socket is open on adapter `name` (kernel
  /// index `index`), which scans with `commands`.
  case adapterOpened(name: String, index: UInt16, commands: ScanCommandSet)
  /// `.openAdapter` failed; `adapter` is the one it picked, if it got that far.
  case openFailed(ScanFailure, adapter: String?)
  /// The controller answered the command of the last `.send`.
  case answered(HCIOpcode, HCIStatus)
  /// The last `.send` got no answer (no permission, adapter down or gone,
  /// timeout).
  case sendFailed(ScanFailure)
  /// The kernel's device event (HCI_DEV_*) for adapter `index`.
  case device(HCIDeviceEvent, index: UInt16)
  /// Reading the adapter's socket failed; `adapterDown`: with ENETDOWN.
  case readFailed(adapterDown: Bool)
  /// A command another program sent on the adapter (the kernel copies
  /// them to raw sockets).
  case otherProgramSent(HCICommand)
  /// A Command Complete or Command Status seen on the adapter's socket,
  /// whoever's command it answers.
  case responseSeen(HCIOpcode, HCIStatus)
  /// The timer armed by `.timer(.arm)` went off (stale firings are ignored).
  case timerFired(ScanTimer)
  /// Scan with this timing from now on (the scan scheduler's choice):
  /// applied to Earshot's own scan at once, to a scan it starts later
  /// otherwise.
  case want(ScanTiming)
  /// Scan actively or passively from now on (the Bluetooth proxy's
  /// client asked): applied as `.want` is, the timing kept.
  case wantType(ScanType)
}

/// What the shell must do, in order.
public enum ScanAction: Equatable, Sendable {
  /// Open the unbound socket that hears adapters come and go (best effort:
  /// without it a lost adapter is still found by the retry timer).
  case openLifecycle
  case closeLifecycle
  /// Pick the adapter (powering it on if allowed), open its socket and
  /// choose the command set; answer `.adapterOpened` or `.openFailed`.
  case openAdapter
  /// Send one command on the adapter's socket and wait for its answer;
  /// answer `.answered` or `.sendFailed`.
  case send(HCICommand)
  /// Undo Earshot's scan: send these, best effort, no answers needed.
  case restore([HCICommand])
  /// Close the adapter's socket (nothing happens when none is open).
  case closeAdapter
  /// One timer of each kind (`TimerAction`); answer a firing with
  /// `.timerFired`.
  case timer(TimerAction<ScanTimer>)
  /// Tell the user: the adapter's state changed.
  case report(AdapterState)
  /// true: another program's scan stopped and no reports flow until
  /// Earshot retakes the scan; false: reports flow again.
  case scanPaused(Bool)
  /// Starting failed for good: `start` fails with this.
  case giveUp(ScanFailure)
  /// The scan that reports come from listens with this timing from now
  /// (Earshot's own scan started or changed; another program's scan,
  /// whose timing is unknown, counts as continuous, as it always did).
  case listening(ScanTiming)
}

/// The scanner's adapter lifecycle as a pure state machine: events and the
/// monotonic time (ns) in, actions out. The shell (`LiveScanner`) opens
/// sockets, sends commands and arms timers, and feeds the outcomes back.
///
/// Guarantees (each tested):
/// - One thing at a time: at most one `.openAdapter` or `.send` awaits its
///   answer, so two scan starts never interleave; answers to anything
///   else are ignored.
/// - Another program's scan is never stopped by Earshot. Scan commands go
///   out only on a freshly opened adapter, or to retake the scan once the
///   other program's scan has stayed off for `retakeSeconds` (its scan
///   coming back meanwhile cancels the retake). Command Disallowed ends the
///   start sequence at once: the enable is not sent and the other
///   program's reports are read instead (`.sharing`). `.restore` is sent
///   only when the scan running is Earshot's own.
/// - A lost adapter (down, removed, failing) is looked for every
///   `retrySeconds` until it is back, and at once when the kernel says an
///   adapter appeared or was powered on. The first attempt gives up
///   (`.giveUp`) only when not told to wait, or when waiting cannot help.
/// - `.report` comes only when the state changes; `.scanPaused(true)` once
///   per pause, and `.scanPaused(false)` before the next report of a
///   receiving state.
/// - Before `.start` and after `.stop` or `.giveUp` every event but
///   `.start` is ignored; `.stop` cancels every timer and closes both
///   sockets.
/// - A wanted timing (`.want`) or scan type (`.wantType`) changes only
///   Earshot's own scan, as the
///   kernel does: scan disabled, parameters set, scan enabled, one command
///   at a time, never while another command of its own awaits an answer.
///   `.listening` says the timing reports come with: a lower duty before
///   the change starts, a higher one once the scan is enabled again, so
///   that silence is never counted at more than the duty it was heard at.
public struct ScanSupervisor: Sendable {
  public let settings: ScanSettings
  /// The last state reported.
  public private(set) var state: AdapterState?
  /// The command set of the adapter opened last.
  public private(set) var commands: ScanCommandSet?
  /// The adapter picked last (kept after it is lost, for messages).
  public private(set) var adapterName: String?
  public private(set) var isRunning = false

  /// The first attempt after `.start` is under way.
  private var firstAttempt = false
  private var waitForAdapter = false
  /// Kernel index of the adapter whose socket is open.
  private var openIndex: UInt16?
  /// `.openAdapter` awaits its answer.
  private var opening = false
  /// The start sequence in flight: the command awaiting its answer first.
  private var sequence: [HCICommand] = []
  /// The sequence in flight retakes the scan (failure: the adapter is lost)
  /// rather than starting it on a new adapter (failure: it is waited for).
  private var retaking = false
  /// The scan running is Earshot's own (so `.stop` must undo it).
  private var ours = false
  private var retryDeadline: MonotonicTime?
  private var retakeDeadline: MonotonicTime?
  /// Scan enables other programs sent, awaiting their answer: opcode -> enable.
  private var otherScanCommands: [HCIOpcode: Bool] = [:]
  private var paused = false
  /// The timing asked for (`.want`), and the one Earshot's running scan has.
  public private(set) var wanted: ScanTiming
  private var applied: ScanTiming?
  /// The timing the sequence in flight sets.
  private var pending: ScanTiming?
  /// The scan type asked for (`.wantType`; `settings.scanType` at first),
  /// the one Earshot's running scan has, and the one the sequence in flight sets.
  public private(set) var wantedType: ScanType
  private var appliedType: ScanType?
  private var pendingType: ScanType?
  /// The last `.listening` said.
  private var listeningTiming: ScanTiming?

  public init(settings: ScanSettings) {
    self.settings = settings
    wanted = settings.timing
    wantedType = settings.scanType
  }

  /// The scan running is Earshot's own.
  public var isScanOurs: Bool { ours }

  public mutating func handle(_ event: ScanEvent, now: MonotonicTime) -> [ScanAction] {
    var actions: [ScanAction] = []
    if case .start(let wait) = event {
      guard !isRunning else { return [] }
      isRunning = true
      firstAttempt = true
      waitForAdapter = wait
      actions.append(.openLifecycle)
      openAdapter(&actions)
      return actions
    }
    guard isRunning else { return [] }
    switch event {
    case .start:
      break
    case .stop:
      stop(&actions)
    case .adapterOpened(let name, let index, let set):
      guard opening else { break }
      opening = false
      adapterName = name
      openIndex = index
      commands = set
      startScan(retake: false, &actions)
    case .openFailed(let failure, let adapter):
      guard opening else { break }
      opening = false
      if let adapter { adapterName = adapter }
      acquireFailed(failure, now: now, &actions)
    case .answered(let opcode, let status):
      guard let command = sequence.first, command.opcode == opcode else { break }
      answered(command, status, now: now, &actions)
    case .sendFailed(let failure):
      guard !sequence.isEmpty else { break }
      sequence = []
      sequenceFailed(failure, now: now, &actions)
    case .device(let event, let index):
      switch event {
      case .unregistered where index == openIndex:
        adapterLost(down: false, now: now, &actions)
      case .down where index == openIndex:
        adapterLost(down: true, now: now, &actions)
      case .registered, .up:
        // Maybe the lost adapter is back: look now rather than at the retry.
        guard openIndex == nil, !opening else { break }
        cancel(.retry, &actions)
        openAdapter(&actions)
      default:
        break
      }
    case .readFailed(let down):
      adapterLost(down: down, now: now, &actions)
    case .otherProgramSent(let command):
      // While opening too: the socket is open before `.adapterOpened` arrives.
      guard openIndex != nil || opening, let enable = command.scanEnableValue else { break }
      otherScanCommands[command.opcode] = enable
    case .responseSeen(let opcode, let status):
      // Removed whatever the status: a refused command changed nothing.
      guard let enable = otherScanCommands.removeValue(forKey: opcode), status.isSuccess else {
        break
      }
      otherProgramScans(enable, now: now, &actions)
    case .timerFired(.retry):
      guard let deadline = retryDeadline, now >= deadline else { break }
      retryDeadline = nil
      guard openIndex == nil, !opening else { break }
      openAdapter(&actions)
    case .timerFired(.retake):
      guard let deadline = retakeDeadline, now >= deadline else { break }
      retakeDeadline = nil
      guard openIndex != nil, sequence.isEmpty, !ours else { break }
      startScan(retake: true, &actions)
    case .want(let timing):
      wanted = timing
      changeTimingIfWanted(&actions)
    case .wantType(let type):
      wantedType = type
      changeTimingIfWanted(&actions)
    }
    return actions
  }

  // MARK: Opening and starting

  private mutating func openAdapter(_ actions: inout [ScanAction]) {
    opening = true
    actions.append(.openAdapter)
  }

  private mutating func startScan(retake: Bool, _ actions: inout [ScanAction]) {
    guard let set = commands else { return }
    retaking = retake
    pending = wanted
    pendingType = wantedType
    sequence = set.start(
      type: wantedType, timing: wanted, filterDuplicates: settings.filterDuplicates)
    if let first = sequence.first { actions.append(.send(first)) }
  }

  /// Earshot's own scan, idle between commands, gets the wanted timing and
  /// type. A failure on the way is the adapter's (as for a retake): it is
  /// looked for again and the scan started afresh.
  private mutating func changeTimingIfWanted(_ actions: inout [ScanAction]) {
    guard ours, sequence.isEmpty, openIndex != nil, let set = commands, let current = applied,
      wanted != current || wantedType != appliedType
    else { return }
    retaking = true
    pending = wanted
    pendingType = wantedType
    if wanted.duty < current.duty { say(listening: wanted, &actions) }
    sequence =
      [set.disable]
      + set.start(
        type: wantedType, timing: wanted, filterDuplicates: settings.filterDuplicates)
    actions.append(.send(sequence[0]))
  }

  private mutating func say(listening timing: ScanTiming, _ actions: inout [ScanAction]) {
    guard listeningTiming != timing else { return }
    listeningTiming = timing
    actions.append(.listening(timing))
  }

  private mutating func answered(
    _ command: HCICommand, _ status: HCIStatus, now: MonotonicTime, _ actions: inout [ScanAction]
  ) {
    let name = adapterName ?? "adapter"
    if status == .commandDisallowed {
      // Someone else is scanning: read their reports, send nothing more.
      sequence = []
      ours = false
      applied = nil
      appliedType = nil
      firstAttempt = false
      setState(.sharing(adapter: name), &actions)
      say(listening: .continuous, &actions)
      return
    }
    guard status.isSuccess else {
      sequence = []
      sequenceFailed(.refused(adapter: name, command.opcode, status), now: now, &actions)
      return
    }
    if command.scanEnableValue == true {
      ours = true
      applied = pending
      appliedType = pendingType
    }
    sequence.removeFirst()
    if let next = sequence.first {
      actions.append(.send(next))
      return
    }
    firstAttempt = false
    if let set = commands {
      setState(.scanning(adapter: name, commands: set, type: appliedType ?? wantedType), &actions)
    }
    if let applied { say(listening: applied, &actions) }
    // The want may have moved while the commands were out.
    changeTimingIfWanted(&actions)
  }

  private mutating func sequenceFailed(
    _ failure: ScanFailure, now: MonotonicTime, _ actions: inout [ScanAction]
  ) {
    if retaking {
      setState(.failed(adapter: adapterName ?? "adapter", reason: failure.reason), &actions)
      adapterLost(down: false, now: now, &actions)
    } else {
      acquireFailed(failure, now: now, &actions)
    }
  }

  /// Opening the adapter or starting its scan failed.
  private mutating func acquireFailed(
    _ failure: ScanFailure, now: MonotonicTime, _ actions: inout [ScanAction]
  ) {
    closeAdapter(&actions)
    if firstAttempt && (!waitForAdapter || failure.kind == .permanent) {
      isRunning = false
      firstAttempt = false
      actions.append(.closeLifecycle)
      actions.append(.giveUp(failure))
      return
    }
    firstAttempt = false
    wait(after: failure, now: now, &actions)
  }

  /// Says why there is no scan now and looks again later.
  private mutating func wait(
    after failure: ScanFailure, now: MonotonicTime, _ actions: inout [ScanAction]
  ) {
    let name = settings.adapter ?? adapterName ?? "adapter"
    switch failure.kind {
    case .noAdapter where adapterName == nil:
      // Never had one: say so plainly rather than "removed".
      setState(.failed(adapter: name, reason: "no Bluetooth adapter found"), &actions)
    case .noAdapter, .gone: setState(.removed(adapter: name), &actions)
    case .down: setState(.down(adapter: name), &actions)
    default: setState(.failed(adapter: name, reason: failure.reason), &actions)
    }
    scheduleRetry(now: now, &actions)
  }

  // MARK: Losing the adapter

  private mutating func adapterLost(down: Bool, now: MonotonicTime, _ actions: inout [ScanAction]) {
    guard openIndex != nil, let name = adapterName else { return }
    closeAdapter(&actions)
    cancel(.retake, &actions)
    setState(down ? .down(adapter: name) : .removed(adapter: name), &actions)
    scheduleRetry(now: now, &actions)
  }

  private mutating func closeAdapter(_ actions: inout [ScanAction]) {
    actions.append(.closeAdapter)
    openIndex = nil
    sequence = []
    ours = false
    applied = nil
    appliedType = nil
    listeningTiming = nil
    otherScanCommands.removeAll()
  }

  private mutating func scheduleRetry(now: MonotonicTime, _ actions: inout [ScanAction]) {
    guard isRunning, retryDeadline == nil else { return }
    let deadline = now.adding(seconds: settings.retrySeconds)
    retryDeadline = deadline
    actions.append(.timer(.arm(.retry, at: deadline)))
  }

  // MARK: Another program's scan

  /// Another program turned scanning on or off. On: its reports flow, read
  /// them. Off: Earshot's scan (if it was running) is gone too; start it
  /// again unless the other program turns scanning back on soon.
  private mutating func otherProgramScans(
    _ enabled: Bool, now: MonotonicTime, _ actions: inout [ScanAction]
  ) {
    guard let name = adapterName else { return }
    cancel(.retake, &actions)
    ours = false
    applied = nil
    appliedType = nil
    if enabled {
      setState(.sharing(adapter: name), &actions)
      say(listening: .continuous, &actions)
      return
    }
    if !paused {
      paused = true
      actions.append(.scanPaused(true))
    }
    let deadline = now.adding(seconds: settings.retakeSeconds)
    retakeDeadline = deadline
    actions.append(.timer(.arm(.retake, at: deadline)))
  }

  // MARK: Stopping

  private mutating func stop(_ actions: inout [ScanAction]) {
    isRunning = false
    firstAttempt = false
    opening = false
    cancel(.retry, &actions)
    cancel(.retake, &actions)
    if ours, openIndex != nil, let set = commands {
      actions.append(.restore(set.restore))
    }
    closeAdapter(&actions)
    actions.append(.closeLifecycle)
  }

  // MARK: Helpers

  private mutating func cancel(_ timer: ScanTimer, _ actions: inout [ScanAction]) {
    switch timer {
    case .retry:
      guard retryDeadline != nil else { return }
      retryDeadline = nil
    case .retake:
      guard retakeDeadline != nil else { return }
      retakeDeadline = nil
    }
    actions.append(.timer(.cancel(timer)))
  }

  private mutating func setState(_ new: AdapterState, _ actions: inout [ScanAction]) {
    if paused && new.isReceiving {
      paused = false
      actions.append(.scanPaused(false))
    }
    guard new != state else { return }
    state = new
    actions.append(.report(new))
  }
}
