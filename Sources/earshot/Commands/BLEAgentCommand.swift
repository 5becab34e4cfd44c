import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

/// A pairing agent for machines without a desktop: prints each pairing
/// request (with its passkey) and accepts it when told to.
let bleAgentCommand = Command(
  name: "ble-agent",
  summary: "Run a BlueZ pairing agent that prints requests (and accepts them with --accept)",
  details: """
    Registers with bluetoothd as the default agent and prints one JSON line
    per request: {"agent":"RequestConfirmation","device":...,"passkey":123456}.
    With --accept it confirms numeric comparisons and authorizations (check
    the passkey matches the other side's); without, it rejects them. It
    never types a passkey. When bluetoothd restarts it prints
    {"event":"bluetoothd_gone"}, registers again, and prints "ready" again.
    Runs until SIGINT or SIGTERM; exits 1 if the first registration fails.
    """,
  options: [
    .flag("accept", "Accept confirmation and authorization requests"),
    .value("capability", "CAP", "KeyboardDisplay (default), DisplayYesNo or NoInputNoOutput"),
    .value("bus", "ADDRESS", "D-Bus address (default: the system bus)"),
  ],
  run: runBLEAgent)

func runBLEAgent(_ args: Arguments) throws -> Int32 {
  let capability = args.value("capability") ?? "KeyboardDisplay"
  guard ["KeyboardDisplay", "DisplayYesNo", "NoInputNoOutput", "DisplayOnly"].contains(capability)
  else {
    throw UsageError("--capability: KeyboardDisplay, DisplayYesNo, DisplayOnly or NoInputNoOutput")
  }
  Console.lineBuffered = true
  let loop = try EventLoop()
  let agent: BlueZAgent
  do {
    agent = try BlueZAgent(
      loop: loop, capability: capability, accept: args.has("accept"), busAddress: args.value("bus"))
  } catch {
    throw CommandFailure("\(error)")
  }
  var status: Int32 = 0
  agent.onRequest = { method, device, passkey in
    var j = JSONLine()
    j.add("agent", method)
    j.add("device", device)
    if let passkey { j.add("passkey", Int(passkey)) }
    Console.line(j.line)
  }
  // The first registration decides the exit status; after a bluetoothd
  // restart the agent registers again and keeps running whatever happens.
  var everReady = false
  agent.onLog = { Console.error($0) }
  agent.start { state in
    var j = JSONLine()
    switch state {
    case .ready:
      everReady = true
      j.add("event", "ready")
      j.add("capability", capability)
    case .failed(let e):
      j.add("event", "failed")
      j.add("error", "\(e)")
      if !everReady {
        status = 1
        loop.stop()
      }
    case .bluetoothdGone:
      j.add("event", "bluetoothd_gone")
    }
    Console.line(j.line)
  }
  try loop.handleSignals([SIGINT, SIGTERM]) { _ in loop.stop() }
  try loop.run()
  return status
}
