import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

let shutterCommand = Command(
  name: "shutter",
  summary: "Remote shutter: act on enter, capture and exit events as a device would send them",
  arguments: "[enter|capture|exit|NUMBER ...]",
  details: """
    Runs the remote-shutter state machine on the events given (names, or the
    wire numbers enter 1, capture 2, exit 0), in order, and prints one JSON
    line per event: the state synced back to the device
      {"event":"capture","value":2,"state":"photoSuccess","code":2,"photo":"/home/me/Pictures/Earshot/earshot-20260101-093015-042.jpg"}
    or, for an unknown value, an error:
      {"event":-1,"value":-1,"error":"unknown shutter event -1"}
    With no events on the command line, reads them from standard input, one
    per line, keeping the camera open between them (as a device would).

    'enter' opens the V4L2 camera ([shutter] device); 'capture' writes one
    JPEG into [shutter] directory, or runs [shutter] capture_command;
    'exit' releases the camera. A capture outside photo mode answers
    photoFailed and captures nothing. Exit status 1 if an enter could not
    enter photo mode, a capture failed, or an event was unknown.

    When an agent ('earshot run') answers on the control socket, the events
    go to it: its camera ([shutter] of its config) stays in photo mode
    between commands, as it does for devices. Otherwise, or with --device,
    --directory or --resolution, this command drives the camera itself.
    """,
  options: [
    .value(
      "config", "FILE",
      "Config file (default: ~/.config/earshot/earshot.conf, then /etc/earshot/earshot.conf)"),
    .value("device", "DEV", "Camera device (overrides [shutter] device)"),
    .value("directory", "DIR", "Where photos go (overrides [shutter] directory)"),
    .value(
      "resolution", "WxH", "Frame size to ask the camera for (overrides [shutter] resolution)"),
    socketOption,
  ],
  run: runShutter)

func runShutter(_ args: Arguments) throws -> Int32 {
  let local = ["device", "directory", "resolution"].contains { args.value($0) != nil }
  if !local, let agent = runningAgent(args) {
    return try shutterThroughAgent(agent, try shutterEvents(args.positionals))
  }
  var settings = try loadConfigOrDefaults(args).shutter
  if let d = args.value("device") { settings.device = d }
  if let d = args.value("directory") { settings.directory = d }
  if let r = args.value("resolution") {
    guard let (w, h) = ShutterConfig.parseResolution(r) else {
      throw UsageError("--resolution expects WIDTHxHEIGHT like 640x480, got '\(r)'")
    }
    settings.width = w
    settings.height = h
  }

  let events = try shutterEvents(args.positionals)

  let loop = try EventLoop()
  let driver = ShutterDriver(settings: settings, loop: loop)
  Console.lineBuffered = true
  var sent: [Int] = []
  var answered = 0
  var failed = false
  var inputOpen = events.isEmpty
  driver.onLog = { Console.error("earshot shutter: \($0)\n") }
  driver.onReply = { reply in
    let raw = answered < sent.count ? sent[answered] : -1
    answered += 1
    let answer: (line: String, failed: Bool)
    switch reply {
    case .state(let state, let photo): answer = shutterAnswer(raw, state, photo: photo)
    case .error: answer = shutterAnswer(raw, nil)
    }
    Console.line(answer.line)
    if answer.failed { failed = true }
    if !inputOpen && answered == sent.count { loop.stop() }
  }
  try loop.handleSignals([SIGINT, SIGTERM]) { _ in loop.stop() }

  func send(_ raw: Int) {
    sent.append(raw)
    driver.send(raw)
  }

  // stdin is made nonblocking for the loop; its flags are shared with
  // whoever handed it over (a terminal's shell), so they are put back.
  let stdinFlags = fcntl(0, F_GETFL)
  defer { if events.isEmpty { _ = fcntl(0, F_SETFL, stdinFlags) } }
  if inputOpen {
    var pending: [UInt8] = []
    _ = fcntl(0, F_SETFL, stdinFlags | O_NONBLOCK)
    try loop.watch(.standardInput, events: EventLoop.readable) { _ in
      var chunk = [UInt8](repeating: 0, count: 1024)
      let n = chunk.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
      if n < 0 && (errno == EAGAIN || errno == EINTR) { return }
      if n > 0 { pending += chunk[0..<n] }
      while let nl = pending.firstIndex(of: 0x0A) {
        let word = String(decoding: pending[..<nl], as: UTF8.self).trimmingCharacters()
        pending.removeSubrange(...nl)
        guard !word.isEmpty else { continue }
        if let raw = shutterEvent(word) {
          send(raw)
        } else {
          Console.error("earshot shutter: '\(word)' \(notAShutterEvent)\n")
        }
      }
      if n <= 0 {
        loop.unwatch(.standardInput)
        inputOpen = false
        if answered == sent.count { loop.stop() }
      }
    }
  } else {
    for e in events { send(e) }
  }
  if inputOpen || answered < sent.count { try loop.run() }
  return failed ? 1 : 0
}

