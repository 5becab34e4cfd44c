import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// The region monitor as a part of the agent, shared by `earshot monitor`
/// and `earshot run`: feeds a `MonitorDriver` from the live scanner (on
/// the loop) or from a capture (capture time, as fast as it reads), arms
/// the loop's timers for its deadlines and the hooks' timeouts, reaps
/// hooks on SIGCHLD, records what it decides in the proximity log, and
/// hands every event to its observers.
///
/// Live, the monitor decides on the monotonic clock: each report's kernel
/// stamp (wall clock) is mapped onto it as it is read, and events leave
/// stamped with the wall clock again. So a step of the wall clock, either
/// way, changes no state and moves no deadline (it is logged once). The
/// monotonic clock stops while the machine sleeps; a sleep noticed on
/// resume (`ClockChanges`) is what the adapter going down is: every region
/// `unknown` (never an exit), each known again once heard, or outside
/// once `exit_after` of scanning after the resume has passed without it.
///
/// The adapter going down or away makes every region `unknown` (never an
/// exit); when the scanner has it back, monitoring resumes.
public final class AgentMonitor {
  public let loop: EventLoop
  public let driver: MonitorDriver
  /// Where region events, sightings and adapter changes are recorded.
  public let proximityLog: ProximityLogWriter?
  public private(set) var scanner: LiveScanner?
  /// The adapter's last state (live only).
  public private(set) var adapter: AdapterState?
  /// Adapter changes, for the user (the monitor prints them on stderr).
  public var onAdapterState: ((AdapterState) -> Void)?

  private var observers: [(MonitorEvent) -> Void] = []
  private var adapterObservers: [(AdapterState) -> Void] = []
  private var telemetryObservers: [(TrackedID, BeaconTelemetry) -> Void] = []
  /// Telemetry goes to observers at most once a minute per beacon, and
  /// into the log once per ten minutes (sooner when the battery moved).
  private var observedTelemetry = TelemetryThrottle(interval: 60)
  private var loggedTelemetry = TelemetryThrottle(interval: 600)
  private var reportObservers: [(AdvertisingReport) -> Void] = []
  private var wakeObservers: [() -> Void] = []
  private var started = false
  private var receiving = false
  private var live = false
  /// The newest capture time seen in a replay (the monitor's "now" afterwards).
  private var captureTime: Int64?
  private let deadlineTimer: MovingDeadline<DecisionTime>
  private let hookTimer: MovingDeadline<MonotonicTime>
  /// A paced replay under way.
  private var pacedReplay: PacedReplay?
  /// Sleeps and steps of the wall clock (live only).
  private var clocks: ClockChanges?
  /// When the clock watch last saw a sleep or a step (monotonic µs).
  private var clockChangedAt = DecisionTime(micros: .min)
  /// logind's word before a sleep (live, where logind runs).
  private var logind: LogindSleep?
  /// Between logind's PrepareForSleep(true) and (false).
  private var goingToSleep = false
  /// The scan scheduler's shell (live, unless the duty is `full`).
  private var duty: ScanDutyControl?
  private var power: PowerSupplyReader?
  /// A replay heard through a simulated radio (`--radio`), if any.
  public var replayRadio: ReplayRadio?

  public init(loop: EventLoop, driver: MonitorDriver, proximityLog: ProximityLogWriter? = nil) {
    self.loop = loop
    self.driver = driver
    self.proximityLog = proximityLog
    deadlineTimer = MovingDeadline(liveOn: loop)
    hookTimer = MovingDeadline(monotonicOn: loop)
    driver.observe { [unowned self] e in self.dispatch(e) }
    driver.onTelemetry = { [unowned self] id, reading in self.telemetryHeard(id, reading) }
    deadlineTimer.onFire = { [unowned self] deadline in
      // Reports that arrived before the deadline may still be queued (the
      // scanner reads a busy socket in batches): take them first, or an
      // exit could fire with its beacon's report in the queue.
      self.clocks?.check()
      self.scanner?.readQueued()
      // Never short of the deadline it was armed for.
      self.driver.advance(to: max(Clock.decisionNow(), deadline))
      self.rearm()
    }
    hookTimer.onFire = { [unowned self] _ in
      self.driver.hooks?.reap()
      self.rearm()
    }
  }

