import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// Where the log lives by default: `/var/lib/earshot/proximity.sqlite` for
/// root (the system service), `$XDG_STATE_HOME/earshot/proximity.sqlite`
/// (or `~/.local/state/...`) for a user.
public enum ProximityLogPaths {
  public static func defaultPath() -> String {
    if getuid() == 0 { return "/var/lib/earshot/proximity.sqlite" }
    if let state = env("XDG_STATE_HOME"), state.hasPrefix("/") {
      return state + "/earshot/proximity.sqlite"
    }
    let home = env("HOME") ?? "/tmp"
    return home + "/.local/state/earshot/proximity.sqlite"
  }

  static func env(_ name: String) -> String? {
    guard let p = getenv(name) else { return nil }
    let s = String(cString: p)
    return s.isEmpty ? nil : s
  }
}

/// The agent's side of the proximity log: `record` events as they happen
/// (cheap: no I/O), and the writer batches them into transactions.
///
/// Single-threaded, for the epoll loop: `attach(to:)` flushes on a timer
/// (every `flushSeconds`) and enforces retention hourly; `record` also
/// flushes at once when `flushRows` rows are waiting. Nothing here ever
/// blocks for long or throws at the caller: a locked database (another
/// writer, waited for at most `busyTimeoutMillis`), a full disk or a file
/// that cannot be opened is reported through `report` once, kept in
/// memory and retried at the next flush. Memory is bounded: past
/// `maxBacklog` waiting rows the oldest sighting rows are dropped (and
/// counted); region, adapter, find-phone and volume events never are.
public final class ProximityLogWriter {
  public struct Settings: Sendable {
    public var path: String
    /// Sighting rows are one per beacon per this many microseconds.
    public var interval: Int64 = 10_000_000
    public var keepDays: Double = 90
    public var flushSeconds: Double = 2
    public var flushRows = 500
    public var maxBacklog = 50_000
    /// Most beacons with a sighting interval open at once (a flood of
    /// spoofed identities closes intervals early instead of growing).
    public var maxOpenBeacons = 4096
    public var busyTimeoutMillis: Int32 = 10
    public var retentionSeconds: Double = 3600

    public init(path: String) { self.path = path }
  }

  public struct Stats: Sendable, Equatable {
    public var recorded = 0
    public var rowsWritten = 0
    public var droppedSightings = 0
    public var failedFlushes = 0
    public var retentionDeleted = 0
    public var lastError: String? = nil
  }

  public let settings: Settings
  public private(set) var stats = Stats()
  private var store: ProximityLogStore?
  private var downsampler: SightingDownsampler
  /// Rows waiting: sightings (droppable) and everything else (kept).
  private var pendingSightings: [SightingSummary] = []
  private var pendingSightingsHead = 0
  private var pendingOther: [ProximityLogStore.Row] = []
  private var knownMemberships: Set<Membership> = []
  private var failing = false
  private let report: (String) -> Void
  private let clock: (() -> ClockReading)?
  private let retentionClock: RetentionClock?

  struct Membership: Hashable {
    let region: String
    let beacon: TrackedID
  }

  /// - Parameters:
  ///   - report: where problems and recoveries are told (stderr by default).
  ///   - clock: the kernel's clocks; the wall clock closes sighting
  ///     intervals on timer flushes (rows are in wall time), and retention
  ///     counts on `RetentionClock` (a clock set forward prunes nothing
  ///     early). `nil` when replaying a capture (intervals then close as
  ///     event time passes, and at `close()`).
  public init(
    settings: Settings,
    report: @escaping (String) -> Void = { Console.error("earshot: proximity log: \($0)\n") },
    clock: (() -> ClockReading)? = { Clock.reading() }
  ) {
    self.settings = settings
    self.report = report
    self.clock = clock
    retentionClock = clock.map { RetentionClock(start: $0()) }
    downsampler = SightingDownsampler(interval: settings.interval)
  }

  /// The writer for `--log FILE` or `[log] enabled`, if any (`earshot
  /// run` and `earshot monitor`). A replay runs on capture time (`clock:
  /// nil`); live, on the wall clock.
  public static func forMonitor(
    config: Config, path: String?, replay: Bool, report: @escaping (String) -> Void
  ) -> ProximityLogWriter? {
    guard path != nil || config.log.enabled else { return nil }
    var settings = Settings(config: config.log)
    if let path { settings.path = path }
    return replay
      ? ProximityLogWriter(settings: settings, report: report, clock: nil)
      : ProximityLogWriter(settings: settings, report: report)
  }

  /// Rows waiting to be written.
  public var backlog: Int { pendingSightings.count - pendingSightingsHead + pendingOther.count }

  // MARK: Recording

  public func record(_ event: ProximityEvent) {
    stats.recorded += 1
    switch event {
    case .region(let e):
      pendingOther.append(.region(e))
      if let b = e.beacon { remember(region: e.region, beacon: b, t: e.t) }
    case .sighting(let s):
      if let r = s.region { remember(region: r, beacon: s.beacon, t: s.t) }
      for done in downsampler.add(s) { queue(done) }
      if downsampler.openCount > settings.maxOpenBeacons {
        for done in downsampler.closeAll() { queue(done) }
      }
    case .adapter(let e): pendingOther.append(.adapter(e))
    case .findPhone(let e): pendingOther.append(.findPhone(e))
    case .volume(let e): pendingOther.append(.volume(e))
    case .telemetry(let e): pendingOther.append(.telemetry(e))
    case .tracker(let e): pendingOther.append(.tracker(e))
    }
    // A full batch goes out at once, unless the database is failing: then
    // only the timer retries, so a locked file is not hammered per report.
    if backlog >= settings.flushRows && !failing { flush() }
  }

