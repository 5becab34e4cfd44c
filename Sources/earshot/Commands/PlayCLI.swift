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
    wait). Exit status 0 on success, 1 otherwise.

    When an agent ('earshot run') answers on the control socket, the
    request goes to it: it plays (its [media] settings), this command
    prints the completion and exits, and 'earshot pause', 'earshot stop' and
    'earshot play' with no TITLE (resume) act on it. Otherwise, or with
    --library, --player, --device or --timeout, this command plays by itself
    to the end of the file or Ctrl-C.
    """,
  options: [
    MediaCLI.configOption,
    .value("library", "DIR", "Media folder (overrides [media] library)"),
    .value(
      "player", "NAME", "MPRIS player, e.g. org.mpris.MediaPlayer2.vlc (overrides [media] player)"),
    .value("device", "PCM", "ALSA device (overrides [media] device)"),
    .value("timeout", "S", "Seconds to wait for playback to start (overrides [media] timeout)"),
    .flag("list", "Print the matches, best first, with their scores, and play nothing"),
    socketOption,
  ],
  run: runPlay)

func runPlay(_ args: Arguments) throws -> Int32 {
  let title = args.positionals.joined(separator: " ")
  if title.isEmpty {
    if args.has("list") { throw UsageError("--list needs a TITLE to match") }
    return try MediaCLI.control(args, command: .mediaResume)
  }
  let local = MediaConfig.keys.contains { args.value($0.name) != nil }
  if !local, !args.has("list"), let agent = runningAgent(args) {
    Console.lineBuffered = true
    let response: JSONValue
    do {
      response = try resultFields(agent.call(.mediaPlay(title: title)))
    } catch let e as ControlClient.Failure {
      throw CommandFailure(e.description)
    }
    Console.line(response.encoded)
    return response["result"]?.string == MediaResponse.success.name ? 0 : 1
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

  try loop.handleSignals([SIGINT, SIGTERM]) { _ in
    driver.stop()
    loop.stop()
  }

  driver.request(title: title)
  if !completed || (result == .success && settings.player == nil && driver.phase != .idle) {
    try loop.run()
  }
  driver.stop()
  return result == .success ? 0 : 1
}
