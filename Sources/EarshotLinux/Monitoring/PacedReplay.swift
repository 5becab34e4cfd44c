import EarshotCore

/// Plays a capture's records on the loop at a pace (`ReplayPace`): each
/// record waits for its moment on a loop timer, so the rest of the agent
/// (the control socket, MQTT) keeps serving meanwhile. When the monitor
/// has a deadline before the next record, the timer wakes for it and
/// advances the monitor to that capture time. Behind schedule, records go
/// out in batches with a turn of the loop between them.
final class PacedReplay {
  let loop: EventLoop
  private var reader: CaptureReader
  private let pace: Double
  private let startAt: WallTime?
  private let handle: (CaptureRecord) -> Void
  private let nextDeadline: () -> DecisionTime?
  private let advance: (DecisionTime) -> Void
  /// Called once with the reader after its last record.
  var onEnd: ((CaptureReader) -> Void)?

  private var schedule: ReplayPace?
  /// The next record, read but not yet due (its bytes stay valid in the
  /// reader's buffer until the reader is asked for another).
  private var pending: CaptureRecord?
  private var timer: EventLoop.TimerID?
  /// The last monitor deadline woken for (never the same one twice).
  private var lastDeadline = DecisionTime(micros: .min)
  /// Records handled in one turn of the loop at most.
  static let batch = 256

  init(
    loop: EventLoop, reader: CaptureReader, pace: Double, startAt: WallTime?,
    handle: @escaping (CaptureRecord) -> Void, nextDeadline: @escaping () -> DecisionTime?,
    advance: @escaping (DecisionTime) -> Void
  ) {
    self.loop = loop
    self.reader = reader
    self.pace = pace
    self.startAt = startAt
    self.handle = handle
    self.nextDeadline = nextDeadline
    self.advance = advance
  }

  func start() {
    timer = loop.after(nanos: 0) { [self] in step() }
  }

  func cancel() {
    if let timer { loop.cancel(timer) }
    timer = nil
  }

  private func step() {
    timer = nil
    for _ in 0..<Self.batch {
      guard let record = pending ?? reader.next() else {
        onEnd?(reader)
        onEnd = nil
        return
      }
      pending = nil
      let at = WallTime(micros: record.timestamp)
      let schedule = self.schedule ?? anchor(at: at)
      let now = Clock.now()
      let due = schedule.due(at)
      if due > now {
        pending = record
        wait(until: due, before: record.timestamp, schedule, now: now)
        return
      }
      handle(record)
    }
    timer = loop.after(nanos: 0) { [self] in step() }
  }

  /// Sleeps until the pending record is due, or sooner for a monitor
  /// deadline that falls before it.
  private func wait(
    until due: MonotonicTime, before t: Int64, _ schedule: ReplayPace, now: MonotonicTime
  ) {
    guard let deadline = nextDeadline(), deadline < DecisionTime(capture: WallTime(micros: t)),
      deadline > lastDeadline
    else {
      timer = loop.at(due) { [self] in step() }
      return
    }
    // A replay decides in capture time: the deadline is a capture time.
    let wake = max(now, schedule.due(MonitorTimeline.capture.shown(deadline)))
    timer = loop.at(wake) { [self] in
      lastDeadline = deadline
      advance(deadline)
      step()
    }
  }

  /// The first record plays at `startAt` (wall clock) or now.
  private func anchor(at t: WallTime) -> ReplayPace {
    let now = Clock.now()
    let origin =
      startAt.map { ReplayPace.monotonic(forWall: $0, wallNow: Clock.wallNow(), monotonicNow: now) }
      ?? now
    let s = ReplayPace(pace: pace, captureOrigin: t, clockOrigin: origin)
    schedule = s
    return s
  }
}
