import EarshotCore
import EarshotLinux

/// Live monitoring: the one place the live HCI scanner plugs in. It must
/// open the adapter named by `config.scanner`, call `driver.start(at:
/// scanning:)`, then from its event loop feed `driver.report(at:_:)` for
/// each advertising report, `driver.adapterUp/adapterDown(at:)` as the
/// adapter comes and goes, arm timers for `driver.nextDeadline` (wall-clock
/// microseconds) and `driver.hooks?.nextDeadline` (monotonic nanoseconds),
/// call `driver.advance(to:)` when the first fires and `driver.hooks?.reap()`
/// on SIGCHLD or the second. Times are `Clock.realtimeMicros()`. With
/// `EventLoop`: `watch` the HCI socket, `at` for the deadlines,
/// `handleSignals([SIGCHLD])` for the hooks.
func runLiveMonitor(config: Config, driver: MonitorDriver) throws -> Int32 {
  throw CommandFailure(
    "live monitoring needs the live scanner, which is not built yet; use --input FILE to replay a capture"
  )
}
