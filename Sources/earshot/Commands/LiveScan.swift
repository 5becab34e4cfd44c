import EarshotCore
import EarshotLinux

/// Live scanning over a raw HCI socket.
func runLiveScan(_ args: Arguments, printer: inout ReportPrinter, sink: FileSink?) throws -> Int32 {
  throw CommandFailure("live scanning is not built yet; use --input FILE to replay a capture")
}