  private func remember(region: String, beacon: TrackedID, t: WallTime) {
    let m = Membership(region: region, beacon: beacon)
    guard !knownMemberships.contains(m) else { return }
    knownMemberships.insert(m)
    pendingOther.append(.membership(region: region, beacon: beacon, firstSeen: t))
  }

  private func queue(_ s: SightingSummary) {
    pendingSightings.append(s)
    let excess = backlog - settings.maxBacklog
    if excess > 0 {
      let drop = min(excess, pendingSightings.count - pendingSightingsHead)
      pendingSightingsHead += drop
      stats.droppedSightings += drop
      compact()
    }
  }

  private func compact() {
    if pendingSightingsHead > 1024 && pendingSightingsHead * 2 > pendingSightings.count {
      pendingSightings.removeFirst(pendingSightingsHead)
      pendingSightingsHead = 0
    }
  }

  // MARK: Writing

  /// Closes sighting intervals that have ended (by the clock, when there is
  /// one) and writes everything waiting in one transaction. On failure the
  /// rows stay queued for the next call. Returns whether all was written.
  @discardableResult
  public func flush() -> Bool {
    if let clock {
      for done in downsampler.close(before: clock().wall) { queue(done) }
    }
    return writePending()
  }

  /// Closes every open interval and writes what is waiting (at shutdown,
  /// or at the end of an import). Returns whether all was written.
  @discardableResult
  public func close() -> Bool {
    for done in downsampler.closeAll() { queue(done) }
    return writePending()
  }

  private func writePending() -> Bool {
    guard backlog > 0 else { return true }
    do {
      let store = try openStore()
      // Events first: they are what must not be lost.
      let rows =
        pendingOther + pendingSightings[pendingSightingsHead...].map { .sightings($0) }
      try store.write(rows)
      stats.rowsWritten += rows.count
      pendingOther.removeAll(keepingCapacity: true)
      pendingSightings.removeAll(keepingCapacity: true)
      pendingSightingsHead = 0
      if failing {
        failing = false
        report(
          "writing again to \(settings.path) after \(stats.failedFlushes) failed attempt(s)"
            + (stats.droppedSightings > 0
              ? "; \(stats.droppedSightings) sighting row(s) were dropped while it was unwritable"
              : ""))
      }
      return true
    } catch {
      stats.failedFlushes += 1
      let message = "\(error)"
      if !failing || message != stats.lastError {
        report(
          "cannot write \(backlog) row(s) now: \(message); kept in memory and retried "
            + "(oldest sightings are dropped past \(settings.maxBacklog) rows)")
      }
      stats.lastError = message
      failing = true
      // A connection that failed to open or migrate is retried from scratch.
      if let e = error as? SQLiteError, !e.isBusy, !e.isFull { store = nil }
      return false
    }
  }

  private func openStore() throws -> ProximityLogStore {
    if let store { return store }
    let s = try ProximityLogStore.openForWriting(
      path: settings.path, busyTimeoutMillis: settings.busyTimeoutMillis)
    try s.setMeta("sighting_interval_us", String(settings.interval))
    store = s
    return s
  }

  /// Deletes rows older than `keep_days` (0 or less keeps everything).
  /// Busy or failing: reported, and tried again at the next period.
  public func enforceRetention(now: Int64) {
    guard settings.keepDays > 0 else { return }
    let cutoff = now - Int64(settings.keepDays * 86_400 * 1e6)
    do {
      let store = try openStore()
      // A few chunks per call keeps each lock short; the rest waits.
      for _ in 0..<20 {
        let n = try store.deleteOlderThan(cutoff)
        stats.retentionDeleted += n
        if n == 0 { break }
      }
    } catch {
      report("retention (keep_days = \(settings.keepDays)) postponed: \(error)")
    }
  }

  // MARK: The loop

  private var timers: [EventLoop.TimerID] = []

  /// Flushes every `flushSeconds` and enforces retention now and every
  /// `retentionSeconds`, on the agent's loop.
  public func attach(to loop: EventLoop) {
    scheduleFlush(loop)
    retention(loop)
  }

  private func scheduleFlush(_ loop: EventLoop) {
    timers.append(
      loop.after(seconds: settings.flushSeconds) { [weak self, weak loop] in
        guard let self, let loop else { return }
        self.flush()
        self.scheduleFlush(loop)
      })
    if timers.count > 8 { timers.removeFirst(timers.count - 2) }
  }

  private func retention(_ loop: EventLoop) {
    if let clock, let retentionClock {
      enforceRetention(now: retentionClock.now(at: clock()))
    } else {
      enforceRetention(now: Clock.realtimeMicros())
    }
    timers.append(
      loop.after(seconds: settings.retentionSeconds) { [weak self, weak loop] in
        guard let self, let loop else { return }
        self.retention(loop)
      })
  }

  /// Stops the timers (call `close()` to write what is left).
  public func detach(from loop: EventLoop) {
    for t in timers { loop.cancel(t) }
    timers.removeAll()
  }
}

extension ProximityLogWriter.Settings {
  /// Writer settings from the `[log]` section.
  public init(config: ProximityLogConfig) {
    self.init(path: config.path ?? ProximityLogPaths.defaultPath())
    interval = Int64(config.interval * 1e6)
    keepDays = config.keepDays
  }
}
