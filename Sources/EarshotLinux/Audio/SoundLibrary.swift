import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// Where alert sounds come from: the built-in patterns, and sound files in
/// the first sounds directory found: `$EARSHOT_SOUNDS`, then `../../sounds`
/// beside the executable (the repository, when run from `.build`), then
/// `../share/earshot/sounds` beside it (an install under any prefix, such as
/// the Debian package's /usr), then `/usr/local/share/earshot/sounds`.
public struct SoundLibrary {
  public static let extensions = ["wav", "flac", "ogg", "oga", "aiff", "aif"]
  public static let installedDirectory = "/usr/local/share/earshot/sounds"

  /// The directory in use, if any exists.
  public let directory: String?

  public init(directory: String?) {
    self.directory = directory
  }

  /// Looks in the standard places (see the type's comment).
  public static func standard() -> SoundLibrary {
    SoundLibrary(directory: candidates().first(where: isDirectory).map(canonical))
  }

  static func canonical(_ path: String) -> String {
    guard let p = realpath(path, nil) else { return path }
    defer { free(p) }
    return String(cString: p)
  }

  /// The places looked in, in order.
  public static func candidates() -> [String] {
    var dirs: [String] = []
    if let env = getenv("EARSHOT_SOUNDS") { dirs.append(String(cString: env)) }
    if let exe = executableDirectory() {
      // .build/debug/earshot resolves to .build/<triple>/debug/earshot.
      dirs.append(exe + "/../../sounds")
      dirs.append(exe + "/../../../sounds")
      dirs.append(exe + "/../share/earshot/sounds")
    }
    dirs.append(installedDirectory)
    return dirs
  }

  /// File names (with extension) in the sounds directory, sorted.
  public func files() -> [String] {
    guard let directory, let dir = opendir(directory) else { return [] }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
      let name = withUnsafePointer(to: entry.pointee.d_name) {
        $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
      }
      if let dot = name.lastIndex(of: "."),
        Self.extensions.contains(name[name.index(after: dot)...].lowercased())
      {
        names.append(name)
      }
    }
    return names.sorted()
  }

  public struct NotFound: Error, CustomStringConvertible {
    public let description: String
  }

  /// A pattern name (at `frequency` if given), a file in the sounds
  /// directory (with or without extension), or a path to a sound file.
  /// Files are converted to `sampleRate` (the player's rate) as they load.
  public func resolve(_ name: String, frequency: Double? = nil, sampleRate: Int = 48_000) throws
    -> AlertSound
  {
    if let p = SoundPattern.named(name, frequency: frequency) { return .pattern(p) }
    if name.contains("/") {
      return .samples(try SoundFile.load(name, sampleRate: sampleRate), name: name)
    }
    if let directory {
      let files = files()
      let match =
        files.first(where: { $0 == name })
        ?? files.first(where: { $0.split(separator: ".").dropLast().joined(separator: ".") == name }
        )
      if let match {
        return .samples(
          try SoundFile.load(directory + "/" + match, sampleRate: sampleRate), name: match)
      }
    }
    if Self.isFile(name) {
      return .samples(try SoundFile.load(name, sampleRate: sampleRate), name: name)
    }
    var known = "built-in patterns: " + SoundPattern.names.joined(separator: ", ")
    if let directory {
      known +=
        "; files in \(directory): " + (files().isEmpty ? "none" : files().joined(separator: ", "))
    } else {
      known += "; no sounds directory found (set EARSHOT_SOUNDS)"
    }
    throw NotFound(description: "no sound named '\(name)' (\(known))")
  }

  static func executableDirectory() -> String? {
    var buf = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buf, buf.count - 1)
    guard n > 0 else { return nil }
    let path = String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    guard let slash = path.lastIndex(of: "/") else { return nil }
    return String(path[..<slash])
  }

  static func isDirectory(_ path: String) -> Bool {
    var st = stat()
    return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
  }

  static func isFile(_ path: String) -> Bool {
    var st = stat()
    return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
  }
}