  /// Adds a receiver of every monitor event (in the order they happen).
  public func observe(_ receiver: @escaping (MonitorEvent) -> Void) {
    observers.append(receiver)
  }

  /// Adds a receiver of every advertising report the monitor is given,
  /// live or replayed, before the monitor sees it (the Bluetooth proxy).
  /// The report's data is valid only during the call.
  public func observeReports(_ receiver: @escaping (AdvertisingReport) -> Void) {
    reportObservers.append(receiver)
  }

  /// Adds a receiver of each change of the adapter's state (live only;
  /// the Bluetooth proxy reports it to its clients).
  public func observeAdapterState(_ receiver: @escaping (AdapterState) -> Void) {
    adapterObservers.append(receiver)
  }

  /// Adds a receiver told when the machine woke from a sleep (live, with
  /// logind): the laptop may have moved (the tracker watch).
  public func observeWake(_ receiver: @escaping () -> Void) {
    wakeObservers.append(receiver)
  }

  /// Adds a receiver of the telemetry of beacons a region names (at most
  /// once a minute per beacon).
  public func observeTelemetry(_ receiver: @escaping (TrackedID, BeaconTelemetry) -> Void) {
    telemetryObservers.append(receiver)
  }

  /// The newest telemetry of a beacon, if it sends any.
  public func telemetry(of id: TrackedID) -> BeaconTelemetry? { driver.telemetry.telemetry(of: id) }

  /// Beacons no region names are not followed: their telemetry goes nowhere.
  private func telemetryHeard(_ id: TrackedID, _ reading: BeaconTelemetry) {
    guard driver.config.regions.contains(where: { $0.matches(id) }) else { return }
    if let proximityLog, loggedTelemetry.shouldPass(id, reading) {
      proximityLog.record(.telemetry(TelemetryLogEvent(beacon: id, reading: reading)))
    }
    guard observedTelemetry.shouldPass(id, reading) else { return }
    for o in telemetryObservers { o(id, reading) }
  }

  private func dispatch(_ e: MonitorEvent) {
    if let proximityLog {
      for p in ProximityEvent.from(e) { proximityLog.record(p) }
    }
    for o in observers { o(e) }
  }

  /// The monitor's present (decision) time: the monotonic clock live,
  /// the last capture timestamp after a replay.
  /// Before any replay, the wall clock read as a capture time (a replay's
  /// decision time is its capture's clock).
  public var now: DecisionTime {
    if live { return Clock.decisionNow() }
    return DecisionTime(capture: captureTime.map { WallTime(micros: $0) } ?? Clock.wallNow())
  }

  /// The wall time of one of the monitor's times, for display.
  public func shown(_ t: DecisionTime) -> WallTime { driver.timeline.shown(t) }

  public var isMonitoring: Bool { started }

  // MARK: Live

