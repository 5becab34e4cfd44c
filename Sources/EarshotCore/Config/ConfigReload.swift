/// What a config reload (SIGHUP) changes, worked out from the running and the
/// new config. Regions, `[ranging]`, `[monitor]` and `[find-phone]`'s volume,
/// headphone volume and timeout take effect at once; every other section is
/// read at start only and its change is reported as needing a restart.
public struct ConfigReload: Sendable, Equatable {
  /// Sections (besides regions) applied to the running agent.
  public static let liveSections: Set<String> = ["ranging", "monitor", "find-phone"]
  /// Keys of a live section that are still read only at start.
  public static let restartKeys: [String: Set<String>] = ["find-phone": ["sound"]]

  /// Regions in the new config only, or whose beacon identity changed
  /// (uuid, major, minor): they start `unknown`.
  public var added: [String] = []
  public var removed: [String] = []
  /// Same name and identity, other settings changed (exit_after, hooks...):
  /// the state is kept.
  public var changed: [String] = []
  public var unchanged: [String] = []
  /// Live sections whose settings differ (applied).
  public var applied: [String] = []
  /// `[section] key` changes that take effect at the next start.
  public var needRestart: [String] = []

  public init(from old: Config, to new: Config) {
    for r in new.regions {
      guard let o = old.regions.first(where: { $0.name == r.name }), o.identity == r.identity
      else {
        added.append(r.name)
        continue
      }
      if Self.sameSettings(o, r) { unchanged.append(r.name) } else { changed.append(r.name) }
    }
    for o in old.regions
    where !new.regions.contains(where: { $0.name == o.name && $0.identity == o.identity }) {
      removed.append(o.name)
    }
    // Tags are connected at start: a change waits for a restart.
    let tagsBefore = old.tags.map { t in
      var t = t
      t.line = 0
      return t
    }
    let tagsAfter = new.tags.map { t in
      var t = t
      t.line = 0
      return t
    }
    if tagsBefore != tagsAfter { needRestart.append("[tag] sections") }
    for table in Config.sections {
      let before = table.render(old)
      let after = table.render(new)
      guard before.map(\.0) == after.map(\.0) else { continue }
      var live = false
      for (b, a) in zip(before, after) where b.1 != a.1 {
        if Self.liveSections.contains(table.name)
          && !(Self.restartKeys[table.name]?.contains(b.0) ?? false)
        {
          live = true
        } else {
          needRestart.append("[\(table.name)] \(b.0)")
        }
      }
      if live { applied.append(table.name) }
    }
  }

  /// Nothing the running agent would notice.
  public var isEmpty: Bool {
    added.isEmpty && removed.isEmpty && changed.isEmpty && applied.isEmpty && needRestart.isEmpty
  }

  /// One line for the log: what was applied, what waits for a restart.
  public var summary: String {
    var parts: [String] = []
    func list(_ names: [String]) -> String { names.map { "\"\($0)\"" }.joined(separator: ", ") }
    if !added.isEmpty { parts.append("regions added (start unknown): \(list(added))") }
    if !removed.isEmpty { parts.append("regions removed: \(list(removed))") }
    if !changed.isEmpty { parts.append("regions changed (state kept): \(list(changed))") }
    if !unchanged.isEmpty { parts.append("\(unchanged.count) region(s) unchanged (state kept)") }
    if !applied.isEmpty {
      parts.append("applied: " + applied.map { "[\($0)]" }.joined(separator: ", "))
    }
    if !needRestart.isEmpty {
      parts.append(
        "changed but read only at start (restart the agent to apply): "
          + needRestart.joined(separator: ", "))
    }
    return parts.isEmpty ? "no changes" : parts.joined(separator: "; ")
  }

  static func sameSettings(_ a: RegionConfig, _ b: RegionConfig) -> Bool {
    var a = a
    a.line = b.line  // moving a region in the file changes nothing
    return a == b
  }
}
