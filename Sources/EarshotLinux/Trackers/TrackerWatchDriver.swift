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
  /// `[trackers] mqtt`: the trackers that follow may be published.
  public let publishesMQTT: Bool
  /// The laptop's own word on places and moves (live only).
  public private(set) var wifi: WiFiPlaces?
  public private(set) var mains: MainsWatch?

  public init(
    config: TrackersConfig, now: @escaping () -> MonotonicTime, log: @escaping (String) -> Void
  ) {
    watch = TrackerWatch(settings: TrackerWatch.Settings(config: config))
    self.now = now
    self.log = log
    onFollowingHook = config.onFollowing
    hookTimeout = config.hookTimeout
    publishesMQTT = config.mqtt
  }

  /// Takes the monitor's reports and its wakes (a move: the place is
  /// unknown until heard again); `live` picks the clock.
  public func attach(to monitor: AgentMonitor, live: Bool) {
    self.live = live
    monitor.observeWake { [unowned self] in moved(.resumed) }
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

  /// Live: the access points of the system's Wi-Fi scans and a change of
  /// network (`wifi`, nl80211), and mains unplugged (sysfs under
  /// `powerRoot`), fed to the watch as they happen. No Wi-Fi is one line
  /// in the log, not an error: places then come from the advertisers.
  public func attachLaptop(
    loop: EventLoop, wifi: Bool, powerRoot: String = "/sys/class/power_supply",
    mainsInterval: Double = 10
  ) {
    if wifi {
      do {
        let w = try WiFiPlaces(loop: loop, now: now)
        w.onEvent = { [unowned self] e in
          switch e {
          case .moved(let m): moved(m)
          case .accessPoints(let bssids):
            let before = watch.place.current
            _ = watch.handle(.accessPoints(bssids), at: now())
            if let here = watch.place.current, here != before {
              log("trackers: at \(here) (\(bssids.count) access points)")
            }
          }
        }
        self.wifi = w
      } catch {
        log("trackers: no Wi-Fi places (\(error)); places come from the advertisers heard")
      }
    }
    let m = MainsWatch(loop: loop, root: powerRoot, interval: mainsInterval)
    m.onUnplugged = { [unowned self] in moved(.unplugged) }
    mains = m
  }

  /// The laptop says it moved: the place is unknown until recognised again.
  private func moved(_ move: LaptopMove) {
    log("trackers: the laptop moved (\(move.rawValue))")
    _ = watch.handle(.moved(move), at: now())
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

  /// A watch time as wall time: live, the system clock less the time since
  /// (CLOCK_BOOTTIME counts the sleep the wall clock also saw); in a replay
  /// the capture's (the watch's clock is the capture's then).
  public func wall(_ t: MonotonicTime) -> WallTime {
    guard live else { return WallTime(micros: Int64(t.nanos / 1000)) }
    let ago = Int64(min(t.nanos(until: now()), UInt64(Int64.max)) / 1000)
    return Clock.wallNow() - .microseconds(ago)
  }

  /// A tracker's evidence in wall time (nil: every tracker kept's).
  public func evidence(of number: TrackerNumber?) -> [TrackerEvidence] {
    let w = caughtUp()
    return w.rows.filter { number == nil || $0.number == number }.map {
      TrackerEvidence($0, evidence: w.evidence(of: $0.number), wall: wall)
    }
  }

  /// The trackers following now, as MQTT shows them (oldest alert first).
  public var followingShown: [TrackerShown] {
    caughtUp().rows.filter { $0.following != nil }
      .sorted { ($0.following!, $0.number) < ($1.following!, $1.number) }
      .map { TrackerShown($0, firstSeen: wall($0.firstSeen), lastSeen: wall($0.lastSeen)) }
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