  /// Starts scanning with `options` and monitoring on the monotonic clock.
  /// `waitForAdapter`: a missing or powered-off adapter is waited for
  /// (regions stay unknown) instead of being an error. `reapOnSignal`:
  /// take SIGCHLD through the loop to collect finished hooks at once
  /// (otherwise at their timeouts and with the next event).
  ///
  /// `schedule`: how much radio time the scan takes (`[scanner] duty`);
  /// `power` says where the machine's power comes from.
  public func startLive(
    options: LiveScanOptions, schedule: ScanScheduleSettings = ScanScheduleSettings(policy: .full),
    power: PowerSupplyReader = PowerSupplyReader(), waitForAdapter: Bool, reapOnSignal: Bool
  ) throws {
    live = true
    if reapOnSignal, driver.hooks != nil {
      try loop.handleSignals([SIGCHLD]) { [unowned self] _ in
        self.driver.hooks?.reap()
        self.rearm()
      }
    }
    let clocks = try ClockChanges(loop: loop)
    clocks.onChange = { [unowned self] change in self.clockChanged(change) }
    self.clocks = clocks
    driver.timeline = .live(read: { Clock.reading() })
    started = true
    driver.start(at: Clock.decisionNow(), scanning: false)
    let duty =
      schedule.policy == .full
      ? nil : ScanDutyControl(loop: loop, settings: schedule, driver: driver, power: power)
    self.duty = duty
    self.power = power
    let s = LiveScanner(
      loop: loop, options: options,
      onReport: { [unowned self] micros, report in
        for o in self.reportObservers { o(report) }
        let reading = clocks.check()
        self.driver.report(
          at: LiveTime.decision(stamp: WallTime(micros: micros), at: reading), report)
        self.rearm(reportOnly: true)
      },
      onAdapterState: { [unowned self] state in self.adapterChanged(state) })
    s.onScanPaused = { [unowned self] paused, stamp in
      let reading = clocks.check()
      var t = Clock.decisionNow()
      // A pause counts from when the kernel turned the scan off (its
      // packet's stamp), not from when it was read: the kernel's suspend
      // turns it off and the freezer can stop Earshot before it reads that
      // (for up to its 20 s timeout), and those seconds were no listening.
      // Never before the last sleep or clock step: a stamp's age across
      // one says nothing.
      if paused, let stamp {
        t = max(
          LiveTime.decision(stamp: WallTime(micros: stamp), at: reading, maxAge: 20),
          self.clockChangedAt)
      }
      if paused { self.driver.scanPaused(at: t) } else { self.driver.scanResumed(at: t) }
      duty?.paused(paused, at: t)
      self.rearm()
    }
    s.onNameAnswer = { [unowned self] address, found in
      // On the loop's next turn: the answer may come from inside a read.
      self.loop.after(nanos: 0) { [weak self] in
        guard let self, self.live else { return }
        self.driver.nameAnswered(address, found: found, at: Clock.decisionNow())
        self.rearm()
      }
    }
    if let duty {
      duty.attach(s)
      s.onListening = { [unowned self] timing in
        duty.listening(timing, at: Clock.decisionNow())
        self.rearm()
      }
    }
    scanner = s
    do {
      try s.start(waitForAdapter: waitForAdapter)
    } catch {
      scanner = nil
      throw error
    }
    rearm()
  }

  private func adapterChanged(_ state: AdapterState) {
    adapter = state
    onAdapterState?(state)
    for o in adapterObservers { o(state) }
    clocks?.check()
    let t = Clock.decisionNow()
    if state.isReceiving != receiving {
      receiving = state.isReceiving
      if receiving { driver.adapterUp(at: t) } else { driver.adapterDown(at: t) }
      if receiving { askNamesIfPageable() }
      if !receiving { duty?.listening(nil, at: t) }
      proximityLog?.record(
        .adapter(
          AdapterLogEvent(
            t: Clock.wallNow(), adapter: state.adapter, kind: receiving ? .up : .down)))
    }
    rearm()
  }

  /// A sleep is a pause in hearing, taken as the adapter going down and
  /// coming back at the resume: the time asleep is not scanning time. A
  /// step of the wall clock changes nothing the monitor decides.
  private func clockChanged(_ change: ClockWatch.Change) {
    clockChangedAt = Clock.decisionNow()
    driver.log(change.description)
    // A sleep logind announced is taken up at its wake (`woke`).
    guard case .slept = change, !goingToSleep else { return }
    driver.resumed(at: Clock.decisionNow())
    rearm()
  }

