import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

let playCommand = Command(
  name: "play",
  summary: "Play a title from the media library (or resume what 'earshot pause' paused)",
  arguments: "[TITLE ...]",
  details: """
    Finds TITLE in [media] library (tags where libsndfile reads them, else
    file names; case and accents ignored; best match first) and plays it
    through ALSA ([media] device), or forwards it to the MPRIS player
    [media] player. Prints one completion line when playback has really
    started (the first audio written) or failed:
      {"request":1,"result":"success","code":0,"title":"Hey Jude","artist":"The Beatles","path":"/home/me/Music/hey-jude.flac"}
    result is one of success, notFound, unsupportedMediaType,
    playerNotRunning, busy, timeout, failure ([media] timeout bounds the
    wait). Through ALSA it keeps playing to the end of the file; Ctrl-C,
    'earshot stop' and 'earshot pause' act on it. With no TITLE, resumes a
    paused 'earshot play'. Exit status 0 on success, 1 otherwise.
    """,
  options: [
    MediaCLI.configOption,
    .value("library", "DIR", "Media folder (overrides [media] library)"),
    .value(
      "player", "NAME", "MPRIS player, e.g. org.mpris.MediaPlayer2.vlc (overrides [media] player)"),
    .value("device", "PCM", "ALSA device (overrides [media] device)"),
    .value("timeout", "S", "Seconds to wait for playback to start (overrides [media] timeout)"),
    .flag("list", "Print the matches, best first, with their scores, and play nothing"),
  ],
  run: runPlay)

func runPlay(_ args: Arguments) throws -> Int32 {
  let title = args.positionals.joined(separator: " ")
  if title.isEmpty {
    if args.has("list") { throw UsageError("--list needs a TITLE to match") }
    return try MediaCLI.control(args, signal: SIGUSR2, mprisMethod: "Play")
  }
  let settings = try MediaCLI.settings(args)
  let scan = MediaScanner.scan(settings.library)
  for p in scan.problems { Console.error("earshot play: \(p)\n") }

  if args.has("list") {
    for m in scan.library.search(title) {
      var line = JSONLine()
      line.add("score", m.score)
      line.add("match", "\(m.tier)")
      line.add("title", m.item.title)
      if let a = m.item.artist { line.add("artist", a) }
      line.add("path", m.item.path)
      line.add("decodable", m.item.decodable)
      Console.line(line.line)
    }
    return 0
  }

  let loop = try EventLoop()
  let driver = MediaDriver(settings: settings, library: scan.library, loop: loop)
  Console.lineBuffered = true
  var result: MediaResponse = .failure
  var completed = false
  driver.onLog = { Console.error("earshot play: \($0)\n") }
  driver.onCompletion = { id, response, item in
    completed = true
    result = response
    var line = JSONLine()
    line.add("request", Int(id.value))
    line.add("result", response.name)
    line.add("code", response.rawValue)
    if let item {
      line.add("title", item.title)
      if let a = item.artist { line.add("artist", a) }
      line.add("path", item.path)
    }
    Console.line(line.line)
    // MPRIS plays on without us; through ALSA we play to the end.
    if response != .success || settings.player != nil { loop.stop() }
  }
  driver.onIdle = { if completed { loop.stop() } }

  let pidFile = MediaCLI.pidFile
  try loop.handleSignals([SIGINT, SIGTERM, SIGUSR1, SIGUSR2]) { signal in
    switch signal {
    case SIGUSR1: driver.pause()
    case SIGUSR2: driver.resume()
    default:
      driver.stop()
      loop.stop()
    }
  }
  let wrotePid = settings.player == nil && writePidFile(pidFile)
  defer { if wrotePid { unlink(pidFile) } }

  driver.request(title: title)
  if !completed || (result == .success && settings.player == nil && driver.phase != .idle) {
    try loop.run()
  }
  driver.stop()
  return result == .success ? 0 : 1
}

private func writePidFile(_ path: String) -> Bool {
  guard let sink = try? FileSink(creating: path) else { return false }
  try? sink.write(Array("\(getpid())\n".utf8))
  try? sink.flush()
  return true
}
