import EarshotCore
import EarshotLinux

let monitorCommand = Command(
  name: "monitor",
  summary: "Monitor beacon regions: print enter, exit, state and range events",
  details: """
    Prints one JSON line per event:
      {"t":1767225630.10,"event":"enter","region":"desk","state":"inside"}
    event is state (a region's state became known, or unknown), enter, exit,
    or range (once per [ranging] interval per region with beacons inside,
    nearest first). Runs the regions' on_enter/on_exit hooks.

    With --input, replays a capture: time is the capture's, timers fire as
    capture time passes, timers due by the last timestamp fire at the end,
    then it exits (no waiting). Without --input it scans live.
    """,
  options: [
    .value("config", "FILE", "Config file (default /etc/earshot/earshot.conf)"),
    .value("input", "FILE", "Replay a capture (btsnoop, pcap, pcapng) instead of scanning"),
    .flag("no-range", "Leave out range lines"),
    .value("state", "FILE", "State file (default: [state] path live; none when replaying)"),
    .flag("no-hooks", "Do not run on_enter/on_exit hooks"),
  ],
  run: runMonitor)

func runMonitor(_ args: Arguments) throws -> Int32 {
  guard args.positionals.isEmpty else {
    throw UsageError("unexpected argument '\(args.positionals[0])'")
  }
  let (config, path) = try loadConfig(args)
  guard !config.regions.isEmpty else {
    throw CommandFailure("\(path) defines no [region \"NAME\"]; there is nothing to monitor")
  }
  let input = args.value("input")
  let statePath = args.value("state") ?? (input == nil ? config.state.path : nil)
  let driver: MonitorDriver
  do {
    driver = try MonitorDriver(
      config: config, emitRange: !args.has("no-range"),
      stateFile: statePath.map { StateFile(path: $0) }, runHooks: !args.has("no-hooks"),
      output: { Console.line(MonitorEventFormatter.json($0)) },
      log: { Console.error("earshot monitor: \($0)\n") })
  } catch {
    throw CommandFailure("\(error)")
  }
  guard let input else {
    Console.lineBuffered = true
    return try runLiveMonitor(config: config, driver: driver)
  }
  try replayMonitor(input: input, driver: driver)
  return 0
}

/// Drives the monitor with a capture's reports and timestamps.
func replayMonitor(input: String, driver: MonitorDriver) throws {
  let file = try FileBytes(path: input)
  var replay = CaptureReplay()
  var started = false
  var last: Int64 = 0
  do {
    try file.bytes.withUnsafeBytes { bytes in
      try replay.run(
        bytes,
        report: { t, r in
          if !started {
            driver.start(at: t, scanning: true)
            started = true
          }
          last = max(last, t)
          driver.report(at: t, r)
        },
        event: { t, _ in
          if !started {
            driver.start(at: t, scanning: true)
            started = true
          }
          last = max(last, t)
          driver.advance(to: t)
        })
    }
  } catch {
    throw CommandFailure("\(input): \(error)")
  }
  if started { driver.advance(to: last) }
  Console.flush()
  driver.finish()
}
