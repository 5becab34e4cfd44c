import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

/// Live monitoring: the live scanner feeds the monitor on one event loop
/// (AgentMonitor does the glue, the same as in `earshot run`). Adapter
/// changes go to stderr; a lost adapter makes the regions unknown and is
/// waited for. SIGINT/SIGTERM stop it: the scan is restored, the region
/// states saved and the log written.
func runLiveMonitor(config: Config, agent: AgentMonitor) throws -> Int32 {
  let loop = agent.loop
  try loop.handleSignals([SIGINT, SIGTERM]) { _ in loop.stop() }
  agent.onAdapterState = { Console.error("earshot monitor: \($0.message)\n") }
  agent.proximityLog?.attach(to: loop)
  do {
    try agent.startLive(
      options: LiveScanOptions(config: config.scanner),
      schedule: ScanScheduleSettings(policy: config.scanner.duty), waitForAdapter: false,
      reapOnSignal: true)
  } catch let e as ScanError {
    throw CommandFailure(e.description)
  }
  followSleep(agent)
  try loop.run()
  agent.stop()
  if let log = agent.proximityLog {
    log.detach(from: loop)
    log.close()
  }
  return 0
}

/// logind's PrepareForSleep, where the system bus is (silent otherwise: the
/// clock watch notices every sleep at the resume anyway).
func followSleep(_ agent: AgentMonitor) {
  guard let bus = try? DBusConnection(loop: agent.loop) else { return }
  try? agent.followSleep(on: bus)
}
