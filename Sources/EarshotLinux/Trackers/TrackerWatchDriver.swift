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

  public init(
    config: TrackersConfig, now: @escaping () -> MonotonicTime, log: @escaping (String) -> Void
  ) {
    watch = TrackerWatch(settings: TrackerWatch.Settings(config: config))
    self.now = now
    self.log = log
  }

  /// Takes the monitor's reports and its wakes (a move: the place is
  /// unknown until heard again); `live` picks the clock.
  public func attach(to monitor: AgentMonitor, live: Bool) {
    self.live = live
    monitor.observeWake { [unowned self] in _ = watch.handle(.moved(.resumed), at: now()) }
    monitor.observeReports { [unowned self, unowned monitor] report in
      let t = live ? now() : MonotonicTime(nanos: UInt64(max(0, monitor.now.micros)) &* 1000)
      for case .following(let row) in watch.handle(TrackerWatch.event(for: report), at: t) {
        log(
          "tracker following: \(row.number) \(row.frame), \(row.places) places, \(row.sightings) sightings"
        )
        onFollowing?(row)
      }
    }
  }

  /// The user's trust or clear, now; false when the watch keeps no such tracker.
  public func handle(_ event: TrackerWatch.Event) -> Bool {
    let t = live ? now() : watch.latest
    return !watch.handle(event, at: t).contains {
      if case .unknownNumber = $0 { true } else { false }
    }
  }

  /// `status`'s `trackers` section: one object per tracker kept.
  public var statusJSON: JSONValue {
    let t = watch.latest
    return .array(watch.rows.map { ControlProtocol.json($0, now: t) })
  }
}