  /// Follows logind's PrepareForSleep on `bus` (the system bus) with a
  /// delay inhibitor: before the sleep decisions pause and the state file
  /// is written; at the wake regions are unknown until heard again, as
  /// after any sleep. Call after `startLive`. Without logind, nothing.
  public func followSleep(on bus: DBusConnection) throws {
    let watch = LogindSleep(bus: bus, log: { [unowned self] in self.driver.log($0) })
    watch.onSleep = { [unowned self] in self.sleeping() }
    watch.onWake = { [unowned self] in self.woke() }
    try watch.start()
    logind = watch
  }

  private func sleeping() {
    guard live else { return }
    clocks?.check()
    goingToSleep = true
    driver.scanPaused(at: Clock.decisionNow())
    driver.saveState()
    driver.log("the machine is going to sleep: state saved, decisions paused")
    rearm()
  }

  private func woke() {
    guard live, goingToSleep else { return }
    // The clock watch's view of this sleep first, so it is taken up once.
    clocks?.check()
    goingToSleep = false
    let t = Clock.decisionNow()
    driver.scanResumed(at: t)
    driver.resumed(at: t)
    rearm()
    for o in wakeObservers { o() }
  }

  /// A tag's link went up or down (`TagTransport.onPresence`): regions
  /// naming it follow. Live only (a replay runs on capture time).
  public func tag(_ name: String, connected: Bool) {
    guard live else { return }
    clocks?.check()
    driver.tag(name, connected: connected, at: Clock.decisionNow())
    rearm()
  }

  /// Name requests live, where `[monitor] name_requests` allows and the
  /// adapter can page (never in a replay: nobody would answer).
  private func askNamesIfPageable() {
    guard live else { return }
    driver.askNames(driver.config.monitor.nameRequests && scanner?.canPage == true)
  }

  /// Keeps one loop timer on the monitor's next deadline and one on the
  /// earliest hook timeout (both monotonic), and has the scan scheduler
  /// look again (after a report at most every 100 ms: `reportOnly`).
  private func rearm(reportOnly: Bool = false) {
    guard live else { return }
    duty?.ask(force: !reportOnly)
    let names = driver.takeNameRequests()
    if !names.isEmpty {
      // A page goes out from the loop, never from inside a report's read.
      loop.after(nanos: 0) { [weak self] in
        for address in names { self?.scanner?.requestName(address) }
      }
    }
    deadlineTimer.arm(at: driver.nextDeadline)
    hookTimer.arm(at: driver.hooks?.nextDeadline)
  }

  /// Stops scanning (restoring the adapter), cancels the timers and saves
  /// the region states. The proximity log is its owner's to close.
  public func stop() {
    scanner?.stop()
    scanner = nil
    duty?.stop()
    duty = nil
    pacedReplay?.cancel()
    pacedReplay = nil
    deadlineTimer.cancel()
    hookTimer.cancel()
    clocks = nil
    logind = nil
    live = false
    if started { driver.saveState() }
  }

  // MARK: Replay

  /// Drives the monitor with a capture's reports and timestamps: timers
  /// fire as capture time passes and those due by the last timestamp fire
  /// at the end. Returns at the end of the capture (no waiting).
  public func replay(path: String) throws {
    var (file, reader) = try openCapture(path)
    var decoding = CaptureReplay()
    do {
      while let record = reader.next() { replay(record, with: &decoding) }
      try withExtendedLifetime(file) { try decoding.finish(reader) }
    } catch {
      throw ReplayError("\(path): \(error)")
    }
    endReplay()
  }

