import EarshotCore

/// Carries out what the region monitor decides: prints its events, runs the
/// hooks, and saves the state file when a region's known state changes.
///
/// Fed by any source of (time, AdvertisingReport) plus adapter up/down: a
/// capture replay, or the live HCI scanner, whose event loop calls
/// `report`, `adapterUp`/`adapterDown`, arms a timer for `nextDeadline`
/// (and `hooks.nextDeadline` on the monotonic clock), calls `advance` when
/// it fires and `hooks.reap()` on SIGCHLD. Times in are the monitor's
/// decision time, in microseconds: capture time in a replay, the monotonic
/// clock live. Events carry that time and the wall time shown for it, for
/// people and other machines; sightings and the state file are what
/// `shownTime` makes of theirs.
public final class MonitorDriver {
  // One thread drives the driver (the agent's loop), so what every report
  // touches (the monitor, the joiner, the hooks for sightings) needs no
  // run-time exclusivity check (a few percent of a report each).
  @exclusivity(unchecked) public private(set) var monitor: RegionMonitor
  public private(set) var config: Config
  public let hooks: HookRunner?
  public let stateFile: StateFile?
  /// Receives every event the monitor decides, then each observer.
  private let output: (MonitorEvent) -> Void
  private var observers: [(MonitorEvent) -> Void] = []
  public var log: (String) -> Void
  /// How decision time maps to the wall time shown (live: `.live`, set
  /// before `start`; a replay decides and shows capture time). The
  /// monitor's: it stamps each event with both as it decides it.
  public var timeline: MonitorTimeline {
    get { monitor.timeline }
    set { monitor.timeline = newValue }
  }

  /// The wall time of a decision time.
  public func shownTime(_ t: Int64) -> Int64 {
    timeline.shown(DecisionTime(micros: t)).micros
  }
  /// Every iBeacon report, before the monitor takes it (rooms' sightings),
  /// at its decision time (`shownTime` gives the wall time to show).
  @exclusivity(unchecked) public var onBeacon: ((Int64, TrackedBeacon, AdvertisingReport) -> Void)?
  /// Every other report that the monitor's directory resolves to a known
  /// device, with that device and the report's TX Power Level, before the
  /// monitor takes it (rooms' sightings of devices).
  @exclusivity(unchecked) public var onDevice:
    ((Int64, DeviceIdentity, AdvertisingReport, Int8?) -> Void)?

  /// The config's own beacon formats the monitor tracks (a reload brings
  /// its own: kinds are interned, so a region's match and the decoder
  /// agree on them).
  private(set) var layouts: LayoutKinds

  /// Eddystone-TLM readings joined to their beacons by address.
  @exclusivity(unchecked) public private(set) var telemetry = TelemetryJoiner()
  /// Every reading joined to a beacon (its time is decision time).
  public var onTelemetry: ((TrackedID, BeaconTelemetry) -> Void)?

  /// `cipher`: AES for resolving devices' private addresses (libcrypto's
  /// by default).
  public init(
    config: Config, emitRange: Bool, stateFile: StateFile?, runHooks: Bool,
    cipher: any BlockCipher = LibcryptoAES(),
    output: @escaping (MonitorEvent) -> Void, log: @escaping (String) -> Void
  ) throws {
    self.config = config
    layouts = config.trackedLayouts
    self.stateFile = stateFile
    self.output = output
    self.log = log
    hooks = runHooks ? HookRunner(log: log) : nil
    var snapshot: MonitorSnapshot? = nil
    do {
      snapshot = try stateFile.flatMap { try MonitorSnapshot.load(from: $0) }
    } catch let e as CorruptState {
      // A damaged state file must not keep the agent from monitoring: the
      // regions start unknown and the file is rewritten at the next change.
      log(
        "warning: the state file \(e.path) is unreadable (\(e.reason)); every region starts unknown and the file is rewritten at the next change"
      )
    } catch {
      log(
        "warning: cannot read the state file: \(error); every region starts unknown"
      )
    }
    monitor = RegionMonitor(
      config: config, emitRange: emitRange, snapshot: snapshot, cipher: cipher)
    hooks?.log = { [unowned self] in self.log($0) }
  }

  /// Adds a receiver of every event after `output` (an owner made after
  /// the driver, such as `AgentMonitor`).
  public func observe(_ receiver: @escaping (MonitorEvent) -> Void) {
    observers.append(receiver)
  }

  public func start(at t: DecisionTime, scanning: Bool) {
    let timeline = self.timeline
    handle(
      monitor.start(
        at: t, scanning: scanning, savedTime: timeline.decision(shown:)))
  }

  /// An advertising report: an iBeacon, or any other advertisement, which
  /// counts when it comes from a device a region names (else it only
  /// moves time).
  public func report(at t: DecisionTime, _ report: AdvertisingReport) {
    let frame = TrackedFrame.decode(advertisingData: report.data, layouts: layouts)
    if case .beacon(let beacon)? = frame {
      onBeacon?(t.micros, beacon, report)
      if let joined = telemetry.beacon(beacon.id, address: report.address, at: t) {
        onTelemetry?(beacon.id, joined)
      }
      handle(
        monitor.report(
          at: t, beacon: beacon, address: report.address, rssi: report.rssi))
      return
    }
    // A TLM frame names no beacon: joined by address, and otherwise a
    // report like any other (a device's, when its address is one).
    if case .telemetry(let tlm)? = frame,
      let (id, reading) = telemetry.telemetry(
        tlm, address: report.address, at: t, shown: timeline.shown(t))
    {
      onTelemetry?(id, reading)
    }
    if monitor.watchesDevices {
      // Resolved once, for the regions and the rooms alike.
      let n = monitor.resolveDevice(report.address, type: report.addressType)
      // Only a known device's TX Power is read (most reports are not one's).
      let tx = n == nil ? nil : ADWalker.txPowerLevel(report.data)
      if let onDevice, let n { onDevice(t.micros, monitor.device(at: n), report, tx) }
      handle(
        monitor.report(
          at: t, device: n, address: report.address, rssi: report.rssi,
          txPower: tx))
    } else {
      handle(monitor.advance(to: t))
    }
  }

