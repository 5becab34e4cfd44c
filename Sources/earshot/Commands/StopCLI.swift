import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

let stopCommand = Command(
  name: "stop",
  summary: "Stop what 'earshot play' plays",
  details: """
    Stops the running 'earshot play' (silent at once, the device released),
    or sends Stop to the MPRIS player in [media] player.
    """,
  options: [MediaCLI.configOption],
  run: { args in
    guard args.positionals.isEmpty else { throw UsageError("stop takes no arguments") }
    return try MediaCLI.control(args, signal: SIGTERM, mprisMethod: "Stop")
  })
