import EarshotCore

/// The tracker watch on the agent (`[trackers] enabled`): every report the
/// monitor is given, live or replayed, goes to the core's `TrackerWatch`;
/// a tracker that follows is logged, and `status` lists what is around.
/// Live, the watch's clock is CLOCK_BOOTTIME (the 24 hours and the
/// retention count the laptop's sleep); in a replay, the capture's.
public final class TrackerWatchDriver {
  public private(set) var watch: TrackerWatch
  /// Told of each tracker that follows, once (the agent's event).
  public var onFollowing: ((TrackerRow) -> Void)?
  private let log: (String) -> Void
  private let now: () -> MonotonicTime
  private var live = true
  private let onFollowingHook: [String]?
  private let hookTimeout: Double
  /// The proximity log, when kept: a row when one follows and when cleared.
  public var proximityLog: ProximityLogWriter?

  public init(
    config: TrackersConfig, now: @escaping () -> MonotonicTime, log: @escaping (String) -> Void
  ) {
    watch = TrackerWatch(settings: TrackerWatch.Settings(config: config))
    self.now = now
    self.log = log
    onFollowingHook = config.onFollowing
    hookTimeout = config.hookTimeout
  }

  /// Takes the monitor's reports and its wakes (a move: the place is
  /// unknown until heard again); `live` picks the clock.
  public func attach(to monitor: AgentMonitor, live: Bool) {
    self.live = live
    monitor.observeWake { [unowned self] in _ = watch.handle(.moved(.resumed), at: now()) }
    monitor.observeReports { [unowned self, unowned monitor] report in
      let t = live ? now() : MonotonicTime(decision: monitor.now)
      for case .following(let row) in watch.handle(TrackerWatch.event(for: report), at: t) {
        log(
          "tracker following: \(row.number) \(row.frame), \(row.places) places, \(row.sightings) sightings"
        )
        onFollowing?(row)
        proximityLog?.record(.tracker(TrackerLogEvent(t: wall(t), kind: .following, row: row)))
        // The monitor's runner: it reaps on SIGCHLD and a replay waits for it.
        if let argv = onFollowingHook, let hooks = monitor.driver.hooks {
          hooks.spawn(
            argv, environment: TrackerAlert.environment(row, now: t), timeout: hookTimeout,
            label: "trackers on_following \(argv[0])")
        }
      }
    }
  }

  /// The user's trust or clear, now; false when the watch keeps no such tracker.
  public func handle(_ event: TrackerWatch.Event) -> Bool {
    let t = live ? now() : watch.latest
    var cleared: TrackerRow? = nil
    if case .clear(let number) = event {
      cleared = watch.rows.first { $0.number == number && $0.following != nil }
    }
    let known = !watch.handle(event, at: t).contains {
      if case .unknownNumber = $0 { true } else { false }
    }
    if known, let cleared {
      proximityLog?.record(.tracker(TrackerLogEvent(t: wall(t), kind: .cleared, row: cleared)))
    }
    return known
  }

  /// The log's wall time: the system clock live, the capture's in a replay
  /// (the watch's clock is the capture's then).
  private func wall(_ t: MonotonicTime) -> WallTime {
    live ? Clock.wallNow() : WallTime(micros: Int64(t.nanos / 1000))
  }

  /// `status`'s `trackers` section: one object per tracker kept.
  public var statusJSON: JSONValue {
    let w = caughtUp()
    return .array(w.rows.map { ControlProtocol.json($0, now: w.latest) })
  }

  /// The watch, advanced to now when live: no timer wakes it in a quiet
  /// spell, so "s ago", forgetting and trust that ran out would lag.
  public func caughtUp() -> TrackerWatch {
    if live { watch.advance(to: now()) }
    return watch
  }
}
