/// Every subcommand, in the order `earshot --help` lists them. Each lives in
/// its own file under Commands/.
let commands: [Command] = [
  scanCommand,
  monitorCommand,
  checkConfigCommand,
  simulateCommand,
  benchCommand,
  shutterCommand,
  playCommand,
  pauseCommand,
  stopCommand,
  runCommand,
  statusCommand,
  eventsCommand,
  foundCommand,
  deviceCommand,
  alertCommand,
  soundsCommand,
  volumeCommand,
  logCommand,
  plotCommand,
  bleAgentCommand,
]
