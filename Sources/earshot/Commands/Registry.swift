/// Every subcommand, in the order `earshot --help` lists them. Each lives in
/// its own file under Commands/.
let commands: [Command] = [
  scanCommand,
  simulateCommand,
  benchCommand,
  bleLinkServeCommand,
  deviceBLECommand,
  bleAgentCommand,
]
