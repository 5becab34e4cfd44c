import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

/// Serves the BLE device link on its own, with an in-memory volume and a
/// stand-in for find-phone: for trying the link with a device and for the
/// kernel test bed, until `earshot run` carries the link.
let bleLinkServeCommand = Command(
  name: "ble-link-serve",
  summary: "Serve the BLE device link through BlueZ (stand-alone, for trials and tests)",
  details: """
    Registers the link's GATT service with bluetoothd and advertises it, then
    prints one JSON line per request. The volume is kept in memory (starting
    at --volume); find_start "rings" (nothing is played). SIGUSR1 acts as
    the user's "found": find_ended and phone_found go to the device.
    SIGINT or SIGTERM unregisters and exits.
    """,
  options: [
    .value("adapter", "hciN", "BlueZ adapter (default: the first one)"),
    .value("name", "NAME", "Advertised name and REQ_NAME answer (default: the host name)"),
    .value("allow", "LIST", "'bonded' (default) or addresses AA:BB:CC:DD:EE:FF,..."),
    .value("security", "LEVEL", "authenticated (default) or encrypted"),
    .flag("legacy", "Also serve the legacy remote-volume protocol"),
    .value("volume", "LEVEL", "Initial volume 0.0...1.0 (default 0.5)"),
    .value("bus", "ADDRESS", "D-Bus address (default: the system bus)"),
  ],
  run: runBLELinkServe)

func runBLELinkServe(_ args: Arguments) throws -> Int32 {
  var config = LinkConfig()
  config.enabled = true
  do {
    if let a = args.value("adapter") { try config.set("adapter", a) }
    if let a = args.value("allow") { try config.set("allow", a) }
    if let s = args.value("security") { try config.set("security", s) }
    if let n = args.value("name") { try config.set("name", n) }
  } catch let e as LinkConfigError {
    throw UsageError(e.message)
  }
  config.legacyRemoteVolume = args.has("legacy")
  var level = try args.double("volume") ?? 0.5
  guard (0...1).contains(level) else { throw UsageError("--volume expects 0.0 to 1.0") }
  var muted = false
  var ringing: Set<BDAddress> = []
  var nextNotice: UInt16 = 1

  let name = config.name ?? String(hostName().utf8.prefix(LinkConfig.maxNameBytes)) ?? "earshot"
  Console.lineBuffered = true
  let loop = try EventLoop()
  let server: BLELinkServer
  do {
    server = try BLELinkServer(
      loop: loop, config: config, name: name, features: [.find, .volume],
      busAddress: args.value("bus"))
  } catch {
    throw CommandFailure("\(error)")
  }
  var exitCode: Int32 = 0
  server.onLog = { Console.error($0 + "\n") }
  server.onReady = { result in
    var j = JSONLine()
    switch result {
    case .success(let adapter):
      j.add("event", "ready")
      j.add("adapter", adapter)
    case .failure(let e):
      j.add("event", "failed")
      j.add("error", "\(e)")
      exitCode = 1
      loop.stop()
    }
    Console.line(j.line)
  }

  func volumeState() -> LinkVolume { LinkVolume(level: level, muted: muted) }
  func changed() {
    server.notify(.volumeChanged(volumeState()))
    server.sendLegacyVolume(level)
  }

  server.onEvent = { event in
    var j = JSONLine()
    switch event {
    case .notifying(let on):
      j.add("event", "notifying")
      j.add("on", on)
    case .legacy(let request, let from):
      j.add("event", "legacy")
      j.add("from", from.description)
      switch request {
      case .name: j.add("request", "name")
      case .volume:
        j.add("request", "volume")
        server.sendLegacyVolume(level)
      case .setVolume(let v):
        j.add("request", "set_volume")
        j.add("level", v, decimals: 4)
        level = v
        changed()
      }
    case .request(let frame, let from):
      j.add("event", "request")
      j.add("from", from.description)
      j.add("op", frame.request.opcode.name)
      j.add("seq", Int(frame.seq))
      let response: LinkResponse
      switch frame.request {
      case .findStart:
        let fresh = ringing.insert(from).inserted
        response = .ok(
          .findStart(fresh ? (ringing.count == 1 ? .ringing : .joined) : .alreadyRequested),
          to: frame)
      case .findStop:
        if ringing.remove(from) == nil {
          response = .ok(.findStop(.notRequested), to: frame)
        } else {
          response = .ok(.findStop(ringing.isEmpty ? .stopped : .withdrawn), to: frame)
          if ringing.isEmpty { server.notify(.findEnded(.deviceStop)) }
        }
      case .noticeAck(let notice, let result):
        j.add("notice", Int(notice))
        j.add("result", Int(result))
        response = .ok(to: frame)
      case .volumeGet:
        response = .ok(.volume(volumeState()), to: frame)
      case .volumeSet(let p):
        level = Double(p) / 1000
        response = .ok(.volume(volumeState()), to: frame)
      case .volumeMute(let m):
        muted = m
        response = .ok(.volume(volumeState()), to: frame)
      case .shutter, .playMedia, .info:
        response = .error(.unavailable, to: frame)
      }
      server.send(response)
      if case .volumeSet = frame.request { changed() }
      if case .volumeMute = frame.request { changed() }
      j.add("status", response.status.name)
    }
    Console.line(j.line)
  }

  try loop.handleSignals([SIGINT, SIGTERM, SIGUSR1]) { signal in
    if signal == SIGUSR1 {
      guard !ringing.isEmpty else { return }
      // Found: the alert is silent first, then the notice.
      ringing.removeAll()
      server.notify(.findEnded(.found))
      let notice = nextNotice
      nextNotice &+= 1
      server.notify(.phoneFound(notice: notice))
      var j = JSONLine()
      j.add("event", "found")
      j.add("notice", Int(notice))
      Console.line(j.line)
      return
    }
    server.stop()
    // Let the unregister calls go out, then leave.
    loop.after(seconds: 0.3) { loop.stop() }
  }
  server.start()
  try loop.run()
  return exitCode
}

func hostName() -> String {
  var buf = [CChar](repeating: 0, count: 256)
  guard gethostname(&buf, buf.count) == 0 else { return "earshot" }
  return buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
}
