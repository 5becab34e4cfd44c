import EarshotCore
import EarshotLinux

let soundsCommand = Command(
  name: "sounds",
  summary: "List the alert sounds: built-in patterns and sound files",
  details: """
    Sound files are looked for in $EARSHOT_SOUNDS, then ../../sounds beside
    the executable (the repository when run from .build), then
    /usr/local/share/earshot/sounds; the first that exists is used.
    """,
  run: runSounds)

func runSounds(_ args: Arguments) throws -> Int32 {
  guard args.positionals.isEmpty else { throw UsageError("sounds takes no arguments") }
  let library = SoundLibrary.standard()
  var rows: [(String, String)] = []
  for name in SoundPattern.names {
    rows.append((name, "built-in: " + SoundPattern.named(name)!.summary))
  }
  if let dir = library.directory {
    for file in library.files() {
      let detail: String
      do {
        let loop = try SoundFile.load(dir + "/" + file)
        let seconds = Double(loop.frameCount) / Double(loop.sampleRate)
        let layout = loop.channels == 1 ? "mono" : "stereo"
        detail =
          "file: \(JSONLine.format(seconds, decimals: 2)) s, \(loop.sampleRate) Hz, \(layout)"
      } catch {
        detail = "file: unreadable (\(error))"
      }
      rows.append((file, detail))
    }
  }
  let width = rows.map(\.0.count).max() ?? 0
  for (name, detail) in rows {
    Console.line(name + String(repeating: " ", count: width - name.count + 2) + detail)
  }
  if let dir = library.directory {
    Console.line("\nsounds directory: \(dir)")
  } else {
    Console.line(
      "\nno sounds directory found (looked in: \(SoundLibrary.candidates().joined(separator: ", ")))"
    )
  }
  return 0
}
