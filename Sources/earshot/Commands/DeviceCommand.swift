import EarshotCore
import EarshotLinux

let deviceCommand = Command(
  name: "device",
  summary: "Act as a device (control socket, or BLE with --ble): ask the laptop to ring, or stop",
  arguments: "find start|stop | --ble ADDRESS REQUEST...",
  details: """
    Over the control socket (--name NAME): registers as device NAME (the
    local device link) and sends the request. 'find start' then waits: when
    the user says found, the phone-found notice arrives; it is printed and
    acknowledged (or failed with --fail-notice). It also ends when the
    request closes without a notice (this device's stop, the timeout).

    Over BLE (--ble ADDRESS): connects as a central to the Earshot at
    ADDRESS on the ATT channel (pairing as --security asks), finds the link
    service, enables notifications, sends each REQUEST in turn and prints
    its answer, then prints notifications for --wait seconds. Requests:
      info | find start | find stop | volume get | volume set LEVEL |
      volume mute | volume unmute | notice-ack N [RESULT] |
      shutter enter|capture|exit|BYTE | play TITLE | raw HEX
    As a Find Me locator (the Immediate Alert service, no link needed):
      alert none|mild|high|BYTE (Write Without Response, as locators write)
      | alert-write HEX (Write Request: prints the ATT error, if any)
    Between any two requests: sleep SECONDS (stays connected).
    With --legacy, the compatibility service instead:
      name (REQ_NAME) | volume (REQ_VOLUME) | set LEVEL (8-byte double) | raw HEX
    --ack-notice answers a phone_found notice with result 0, --fail-notice
    with result 1. Exit status 1 when a request is refused with an ATT
    error, 3 on no answer.

    Every line printed is JSON.
    """,
  options: [
    socketOption,
    .value("name", "NAME", "The device's name (control socket; required there)"),
    .flag("fail-notice", "Answer the notice with a failure (for tests)"),
  ] + deviceBLEOptions,
  run: runDevice)

func runDevice(_ args: Arguments) throws -> Int32 {
  if args.value("ble") != nil { return try runDeviceBLE(args) }
  for o in deviceBLEOptions where args.has(o.name) || args.value(o.name) != nil {
    throw UsageError("--\(o.name) goes with --ble ADDRESS")
  }
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
