import EarshotCore
import EarshotLinux

let statusCommand = Command(
  name: "status",
  summary: "Print the running agent's state (find-phone, volume, regions) as JSON",
  options: [socketOption],
  run: { args in
    try noPositionals(args)
    let client = try connectToAgent(args)
    Console.line(try resultFields(client.call(.status)).encoded)
    return 0
  })
