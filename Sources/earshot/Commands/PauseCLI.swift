import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

let pauseCommand = Command(
  name: "pause",
  summary: "Pause what the agent plays ('earshot play' with no title resumes)",
  details: """
    Pauses what the running agent ('earshot run') plays: silent at once, it
    resumes where it was. Without an agent, sends Pause to the MPRIS player
    in [media] player. Prints the agent's media state.
    """,
  options: [MediaCLI.configOption, socketOption],
  run: { args in
    guard args.positionals.isEmpty else { throw UsageError("pause takes no arguments") }
    return try MediaCLI.control(args, command: .mediaPause)
  })
