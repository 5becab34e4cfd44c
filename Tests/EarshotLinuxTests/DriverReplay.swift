import EarshotCore
import Foundation

@testable import EarshotLinux

/// Replays a capture through a fresh `MonitorDriver` (state file and hooks
/// as `earshot run --input` has them) up to `until` microseconds of
/// capture time, as one run of the agent: start at the first report,
/// advance to the last, finish. `inspect` sees the driver before it goes.
func replayThroughDriver(
  _ capture: [UInt8], config: Config, stateFile: String, until: Int64,
  inspect: (MonitorDriver) -> Void = { _ in }
) throws -> [MonitorEvent] {
  var events: [MonitorEvent] = []
  let driver = try MonitorDriver(
    config: config, emitRange: false, stateFile: StateFile(path: stateFile),
    runHooks: true, output: { events.append($0) }, log: { _ in })
  var replay = CaptureReplay()
  var started = false
  var last: Int64 = 0
  try capture.withUnsafeBytes { bytes in
    try replay.run(bytes) { t, r in
      guard t <= until else { return }
      if !started {
        driver.start(at: DecisionTime(micros: t), scanning: true)
        started = true
      }
      last = t
      driver.report(at: DecisionTime(micros: t), r)
    }
  }
  driver.advance(to: DecisionTime(micros: last))
  driver.finish()
  inspect(driver)
  return events
}
