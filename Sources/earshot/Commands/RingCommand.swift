import EarshotCore
import EarshotLinux

let ringCommand = Command(
  name: "ring",
  summary: "Ring a key-finder tag or a bonded device (its Immediate Alert service)",
  arguments: "NAME|ADDRESS",
  details: """
    Asks the running agent to write Alert Level 2 (high) to the Immediate
    Alert service (0x1802) of the tag [tag "NAME"], or of any bonded device
    with that service by its address (earbuds and watches often have one),
    so that it beeps. --stop writes 0 (silent), --mild writes 1. Prints the
    target, the address written to and the level. Exit status 1 when the tag
    is not connected, the device is not bonded or lacks the service, or it
    refused the write.
    """,
  options: [
    .flag("stop", "Write Alert Level 0: stop the beeping"),
    .flag("mild", "Write Alert Level 1 (a mild alert) instead of 2"),
    socketOption,
  ],
  run: { args in
    guard args.positionals.count == 1, let target = args.positionals.first else {
      throw UsageError("ring takes one tag name or device address")
    }
    if args.has("stop") && args.has("mild") {
      throw UsageError("--stop and --mild exclude each other")
    }
    let level: AlertLevel = args.has("stop") ? .none : args.has("mild") ? .mild : .high
    let client = try connectToAgent(args)
    Console.line(try resultFields(client.call(.ring(target: target, level: level))).encoded)
    return 0
  })