  /// The same at `pace` times capture time (1 = real time), on the loop:
  /// returns at once (after checking that `path` is a capture) and calls
  /// `done` at the end of the capture, with the error that ended it early
  /// if any. The capture's first record plays at `startAt` (wall clock;
  /// default now), so agents started apart can replay in step. Between
  /// records, the monitor's deadlines fire when their capture time comes.
  public func replay(
    path: String, pace: Double, startAt: WallTime? = nil, done: @escaping (ReplayError?) -> Void
  ) throws {
    let (file, reader) = try openCapture(path)
    var decoding = CaptureReplay()
    let paced = PacedReplay(
      loop: loop, reader: reader, pace: pace, startAt: startAt,
      handle: { [unowned self] record in self.replay(record, with: &decoding) },
      nextDeadline: { [unowned self] in self.started ? self.driver.nextDeadline : nil },
      advance: { [unowned self] t in
        self.captureTime = max(self.captureTime ?? t.micros, t.micros)
        self.driver.advance(to: t)
      })
    paced.onEnd = { [unowned self] reader in
      defer { self.pacedReplay = nil }
      do {
        try withExtendedLifetime(file) { try decoding.finish(reader) }
      } catch {
        self.endReplay()
        done(ReplayError("\(path): \(error)"))
        return
      }
      self.endReplay()
      done(nil)
    }
    pacedReplay = paced
    paced.start()
  }

  private func openCapture(_ path: String) throws -> (FileStream, CaptureReader) {
    let file: FileStream
    do { file = try FileStream(path: path) } catch { throw ReplayError("\(path): \(error)") }
    do {
      // Streamed: bounded memory whatever the capture's size.
      return (file, try CaptureReader(source: file.read(into:)))
    } catch {
      throw ReplayError("\(path): \(error)")
    }
  }

  /// One record of a replay into the monitor, in capture time.
  private func replay(_ record: CaptureRecord, with replay: inout CaptureReplay) {
    if replayRadio != nil, !radioHears(record) { return }
    var reported = false
    replay.handle(
      record,
      report: { t, r in
        self.beginReplay(at: t)
        for o in self.reportObservers { o(r) }
        self.driver.report(at: DecisionTime(micros: t), r)
        reported = true
      },
      event: { t, _ in
        self.beginReplay(at: t)
        self.driver.advance(to: DecisionTime(micros: t))
      })
    if reported {
      replayRadio?.radio.reported(at: DecisionTime(capture: WallTime(micros: record.timestamp)))
    }
  }

  /// Through `--radio`: the radio's due items and the monitor's deadlines
  /// up to the record's time, in time order (a deadline first at equal
  /// times, then the radio asked); then whether its scanner hears the
  /// record (time passes for the monitor either way).
  private func radioHears(_ record: CaptureRecord) -> Bool {
    let t = record.timestamp
    let at = DecisionTime(capture: WallTime(micros: t))
    beginReplay(at: t)
    let driver = self.driver
    let need: SimulatedRadio.Need = {
      driver.monitor.fullDutyNeeded(at: $0, sampledDuty: $1, allowance: $2)
    }
    if !replayRadio!.radio.started { radioSteps(replayRadio!.radio.start(at: at, need: need)) }
    while true {
      let d = driver.nextDeadline
      let r = replayRadio!.radio.nextDue
      if let d, d <= at, r.map({ d <= $0 }) ?? true {
        driver.advance(to: d)
        radioSteps(replayRadio!.radio.decide(at: d, need: need))
        if driver.nextDeadline == d { break }  // cannot happen; guards the loop
      } else if let r, r <= at {
        radioSteps(replayRadio!.radio.due(at: r, need: need))
      } else {
        break
      }
    }
    guard replayRadio!.hears(record) else {
      driver.advance(to: DecisionTime(micros: t))
      return false
    }
    return true
  }

  /// Tells the monitor what the replay's simulated scan did.
  private func radioSteps(_ steps: [SimulatedRadio.Step]) {
    for step in steps {
      switch step {
      case .changed(let t, let duty):
        driver.scanPaused(at: t)
        driver.scanDutyChanged(to: duty, at: t)
      case .resumed(let t):
        driver.scanResumed(at: t)
      }
    }
  }

  private func beginReplay(at t: Int64) {
    if !started {
      started = true
      driver.start(at: DecisionTime(micros: t), scanning: true)
    }
    captureTime = max(captureTime ?? t, t)
  }

  /// Fires what is due by the last timestamp.
  private func endReplay() {
    if started, let captureTime { driver.advance(to: DecisionTime(micros: captureTime)) }
  }

