extension RoomRule {
  /// How far one link's window mean strays from its settled level when
  /// nothing moves, learnt from the link itself: the square of each mean's
  /// distance from the settled level, averaged over the last `memory`
  /// seconds of sightings. Fast fading, which the window averages out,
  /// gives a small spread; fades that outlast the window give their whole
  /// depth. That is the variance the move test needs: a window mean against
  /// the level before it.
  ///
  /// A beacon's moves must not teach it (a spread widened by a move that
  /// was missed would hide the next one): a distance beyond `clip` standard
  /// deviations, or `clip` times `floor` dB, is skipped, and nothing is
  /// learnt while a room change is unconfirmed. That holds from the first
  /// sighting (measured against the prior until the link is learnt): the
  /// walk that brings a new beacon in happens before its first placement,
  /// and learnt as spread it hid the room it came to for a minute.
  struct Spread: Sendable {
    /// Seconds of sightings averaged over (about ten minutes).
    static let memory: Float = 600
    /// Seconds of sightings needed before the learnt value counts alone.
    static let learnt: Float = 30
    /// Until then this (dB²) counts for the seconds still missing: a link
    /// is thought to stray 3 dB, so that a room 15 dB ahead wins in a
    /// beacon's first minute (3.5 standard errors of two links), as it does
    /// in real houses; 5 dB (a lead of 25 dB) kept beacons in the room of
    /// their first seconds for a minute (issue 41, SPHERE sequence 1).
    static let prior: Float = 9
    /// A distance beyond this many standard deviations is a move: skipped.
    static let clip: Float = 2.5
    /// …but never one under `clip` times this (dB): a spread learnt in a
    /// calm spell must not lock out the fades that follow it.
    static let floor: Float = 4

    var variance: Float = 0
    /// Seconds learnt from (at most `memory`).
    var seconds: Float = 0

    /// A mean's distance (dB) from the link's settled level, `dt` seconds
    /// after the previous one (a second at most: a silence teaches nothing).
    mutating func learn(_ distance: Float, dt: Float) {
      let limit = Self.clip * max(Float(value).squareRoot(), Self.floor)
      if abs(distance) > limit { return }
      let w = max(min(dt, 1), 0.01)
      seconds = min(seconds + w, Self.memory)
      variance += (distance * distance - variance) * w / seconds
    }

    /// The variance to use (dB²): the learnt one, blended with the prior
    /// until `learnt` seconds are in (a first stray alone is no spread).
    var value: Double {
      guard seconds < Self.learnt else { return Double(variance) }
      return Double((seconds * variance + (Self.learnt - seconds) * Self.prior) / Self.learnt)
    }
  }

  /// One link's settled level (dB of path loss, 10 n log10 d): the mean of
  /// its window means since the beacon last moved, over `RoomRule.settledTime`
  /// at most. A move test measures leads against it, and a beacon placed in
  /// the wrong room by a fade is taken back by it. While a room change is
  /// unconfirmed it waits: the means since the change are kept apart, and
  /// either replace it (a move) or join it (a fade).
  struct SettledLevel: Sendable {
    var level: Float = 0
    /// When the mean began (`.min`: no level yet).
    var since: Int64 = .min
    var at: Int64 = .min
    /// Window means since the unconfirmed room change: their sum and count.
    var pendingSum: Float = 0
    var pendingCount: Int32 = 0

    /// The level, once there is one.
    var value: Double? { since == .min ? nil : Double(level) }

    /// Seconds the level has averaged over (0: none yet).
    func age(at t: Int64) -> Double {
      since == .min ? 0 : min(Double(t - since), Double(RoomRule.settledTime)) / 1e6
    }

    /// The mean of the window means since the unconfirmed change.
    var pendingMean: Float? { pendingCount > 0 ? pendingSum / Float(pendingCount) : nil }

    /// A window mean at `t`.
    mutating func add(_ mean: Float, at t: Int64, pending: Bool) {
      if pending {
        pendingSum += mean
        pendingCount += 1
      } else if since == .min {
        level = mean
        since = t
        at = t
      } else {
        let dt = Float(t - at) / 1e6
        level += min(1, dt / Float(max(age(at: t), 1))) * (mean - level)
        at = t
      }
    }

    /// The change was a move: the level starts again from the means since
    /// it (or from the next mean, with none).
    mutating func restart(since change: Int64, at t: Int64) {
      if let m = pendingMean {
        level = m
        since = change
        at = t
      } else {
        since = .min
      }
      pendingSum = 0
      pendingCount = 0
    }

    /// The change was a fade: the means since it join the level, weighed
    /// by the seconds they cover.
    mutating func join(since change: Int64, at t: Int64) {
      defer {
        pendingSum = 0
        pendingCount = 0
      }
      guard let m = pendingMean else { return }
      if since == .min {
        level = m
        since = change
      } else {
        let covered = Double(t - change) / 1e6
        level += Float(covered / (age(at: change) + covered)) * (m - level)
      }
      at = t
    }
  }
}
