import EarshotCore
import EarshotLinux

let checkConfigCommand = Command(
  name: "check-config",
  summary: "Validate the config file and print the effective settings",
  details: """
    Reads the config (default: $EARSHOT_CONFIG if set, else
    $XDG_CONFIG_HOME/earshot/earshot.conf for a user who has one, else
    /etc/earshot/earshot.conf), reports every problem
    as FILE:LINE: [section] key: message, and on success prints every
    setting with the defaults filled in. Exit status 1 if there are errors.
    """,
  options: [
    .value("config", "FILE", "Config file to check")
  ],
  run: runCheckConfig)

/// Loads the config named by --config or the default location, turning
/// problems into a message that lists them all.
func loadConfig(_ args: Arguments) throws -> (Config, String) {
  let path = args.value("config") ?? ConfigLocation.defaultPath()
  do {
    return (try Config.load(path: path), path)
  } catch let e as ConfigErrors {
    throw CommandFailure(
      "\(e.errors.count) problem(s) in the config:\n\(e.description)")
  } catch let e as SystemError {
    let hint =
      args.value("config") == nil
      ? " (write one: etc/earshot.conf in the source tree is a documented example)" : ""
    throw CommandFailure("\(e)\(hint)")
  }
}

func runCheckConfig(_ args: Arguments) throws -> Int32 {
  guard args.positionals.isEmpty else {
    throw UsageError("unexpected argument '\(args.positionals[0])'")
  }
  let (config, path) = try loadConfig(args)
  let tags = config.tags.isEmpty ? "" : ", \(config.tags.count) tag(s)"
  Console.line("# \(path): OK, \(config.regions.count) region(s)\(tags). Effective settings:")
  if config.regions.isEmpty {
    Console.line(
      "# no [region \"NAME\"] sections: nothing is monitored; add one "
        + "(etc/earshot.conf in the source tree has examples, commented out)")
  }
  Console.line("")
  Console.out(config.render())
  return 0
}
