/// Bad input from the network, logged bounded: what a peer can make the
/// agent write is a few lines a minute, however fast it sends. Pure: each
/// occurrence comes in with its monotonic time, the lines to write come
/// out, and `nextDeadline` says when a summary falls due (the shell arms a
/// timer for it and calls `advance`).
///
/// Per source (a peer's address, a topic, a uid) and kind (refused, bad
/// frame, ...):
/// - the first occurrence is logged as it is (its own line, which says
///   what was wrong);
/// - the next ones within `interval` seconds are counted, and when the
///   window ends one line says how many: "refused 491 more connections
///   from 127.0.0.1 in the last 60 s";
/// - while they go on, one such summary per `interval`; after a quiet
///   window the source is forgotten, and its next occurrence is logged
///   whole again.
///
/// Guarantees:
/// - Memory is bounded whatever the number of sources: at most
///   `maxSources` source-and-kind pairs are tracked one by one; occurrences
///   from further sources are counted together per kind, as "other
///   sources" (their first line is still logged once per window).
/// - Lines per window: at most two per tracked pair (its first line and
///   its summary), and two per kind for the other sources.
/// - Nothing is lost: every occurrence is in a line or in a count, and
///   `finish` says the counts not yet said (at shutdown).
/// - Windows are on the monotonic clock: no step of the wall clock opens
///   or closes one.
public struct LogLimiter: Sendable {
  /// What went wrong, and how its summary reads. Kinds are told apart by
  /// `name` alone.
  public struct Kind: Sendable {
    public let name: String
    /// The summary of `count` more from `source` over `window` ("in the
    /// last 60 s"): "refused 491 more connections from 127.0.0.1 in the last 60 s".
    public let summary: @Sendable (_ count: Int, _ source: String, _ window: String) -> String

    public init(
      _ name: String,
      summary: @escaping @Sendable (_ count: Int, _ source: String, _ window: String) -> String
    ) {
      self.name = name
      self.summary = summary
    }
  }

  private struct Key: Hashable {
    /// nil: the sources past `maxSources`, counted together.
    var source: String?
    var kind: String
  }

  private struct Window {
    var kind: Kind
    var start: MonotonicTime
    /// Occurrences counted and not yet said.
    var counted: Int
    /// Order of arrival, so summaries due together come out in a fixed order.
    var order: Int
  }

  /// The source named in the summary of sources past `maxSources`.
  public static let otherSources = "other sources"

  public let interval: Double
  public let maxSources: Int
  private var windows: [Key: Window] = [:]
  private var trackedSources = 0
  private var nextOrder = 0
  /// Every occurrence ever noted, per kind (for status and tests).
  public private(set) var totals: [String: Int] = [:]

  public init(interval: Double = 60, maxSources: Int = 64) {
    self.interval = max(interval, 0.001)
    self.maxSources = max(maxSources, 0)
  }

  /// Sources and kinds with an open window (bounded by `maxSources` plus
  /// one per kind).
  public var openWindows: Int { windows.count }

  /// When the earliest open window ends; nil when none is open.
  public var nextDeadline: MonotonicTime? {
    windows.values.map { $0.start.adding(seconds: interval) }.min()
  }

  /// One occurrence of `kind` from `source` at `now`. Returns the lines to
  /// log now: summaries of windows that ended by `now`, then `line()` if
  /// this is the first occurrence in its window (it is not built otherwise).
  public mutating func note(
    _ kind: Kind, from source: String, at now: MonotonicTime, line: () -> String
  ) -> [String] {
    var out = advance(to: now)
    totals[kind.name, default: 0] += 1
    var key = Key(source: source, kind: kind.name)
    if windows[key] == nil, trackedSources >= maxSources {
      key.source = nil
    }
    if windows[key] != nil {
      windows[key]!.counted += 1
      return out
    }
    if key.source != nil { trackedSources += 1 }
    windows[key] = Window(kind: kind, start: now, counted: 0, order: nextOrder)
    nextOrder += 1
    out.append(line())
    return out
  }

  /// Time passes: the summaries of the windows that ended by `now`, in the
  /// order their sources first came. A window that counted something opens
  /// the next one (the flood may go on); a quiet one is closed.
  public mutating func advance(to now: MonotonicTime) -> [String] {
    let due = windows.filter { $0.value.start.adding(seconds: interval) <= now }
      .sorted { $0.value.order < $1.value.order }
    var out: [String] = []
    for (key, window) in due {
      if window.counted > 0 {
        out.append(summary(key, window, until: now))
        windows[key]!.start = now
        windows[key]!.counted = 0
      } else {
        close(key)
      }
    }
    return out
  }

  /// The counts not yet said, at `now` (the agent stops); every window closes.
  public mutating func finish(at now: MonotonicTime) -> [String] {
    let open = windows.sorted { $0.value.order < $1.value.order }
    windows.removeAll()
    trackedSources = 0
    return open.filter { $0.value.counted > 0 }.map { summary($0.key, $0.value, until: now) }
  }

  private mutating func close(_ key: Key) {
    windows[key] = nil
    if key.source != nil { trackedSources -= 1 }
  }

  private func summary(_ key: Key, _ window: Window, until now: MonotonicTime) -> String {
    // Whole seconds, but a tenth under ten ("in the last 0.2 s").
    let span = window.start.seconds(until: now)
    let seconds = span < 10 ? "\((span * 10).rounded() / 10)" : "\(Int(span.rounded()))"
    return window.kind.summary(
      window.counted, key.source ?? Self.otherSources, "in the last \(seconds) s")
  }
}

extension LogLimiter.Kind {
  /// "N thing(s)": the plural for a summary.
  public static func count(_ n: Int, _ singular: String, _ plural: String? = nil) -> String {
    "\(n) \(n == 1 ? singular : plural ?? singular + "s")"
  }
}
