import EarshotCore
import EarshotLinux

/// What the commands that talk to a running agent share: `--socket` and
/// turning error responses into messages.
let socketOption = Option.value(
  "socket", "PATH",
  "The agent's control socket (default: /run/earshot/control.sock for root, $XDG_RUNTIME_DIR/earshot.sock otherwise)"
)

func socketPath(_ args: Arguments) -> String {
  args.value("socket") ?? SocketPath.defaultPath()
}

func connectToAgent(_ args: Arguments) throws -> ControlClient {
  do {
    return try ControlClient(path: socketPath(args))
  } catch {
    throw CommandFailure("\(error)")
  }
}

/// The response's fields without `id` and `ok`; an error response throws.
func resultFields(_ response: JSONValue) throws -> JSONValue {
  guard response["ok"] == .bool(true) else {
    let code = response["error"]?["code"]?.string ?? "error"
    let message = response["error"]?["message"]?.string ?? response.encoded
    throw CommandFailure("\(message) (\(code))")
  }
  guard case .object(let fields) = response else { return response }
  return .object(fields.filter { $0.0 != "id" && $0.0 != "ok" })
}

func noPositionals(_ args: Arguments) throws {
  if let extra = args.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
}

/// The running agent if one answers on the socket (`--socket` or the
/// default); nil means: act standalone.
func runningAgent(_ args: Arguments) -> ControlClient? {
  try? ControlClient(path: socketPath(args))
}
