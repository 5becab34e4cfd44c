import EarshotCore
import EarshotLinux

let deviceCommand = Command(
  name: "device",
  summary: "Act as a device over the control socket: ask the laptop to ring, or stop",
  arguments: "find start|stop",
  details: """
    Registers as device NAME (the local device link) and sends the request.
    'find start' then waits: when the user says found, the phone-found notice
    arrives; it is printed and acknowledged (or failed with --fail-notice).
    It also ends when the request closes without a notice (this device's stop,
    the timeout). Every line printed is JSON.
    """,
  options: [
    socketOption,
    .value("name", "NAME", "The device's name (required)"),
    .flag("fail-notice", "Answer the notice with a failure (for tests)"),
  ],
  run: runDevice)

func runDevice(_ args: Arguments) throws -> Int32 {
  guard let name = args.value("name") else { throw UsageError("--name NAME is required") }
  guard ControlProtocol.validName(name) else {
    throw UsageError("--name must be 1 to \(ControlProtocol.maxNameBytes) bytes of printable text")
  }
  guard args.positionals.count == 2, args.positionals[0] == "find",
    ["start", "stop"].contains(args.positionals[1])
  else {
    throw UsageError("expected 'find start' or 'find stop'")
  }
  let start = args.positionals[1] == "start"
  Console.lineBuffered = true
  let client = try connectToAgent(args)
  let me = try resultFields(client.call(.deviceRegister(name: name)))["device"]?.string ?? name
  if start { _ = try resultFields(client.call(.subscribe([.find]))) }
  let result = try resultFields(client.call(start ? .findStart : .findStop))
  Console.line(
    JSONValue.object([("device", .string(me)), ("result", result["result"] ?? .null)]).encoded)
  guard start else { return 0 }

  while let event = try client.nextEvent() {
    switch event["event"]?.string {
    case "notice":
      Console.line(event.encoded)
      guard let id = event["notice"]?.integer, id > 0 else { continue }
      let answer: ControlCommand =
        args.has("fail-notice")
        ? .noticeFail(NoticeID(id), reason: "failed on request (--fail-notice)")
        : .noticeAck(NoticeID(id))
      _ = try resultFields(client.call(answer))
      Console.line(
        JSONValue.object([
          ("notice", .int(id)),
          ("answered", .string(args.has("fail-notice") ? "failed" : "accepted")),
        ]).encoded)
      return 0
    case "find":
      let find = event["find"]
      let listed = [find?["requesters"], find?["notifying"]].contains {
        $0?.array?.contains(.string(me)) ?? false
      }
      if !listed {
        Console.line(
          JSONValue.object([
            ("device", .string(me)), ("closed", .string("without a notice")),
            ("last_end", find?["last_end"] ?? .null),
          ]).encoded)
        return 0
      }
    default:
      continue
    }
  }
  throw CommandFailure("the agent closed the connection before the request ended")
}
