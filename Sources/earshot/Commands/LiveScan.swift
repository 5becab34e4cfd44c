import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

/// Live scanning over a raw HCI socket: reports go to the printer (one
/// line each, flushed at once) and, with --write, every HCI packet seen or
/// sent to the btsnoop file. Stops on SIGINT/SIGTERM or after --duration,
/// restoring the adapter.
func runLiveScan(_ args: Arguments, printer: inout ReportPrinter, sink: FileSink?) throws -> Int32 {
  var options = LiveScanOptions()
  options.adapter = args.value("adapter")
  // Passive unless asked: scan requests cost the air time of every
  // scannable advertiser nearby (and of Wi-Fi on a shared radio).
  if args.has("active") && args.has("passive") {
    throw UsageError("--active and --passive: choose one")
  }
  options.scanType = args.has("active") ? .active : .passive
  options.commandSet = args.has("legacy") ? .legacy : args.has("extended") ? .extended : nil
  options.bringUp = args.has("bring-up")
  let duration = try args.double("duration")
  if let duration, duration <= 0 { throw UsageError("--duration expects a positive number") }

  Console.lineBuffered = true
  let loop = try EventLoop()
  var live = printer
  var writeError: (any Error)?
  let scanner = LiveScanner(
    loop: loop, options: options,
    onReport: { micros, report in live.print(micros, report) },
    onAdapterState: { state in Console.error("earshot scan: \(state.message)\n") })
  if let sink {
    scanner.onPacket = { micros, packet in
      do {
        try sink.write(BtsnoopWriter.record(h4: packet, micros: micros))
      } catch {
        writeError = error
        loop.stop()
      }
    }
  }
  func finish() {
    scanner.stop()
    loop.stop()
  }
  try loop.handleSignals([SIGINT, SIGTERM]) { _ in finish() }
  if let duration { loop.after(seconds: duration) { finish() } }
  do {
    try scanner.start()
  } catch let e as ScanError {
    throw CommandFailure(e.description)
  }
  try loop.run()
  scanner.stop()
  printer = live
  if let writeError { throw CommandFailure("\(writeError)") }
  try sink?.flush()
  return 0
}
