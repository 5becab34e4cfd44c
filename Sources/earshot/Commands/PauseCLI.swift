import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

let pauseCommand = Command(
  name: "pause",
  summary: "Pause what 'earshot play' plays ('earshot play' with no title resumes)",
  details: """
    Pauses the running 'earshot play' (silent at once; it resumes where it
    was), or sends Pause to the MPRIS player in [media] player.
    """,
  options: [MediaCLI.configOption],
  run: { args in
    guard args.positionals.isEmpty else { throw UsageError("pause takes no arguments") }
    return try MediaCLI.control(args, signal: SIGUSR1, mprisMethod: "Pause")
  })
