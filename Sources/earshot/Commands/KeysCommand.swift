import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

let keysCommand = Command(
  name: "keys",
  summary: "Export bonded devices' identity keys from BlueZ's bond store for the agent",
  arguments: "export",
  details: """
    export reads BlueZ's bond store (root only) and writes the keys file the
    agent reads without root: for each bonded device its identity address and
    type, its identity resolving key (IRK) when it distributed one, and its
    name; none of the store's other keys. The file is replaced atomically,
    mode 0640, group bluetooth (--group), and only when its contents change.
    With --follow it keeps running and rewrites the file whenever a bond is
    added or removed (earshot-keys.service runs it so).
    Exit status 1 when the store cannot be read.
    """,
  options: [
    .value("store", "DIR", "BlueZ's bond store (default: \(BondPaths.store))"),
    .value(
      "output", "FILE", "The keys file, or - for standard output (default: \(BondPaths.keysFile))"),
    .value(
      "group", "NAME",
      "The group that may read the keys file (default: \(BondPaths.keysGroup) when it exists)"),
    .flag("follow", "Keep running; rewrite the file when bonds change"),
  ],
  run: runKeys)

func runKeys(_ args: Arguments) throws -> Int32 {
  guard args.positionals == ["export"] else {
    throw UsageError(
      args.positionals.isEmpty
        ? "say what to do: earshot keys export"
        : "unknown action '\(args.positionals.joined(separator: " "))'; the action is export")
  }
  let root = args.value("store") ?? BondPaths.store
  let output = args.value("output") ?? BondPaths.keysFile
  var group = args.value("group")
  if output != "-", group == nil, getgrnam(BondPaths.keysGroup) != nil {
    group = BondPaths.keysGroup
  }
  if output != "-", group == nil {
    Console.error(
      "earshot keys: no group '\(BondPaths.keysGroup)'; \(output) is readable by its owner's group only\n"
    )
  }
  let export = { (set: BondedKeySet) throws -> Void in
    for problem in set.problems { Console.error("earshot keys: \(problem)\n") }
    let text = BondedKeysFile.render(set.keys, source: root)
    if output == "-" {
      Console.out(text)
      return
    }
    do {
      if try BondedKeysFileIO.write(text, to: output, group: group) {
        let withKey = set.keys.filter { $0.irk != nil }.count
        Console.error(
          "earshot keys: wrote \(output): \(set.keys.count) bonded device(s), \(withKey) with an IRK\n"
        )
      }
    } catch {
      throw CommandFailure("\(error)")
    }
  }
  guard args.has("follow") else {
    do {
      try export(BondStoreReader.read(root: root))
    } catch let e as BondStoreError {
      throw CommandFailure(e.description)
    }
    return 0
  }
  let loop = try EventLoop()
  var failure: Error? = nil
  let follower = BondedKeysFollower(
    source: .store(root: root), loop: loop,
    changed: { set in
      do { try export(set) } catch {
        failure = error
        loop.stop()
      }
    },
    failed: { Console.error("earshot keys: \($0)\n") })
  try loop.handleSignals([SIGTERM, SIGINT]) { _ in loop.stop() }
  try follower.start()
  // Ready once the first export is written (or reported as impossible), so
  // an agent ordered after this service finds the file.
  ServiceReadiness.ready()
  try loop.run()
  follower.stop()
  if let failure { throw failure }
  return 0
}
