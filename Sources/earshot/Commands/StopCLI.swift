import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

let stopCommand = Command(
  name: "stop",
  summary: "Stop what the agent plays",
  details: """
    Stops what the running agent ('earshot run') plays (silent at once, the
    device released). Without an agent, sends Stop to the MPRIS player in
    [media] player. Prints the agent's media state.
    """,
  options: [MediaCLI.configOption, socketOption],
  run: { args in
    guard args.positionals.isEmpty else { throw UsageError("stop takes no arguments") }
    return try MediaCLI.control(args, command: .mediaStop)
  })
