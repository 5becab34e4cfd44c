/// The links of the tags regions name (`tag = …`), by tag name: a
/// connected tag keeps its regions inside; an absent one counts toward
/// their exit.
///
/// Guarantees:
/// - a tag never answered (no connection, no failed attempt yet) holds its
///   regions' exits: an absence is only counted once known;
/// - an absence counts from when the link was lost, or from when watching
///   began for a tag never connected, and never ends before it was known;
/// - a second "absent" for a tag already absent changes nothing.
struct TagLinks: Sendable {
  enum Link: Sendable, Equatable {
    case connected
    /// Down since `lostAt` (nil: not connected since watching began),
    /// known at `answeredAt`.
    case absent(lostAt: Int64?, answeredAt: Int64)
  }

  /// Each named tag's link (absent: no answer yet).
  private var links: [String: Link] = [:]

  mutating func connected(_ name: String) { links[name] = .connected }

  /// The tag's link is down or its connection failed, known at `t`:
  /// `.lost` when it was connected, `.unchanged` when already absent.
  enum Change { case lost, firstAnswer, unchanged }

  mutating func absent(_ name: String, at t: Int64) -> Change {
    switch links[name] {
    case .connected:
      links[name] = .absent(lostAt: t, answeredAt: t)
      return .lost
    case nil:
      links[name] = .absent(lostAt: nil, answeredAt: t)
      return .firstAnswer
    case .absent:
      return .unchanged
    }
  }

  /// Whether any of `names` is connected now.
  func anyConnected(_ names: [String]) -> Bool { names.contains { links[$0] == .connected } }

  /// When all of `names` have been absent for `span` µs, counting from
  /// `watched` for a tag never connected: `nil` while one is connected or
  /// has not answered.
  func allAbsent(_ names: [String], for span: Int64, watched: Int64) -> Int64? {
    var latest: Int64 = .min
    for name in names {
      guard case .absent(let lostAt, let answeredAt) = links[name] else { return nil }
      latest = max(latest, answeredAt, max(lostAt ?? watched, watched) + span)
    }
    return latest
  }
}