  /// The devices bonded with this machine, whole (the bond store's
  /// helper calls this at start and whenever a bond is added or removed).
  public func updateBondedKeys(_ keys: [BondedKey]) {
    driver.updateBondedKeys(keys)
  }

  /// Applies a reloaded config's regions, `[ranging]` and `[monitor]`.
  public func reconfigure(_ config: Config) {
    driver.reconfigure(config, at: now)
    askNamesIfPageable()
    rearm()
  }

  // MARK: What the agent's status shows

  /// Each region's state, in config order.
  public var regionStates: [(region: String, state: RegionState)] {
    self.driver.config.regions.map { ($0.name, driver.monitor.state(of: $0.name) ?? .unknown) }
  }

  /// Whether a region names devices (an identity region).
  public func tracksDevices(region: String) -> Bool {
    driver.config.regions.first { $0.name == region }?.watchesDevices ?? false
  }

  /// The beacons ranged in regions that are inside, nearest first (a
  /// beacon in several regions is listed once, with the first region).
  public func rangedBeacons() -> [(region: String, beacon: RangedBeacon)] {
    let t = now
    var seen: Set<TrackKey> = []
    var out: [(String, RangedBeacon)] = []
    for (name, state) in regionStates where state == .inside {
      for b in driver.monitor.rangedBeacons(region: name, at: t) where seen.insert(b.id).inserted {
        out.append((name, b))
      }
    }
    return out.sorted { RangedBeacon.nearestFirst($0.1, $1.1) }
  }

  /// The live scan's policy, timing and duty (nil in a replay).
  public var scanReport: ScanDutyReport? {
    guard live, let scanner else { return nil }
    if let duty { return duty.report() }
    let timing = scanner.state?.isReceiving == true ? ScanTiming.continuous : nil
    return ScanDutyReport(
      policy: .full, power: power?.current() ?? .mains, timing: timing, mean: [:])
  }

  private var scanStatus: JSONValue { scanReport?.json ?? .null }

  /// `monitoring`, `regions` and `beacons` for the daemon's `status`.
  public var statusSections: [StatusSection: () -> JSONValue] {
    [
      .monitoring: { [unowned self] in .bool(self.started) },
      .regions:
        { [unowned self] in
          .array(
            self.regionStates.map { r in
              var fields: [(String, JSONValue)] = [
                ("region", .string(r.region)), ("state", .string(r.state.rawValue)),
              ]
              if let s = self.driver.monitor.exitTimeout(region: r.region) {
                fields.append(("exit_after", .number(s)))
              }
              return .object(fields)
            })
        },
      .beacons:
        { [unowned self] in
          .array(
            self.rangedBeacons().map { r in
              // The same fields as the monitor's range lines, plus the region.
              var fields: [(String, JSONValue)] = [("region", .string(r.region))]
              if case .object(let f)? = try? JSONParser.parse(
                MonitorEventFormatter.beaconJSON(r.beacon))
              {
                fields += f
              }
              if let id = r.beacon.id.beacon, let reading = self.telemetry(of: id) {
                fields += Self.telemetryFields(reading, now: self.now)
              }
              return .object(fields)
            })
        },
      .adapter: { [unowned self] in self.adapter.map { .string($0.message) } ?? .null },
      .scan: { [unowned self] in self.scanStatus },
    ]
  }

  /// A reading as `status` shows it: its fields and how old it is.
  static func telemetryFields(_ reading: BeaconTelemetry, now: DecisionTime) -> [(
    String, JSONValue
  )] {
    var j = JSONLine()
    reading.addFields(to: &j)
    guard case .object(let f)? = try? JSONParser.parse(j.line) else { return [] }
    return [
      (
        "telemetry",
        .object(f + [("age_s", .number(Double(max(0, now.micros - reading.decided.micros)) / 1e6))])
      )
    ]
  }
}

public struct ReplayError: Error, CustomStringConvertible {
  public let description: String
  public init(_ description: String) { self.description = description }
}
