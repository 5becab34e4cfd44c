import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

let version = "0.1.0"

func topLevelHelp() -> String {
  var s = """
    earshot \(version): a laptop as "the phone" for Bluetooth accessories, and who is near.

    Usage: earshot COMMAND [options]

    Commands:

    """
  let width = commands.map(\.name.count).max() ?? 0
  for c in commands {
    s += "  \(c.name)\(String(repeating: " ", count: width - c.name.count + 2))\(c.summary)\n"
  }
  s += "\nRun 'earshot COMMAND --help' for a command's options.\n"
  return s
}

func main() -> Int32 {
  MemoryTuning.apply()
  let args = CommandLine.arguments.dropFirst()
  guard let first = args.first else {
    Console.error(topLevelHelp())
    return 2
  }
  switch first {
  case "--help", "-h", "help":
    if first == "help", let name = args.dropFirst().first,
      let c = commands.first(where: { $0.name == name })
    {
      Console.out(ArgumentParser.help(for: c))
    } else {
      Console.out(topLevelHelp())
    }
    return 0
  case "--version", "-V":
    Console.out("earshot \(version)\n")
    return 0
  default:
    break
  }
  // `docs` (man pages, completion) works but is not listed.
  guard let command = (commands + [docsCommand]).first(where: { $0.name == first }) else {
    Console.error("earshot: unknown command '\(first)'. Run 'earshot --help' for the list.\n")
    return 2
  }
  let rest = args.dropFirst()
  if rest.contains("--help") || rest.contains("-h") {
    Console.out(ArgumentParser.help(for: command))
    return 0
  }
  do {
    let parsed = try ArgumentParser.parse(rest, for: command)
    let status = try command.run(parsed)
    Console.flush()
    return status
  } catch let e as UsageError {
    Console.flush()
    Console.error("earshot \(command.name): \(e.message)\nTry 'earshot \(command.name) --help'.\n")
    return 2
  } catch let e as CommandFailure {
    Console.flush()
    Console.error("earshot \(command.name): \(e.message)\n" + libraryDetail())
    return 1
  } catch {
    Console.flush()
    Console.error("earshot \(command.name): \(error)\n" + libraryDetail())
    return 1
  }
}

/// With EARSHOT_DEBUG set, the last lines ALSA reported (kept, never
/// printed by the library itself), under a failure they may explain.
func libraryDetail() -> String {
  guard let v = getenv("EARSHOT_DEBUG"), v.pointee != 0 else { return "" }
  return ALSADiagnostics.recent().map { "  alsa: \($0)\n" }.joined()
}

let status = main()
Console.flush()
exit(status)