/// A word naming a shutter event: enter, capture, exit, or a number (an
/// unknown one is answered with an error, as a device would be).
private func shutterEvent(_ word: String) -> Int? {
  ShutterCommand(text: word)?.rawValue ?? Int(word)
}

private let notAShutterEvent = "is not a shutter event (enter, capture, exit or a number)"

private func shutterEvents(_ words: [String]) throws -> [Int] {
  try words.map { word in
    guard let raw = shutterEvent(word) else { throw UsageError("'\(word)' \(notAShutterEvent)") }
    return raw
  }
}

/// The events through the agent's shutter: one `shutter` request each,
/// printed as the standalone mode prints them. With no events, reads them
/// from standard input.
private func shutterThroughAgent(_ agent: ControlClient, _ events: [Int]) throws -> Int32 {
  Console.lineBuffered = true
  var failed = false
  func send(_ raw: Int) throws {
    let r = try agent.call(.shutter(raw))
    let answer: (line: String, failed: Bool)
    if r["ok"] == .bool(true), let code = r["code"]?.integer,
      let state = ShutterState(rawValue: Int(code))
    {
      answer = shutterAnswer(raw, state, photo: r["photo"]?.string)
    } else if r["error"]?["code"]?.string == "unknown_event" {
      answer = shutterAnswer(raw, nil)
    } else {
      _ = try resultFields(r)  // throws the agent's message
      return
    }
    Console.line(answer.line)
    if answer.failed { failed = true }
  }
  do {
    if events.isEmpty {
      while let text = readLine() {
        let word = text.trimmingCharacters()
        guard !word.isEmpty else { continue }
        if let raw = shutterEvent(word) {
          try send(raw)
        } else {
          Console.error("earshot shutter: '\(word)' \(notAShutterEvent)\n")
        }
      }
    } else {
      for e in events { try send(e) }
    }
  } catch let e as ControlClient.Failure {
    throw CommandFailure(e.description)
  }
  return failed ? 1 : 0
}

/// One answer as both modes print it: the event, then the state the
/// camera reached (nil: the event is unknown); and whether it counts as a
/// failure (a failed photo, a refused enter, an unknown event).
private func shutterAnswer(_ raw: Int, _ state: ShutterState?, photo: String? = nil)
  -> (line: String, failed: Bool)
{
  var line = JSONLine()
  if let c = ShutterCommand(rawValue: raw) {
    line.add("event", c.name)
  } else {
    line.add("event", raw)
  }
  line.add("value", raw)
  guard let state else {
    line.add("error", "unknown shutter event \(raw)")
    return (line.line, true)
  }
  line.add("state", state.name)
  line.add("code", state.rawValue)
  if let photo { line.add("photo", photo) }
  let failed =
    state == .photoFailed
    || (state == .exitedOrUnableToEnter && raw == ShutterCommand.enter.rawValue)
  return (line.line, failed)
}

extension String {
  func trimmingCharacters() -> String {
    let s = unicodeScalars
    guard let a = s.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
    let b = s.lastIndex(where: { !$0.properties.isWhitespace })!
    return String(s[a...b])
  }
}
