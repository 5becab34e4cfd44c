import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// SIGHUP for `earshot run`: reads the config file again. A file with
/// errors changes nothing (the log lists each problem with its file, line
/// and key); a good one is applied as far as the running agent can take it
/// (`ConfigReload` says what that is) and the log says what changed and
/// what waits for a restart.
public final class ConfigReloader {
  public let path: String
  /// The config the agent runs with now.
  public private(set) var config: Config
  private let daemon: Daemon
  private let paths: ConfigPaths

  public init(path: String, config: Config, daemon: Daemon, paths: ConfigPaths) {
    self.path = path
    self.config = config
    self.daemon = daemon
    self.paths = paths
  }

  /// Takes SIGHUP through the daemon's loop.
  public func attach() throws {
    try daemon.loop.handleSignals([SIGHUP]) { [unowned self] _ in self.reload() }
  }

  /// Reloads now. Returns what was applied, or nil when the file was
  /// refused and the running config kept.
  @discardableResult
  public func reload() -> ConfigReload? {
    let new: Config
    do {
      new = try Config.load(path: path, paths: paths)
    } catch let e as ConfigErrors {
      daemon.log(
        "reload: \(path) has \(e.errors.count) problem(s); keeping the running config:\n"
          + e.errors.map { "  \($0)" }.joined(separator: "\n"))
      return nil
    } catch {
      daemon.log("reload: cannot read \(path): \(error); keeping the running config")
      return nil
    }
    var effective = new
    var plan = ConfigReload(from: config, to: new)
    if let monitor = daemon.monitor {
      monitor.reconfigure(new)
    } else if !new.regions.isEmpty || !config.regions.isEmpty {
      // Started without regions: no scanner runs, so regions need a restart.
      effective.regions = config.regions
      plan.added = []
      plan.removed = []
      plan.changed = []
      plan.unchanged = []
      plan.needRestart.insert("regions (the agent started without any: no scanner runs)", at: 0)
    }
    daemon.find.settings = new.findPhone
    config = effective
    daemon.dispatch(.reloaded(regions: effective.regions))
    daemon.log("reload: \(path): \(plan.summary)")
    return plan
  }
}