  /// The devices bonded with this machine, whole (as the bond store has
  /// them now): see `RegionMonitor.updateBondedKeys`.
  public func updateBondedKeys(_ keys: [BondedKey]) {
    monitor.updateBondedKeys(keys)
  }

  /// A tag's link as presence (see `RegionMonitor.tagConnected`, `tagAbsent`).
  public func tag(_ name: String, connected: Bool, at t: DecisionTime) {
    handle(
      connected
        ? monitor.tagConnected(name, at: t)
        : monitor.tagAbsent(name, at: t))
  }

  public func adapterUp(at t: DecisionTime) { handle(monitor.adapterUp(at: t)) }
  public func adapterDown(at t: DecisionTime) { handle(monitor.adapterDown(at: t)) }
  public func advance(to t: DecisionTime) { handle(monitor.advance(to: t)) }
  public func resumed(at t: DecisionTime) { handle(monitor.resumed(at: t)) }
  public func scanPaused(at t: DecisionTime) { handle(monitor.scanPaused(at: t)) }
  public func scanResumed(at t: DecisionTime) { handle(monitor.scanResumed(at: t)) }
  /// Live: ask devices by name before their regions are declared outside
  /// (`[monitor] name_requests`, when the adapter can page).
  public func askNames(_ on: Bool) { monitor.nameRequests = on }
  /// The name requests the monitor wants sent (each once).
  public func takeNameRequests() -> [BDAddress] { monitor.takeNameRequests() }
  public func nameAnswered(_ address: BDAddress, found: Bool, at t: DecisionTime) {
    handle(monitor.nameAnswered(address, found: found, at: t))
  }
  public func scanDutyChanged(to duty: Double, at t: DecisionTime) {
    handle(monitor.scanDutyChanged(to: duty, at: t))
  }

  /// When `advance` must next be called (capture or wall-clock time).
  public var nextDeadline: DecisionTime? { monitor.deadline() }

  /// Lets running hooks finish (or time out). For the end of a replay.
  public func finish() { hooks?.finish() }

  func handle(_ events: [MonitorEvent]) {
    guard !events.isEmpty else {
      hooks?.reap()
      return
    }
    var changed = false
    for e in events {
      output(e)
      for o in observers { o(e) }
      if e.kind != .range && e.state != .unknown { changed = true }
      if e.kind == .enter || e.kind == .exit { runHook(e) }
    }
    if changed { saveState() }
    hooks?.reap()
  }

  /// Writes the state file now (also at a clean stop, so the last
  /// sighting times survive).
  public func saveState() {
    guard let stateFile else { return }
    do {
      try stateFile.write(monitor.snapshot(shown: timeline.shown).encode())
      if saveFailing {
        saveFailing = false
        log("region states are saved to \(stateFile.path) again")
      }
    } catch {
      // Said once, not at every change: monitoring goes on either way.
      if !saveFailing {
        log(
          "cannot save region states to \(stateFile.path): \(error); monitoring continues, but the states will not survive a restart until this is fixed (said once)"
        )
      }
      saveFailing = true
    }
  }

  private var saveFailing = false

  /// A reloaded config: see `RegionMonitor.reconfigure`. Hooks and
  /// exit_after follow the new settings; the state file is rewritten.
  public func reconfigure(_ config: Config, at t: DecisionTime) {
    self.config = config
    layouts = config.trackedLayouts
    handle(monitor.reconfigure(config, at: t))
    saveState()
  }

  func runHook(_ e: MonitorEvent) {
    guard let hooks, let region = config.regions.first(where: { $0.name == e.region }),
      let argv = e.kind == .enter ? region.onEnter : region.onExit
    else { return }
    let b = e.beacons.first
    let beacon = b?.id.beacon
    let device = b?.id.device
    // A device's event leaves the iBeacon fields empty, and the other way
    // round; a kind of another shape (Eddystone, a layout of the user's)
    // leaves them empty too, EARSHOT_BEACON names a beacon of any format.
    let uuidShaped =
      device == nil && (beacon?.kind ?? region.beacons?.kind ?? region.format).hasUUIDShape
    let env: [(String, String)] = [
      ("EARSHOT_REGION", e.region),
      ("EARSHOT_EVENT", e.kind.rawValue),
      ("EARSHOT_UUID", uuidShaped ? (beacon?.uuid ?? region.uuid)?.description ?? "" : ""),
      (
        "EARSHOT_MAJOR",
        uuidShaped ? beacon.map { String($0.major) } ?? region.major.map { String($0) } ?? "" : ""
      ),
      (
        "EARSHOT_MINOR",
        uuidShaped ? beacon.map { String($0.minor) } ?? region.minor.map { String($0) } ?? "" : ""
      ),
      ("EARSHOT_BEACON", beacon?.description ?? ""),
      ("EARSHOT_DEVICE", device?.description ?? ""),
      ("EARSHOT_ADDRESS", b?.address.description ?? ""),
      ("EARSHOT_DISTANCE", b?.accuracy.map { JSONLine.format($0, decimals: 2) } ?? ""),
    ]
    hooks.spawn(
      argv, environment: env, timeout: region.hookTimeout,
      label: "region \(e.region) on_\(e.kind.rawValue) \(argv[0])")
  }
}
