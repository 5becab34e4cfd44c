import EarshotCore
import EarshotLinux

let eventsCommand = Command(
  name: "events",
  summary: "Subscribe to the agent's events and print them as JSON lines",
  details: """
    Topics: regions, ranging, volume, find (default: all). Prints one JSON
    object per line until the agent stops or you press Ctrl-C.
    """,
  options: [
    socketOption,
    .value(
      "topics", "LIST",
      "Comma-separated topics: regions, ranging, volume, find, tags, trackers (default: regions,ranging,volume,find)"
    ),
  ],
  run: { args in
    try noPositionals(args)
    var topics: [ControlTopic] = []
    for name in (args.value("topics") ?? "regions,ranging,volume,find").split(separator: ",") {
      guard let t = ControlTopic(rawValue: String(name)) else {
        throw UsageError(
          "unknown topic '\(name)'; topics are \(ControlTopic.allCases.map(\.rawValue).joined(separator: ", "))"
        )
      }
      topics.append(t)
    }
    Console.lineBuffered = true
    let client = try connectToAgent(args)
    _ = try resultFields(client.call(.subscribe(topics)))
    while let event = try client.nextEvent() {
      Console.line(event.encoded)
    }
    return 0
  })
