import EarshotCore
import EarshotLinux

let foundCommand = Command(
  name: "found",
  summary: "Tell the agent you have the laptop: stop the alert, then notify the devices",
  details: """
    The alert stops and the volume is restored first; then each device that
    asked to ring gets its phone-found notice. Exit status 1 when nothing rings.
    """,
  options: [socketOption],
  run: { args in
    try noPositionals(args)
    let client = try connectToAgent(args)
    Console.line(try resultFields(client.call(.found)).encoded)
    return 0
  })
