import EarshotCore
import EarshotLinux

let scanCommand = Command(
  name: "scan",
  summary: "Scan for LE advertising reports (live or from a capture) and print beacons",
  details: """
    Live: opens the adapter with a raw HCI socket, enables LE scanning and prints
    one JSON line per beacon report (iBeacon, AltBeacon, Eddystone-UID). With
    --input, replays a btsnoop, pcap or pcapng capture instead (timestamps come
    from the capture). --write records
    what is seen as btsnoop (datalink 1002) that btmon -r and Wireshark read;
    --input X --write Y converts. --all prints every beacon frame by the layout
    table: the built-in formats, then the config's [layout "NAME"] sections.
    """,
  options: [
    .value("adapter", "hciN", "Adapter to scan with (default: the first LE-capable one)"),
    .value("input", "FILE", "Replay a capture instead of scanning live (- for standard input)"),
    .value("write", "FILE", "Record the HCI events seen as btsnoop"),
    .flag("all", "Print every report with its AD structures, and malformed events"),
    .value("format", "json|text", "Output format (default json)"),
    .value(
      "config", "FILE",
      "Config file whose [layout \"NAME\"] sections --all decodes too (default: the user's or /etc/earshot/earshot.conf if present)"
    ),
    .flag("active", "Active scanning: send scan requests, print scan responses too"),
    .flag("passive", "Passive scanning, no scan requests sent (the default)"),
    .flag("legacy", "Force legacy scan commands"),
    .flag("extended", "Force extended scan commands"),
    .flag("bring-up", "Power the adapter on if it is down"),
    .value("duration", "SECONDS", "Stop a live scan after this long"),
  ],
  run: runScan)

/// Where reports go: prints them in the chosen format, merging scan
/// responses with their advertisements for `--all`.
struct ReportPrinter {
  let all: Bool
  let text: Bool
  /// The layout table `--all` prints frames by (the config's layouts too).
  let classifier: BeaconClassifier
  var merger = ScanResponseMerger()
  var printed = 0

  init(all: Bool, text: Bool, classifier: BeaconClassifier = .standard) {
    self.all = all
    self.text = text
    self.classifier = classifier
    if text { Console.line(ReportFormatter.textHeader) }
  }

  mutating func print(_ micros: Int64, _ report: AdvertisingReport) {
    let beacon = TrackedBeacon.decode(advertisingData: report.data)
    if text {
      if all || beacon != nil {
        Console.line(ReportFormatter.text(micros: micros, report: report, beacon: beacon))
      }
    } else if all {
      var line = ""
      if report.pdu.isScanResponse {
        merger.observe(report) { merged in
          line = ReportFormatter.reportJSON(
            micros: micros, report: report, beacon: beacon, merged: merged,
            classifier: classifier)
        }
      } else {
        merger.observe(report) { _ in }
        line = ReportFormatter.reportJSON(
          micros: micros, report: report, beacon: beacon, merged: nil,
          classifier: classifier)
      }
      Console.line(line)
    } else if let beacon {
      Console.line(ReportFormatter.iBeaconJSON(micros: micros, report: report, beacon: beacon))
    } else {
      return
    }
    printed += 1
  }

  func reject(_ micros: Int64, _ bytes: UnsafeRawBufferPointer, _ reason: String) {
    if all && !text {
      Console.line(ReportFormatter.rejectJSON(micros: micros, bytes: bytes, reason: reason))
    }
  }
}

func outputIsText(_ args: Arguments) throws -> Bool {
  switch args.value("format") ?? "json" {
  case "json": return false
  case "text": return true
  case let other: throw UsageError("--format must be json or text, not '\(other)'")
  }
}

func runScan(_ args: Arguments) throws -> Int32 {
  guard args.positionals.isEmpty else {
    throw UsageError("unexpected argument '\(args.positionals[0])'")
  }
  if args.has("legacy") && args.has("extended") {
    throw UsageError("--legacy and --extended exclude each other")
  }
  // Only --all prints frames by the layout table: a plain scan reads no config
  // unless one is named (then it is checked like any other).
  let classifier =
    args.has("all") || args.value("config") != nil
    ? try loadConfigOrDefaults(args).beaconClassifier : .standard
  var printer = ReportPrinter(
    all: args.has("all"), text: try outputIsText(args), classifier: classifier)
  let sink = try args.value("write").map { path throws in
    let sink = try FileSink(creating: path)
    try sink.write(BtsnoopWriter.header)
    return sink
  }

  guard let input = args.value("input") else {
    return try runLiveScan(args, printer: &printer, sink: sink)
  }
  // Streamed through one fixed buffer: any size, pipes and devices too;
  // the header is checked before anything else is read.
  let file = try FileStream(path: input)
  var replay = CaptureReplay()
  var writeError: (any Error)? = nil
  var failure: (any Error)? = nil
  do {
    var reader = try CaptureReader(source: file.read(into:))
    try replay.run(
      &reader,
      report: { printer.print($0, $1) },
      reject: { printer.reject($0, $1, $2) },
      event: sink.map { sink in
        { t, event in
          do { try sink.write(BtsnoopWriter.record(event: event, micros: t)) } catch {
            writeError = error
          }
        }
      })
  } catch {
    failure = error
  }
  if let writeError { throw CommandFailure("\(writeError)") }
  try sink?.flush()
  Console.flush()
  let s = replay.decoder.stats
  let malformed = s.malformedEvents + s.malformedReports + replay.malformedLinkLayer
  if malformed > 0 || replay.truncated {
    Console.error(
      "earshot scan: \(input): \(malformed) malformed event(s) or report(s) skipped"
        + (replay.truncated ? "; the capture ends in a truncated record" : "") + "\n")
  }
  if replay.crcFailures > 0 {
    Console.error(
      "earshot scan: \(input): \(replay.crcFailures) sniffed packet(s) failed their CRC-24 "
        + "and were skipped\n")
  }
  for (why, n) in replay.skippedLinkLayer.sorted(by: { $0.key.description < $1.key.description }) {
    Console.error("earshot scan: \(input): \(n) link-layer PDU(s) skipped: \(why)\n")
  }
  // What came before a fault is out; the fault still fails the command.
  if let failure { throw CommandFailure("\(input): \(failure)") }
  return 0
}
