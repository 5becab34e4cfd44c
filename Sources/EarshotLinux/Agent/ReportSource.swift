import EarshotCore

/// Where the agent's advertising reports come from. The agent builds its
/// monitor the same way whatever the source; only the source knows whether
/// time is the machine's (the live scanner) or a capture's (a replay).
public protocol ReportSource {
  /// Capture time: no state file, and the proximity log written at the
  /// end of the capture (no timer flushes, no retention against today).
  var capturesTime: Bool { get }
  /// Starts feeding `agent`'s monitor, once every part is in place.
  /// A failure the user can act on is an `AgentError`.
  func start(_ monitor: AgentMonitor, of agent: Agent) throws
}

/// The live scanner from `[scanner]`: a missing or powered-off adapter is
/// waited for, hooks are reaped on SIGCHLD, the bonded devices' keys are
/// followed where a region or `[rooms] track` names a device, and logind's
/// sleeps are followed where the system bus is.
public struct LiveReports: ReportSource {
  public init() {}
  public var capturesTime: Bool { false }

  public func start(_ monitor: AgentMonitor, of agent: Agent) throws {
    let config = agent.config
    if config.regions.contains(where: { !$0.devices.isEmpty })
      || config.rooms.trackDevices.contains(where: { $0.address != nil })
    {
      try agent.daemon.follow(bondedKeys: BondedKeysSource.forAgent())
    }
    do {
      try monitor.startLive(
        options: LiveScanOptions(config: config.scanner),
        schedule: ScanScheduleSettings(policy: config.scanner.duty), waitForAdapter: true,
        reapOnSignal: true)
    } catch let e as ScanError {
      throw AgentError(e.description)
    }
    // Silent without a system bus: the clock watch notices every sleep at the resume anyway.
    if let bus = try? DBusConnection(loop: monitor.loop, address: agent.surroundings.systemBus) {
      try? monitor.followSleep(on: bus)
    }
  }
}

/// A capture (btsnoop, pcap, pcapng) replayed through the monitor in
/// capture time: as fast as it reads before the agent serves, or at `pace`
/// times capture time on the loop while it serves (its first record at
/// `startAt`, wall clock; default now). The agent then keeps serving
/// with the states the replay ended in.
public struct CaptureReports: ReportSource {
  public var path: String
  public var pace: Double?
  public var startAt: WallTime?

  public init(path: String, pace: Double? = nil, startAt: WallTime? = nil) {
    self.path = path
    self.pace = pace
    self.startAt = startAt
  }

  public var capturesTime: Bool { true }

  public func start(_ monitor: AgentMonitor, of agent: Agent) throws {
    let daemon = agent.daemon
    let path = self.path
    if let pace {
      do {
        try monitor.replay(path: path, pace: pace, startAt: startAt) { error in
          monitor.proximityLog?.close()
          daemon.log(error.map { "replay stopped: \($0)" } ?? "replayed \(path)")
        }
      } catch let e as ReplayError {
        throw AgentError(e.description)
      }
      return
    }
    do { try monitor.replay(path: path) } catch let e as ReplayError {
      throw AgentError(e.description)
    }
    monitor.proximityLog?.close()
    daemon.log("replayed \(path)")
  }
}
