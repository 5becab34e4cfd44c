import CINIH
import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// Reads INI files with libinih into a `ConfigDocument` (headers and
/// entries with line numbers) for the core to validate.
///
/// Debian builds libinih without INI_HANDLER_LINENO, so the handler is not
/// told line numbers. We feed libinih through `ini_parse_stream` with our
/// own reader that hands it exactly one line per call: the handler runs
/// while libinih processes the line just read, so the count of lines handed
/// out is the handler's line number. Lines too long for libinih's 200-byte
/// buffer are reported and handed over blank, so the count stays exact.
public enum IniReader {
  /// libinih's fixed line buffer (INI_MAX_LINE), minus newline and NUL.
  public static let maxLineBytes = 198
  /// libinih truncates section names and keys to MAX_SECTION/MAX_NAME - 1.
  public static let maxNameBytes = 49

  public static func read(path: String) throws -> ConfigDocument {
    let bytes = try FileBytes(path: path).bytes
    return parse(bytes, file: path)
  }

  public static func parse(_ text: String, file: String) -> ConfigDocument {
    parse(Array(text.utf8), file: file)
  }

  public static func parse(_ bytes: [UInt8], file: String) -> ConfigDocument {
    let context = Context(bytes: bytes, file: file)
    let unmanaged = Unmanaged.passRetained(context)
    defer { unmanaged.release() }
    let result = ini_parse_stream(
      { buffer, size, stream in
        let c = Unmanaged<IniReader.Context>.fromOpaque(stream!).takeUnretainedValue()
        return c.nextLine(into: buffer!, size: Int(size))
      }, unmanaged.toOpaque(),
      { user, section, name, value in
        let c = Unmanaged<IniReader.Context>.fromOpaque(user!).takeUnretainedValue()
        c.entry(
          section: String(cString: section!), key: String(cString: name!),
          value: String(cString: value!))
        return 1
      }, unmanaged.toOpaque())
    var doc = context.doc
    if result > 0, !doc.syntaxErrors.contains(where: { $0.line == Int(result) }) {
      doc.syntaxErrors.append(
        ConfigError(
          file: file, line: Int(result),
          message: "cannot read this line; write 'key = value', '[section]' or a comment (# or ;)"))
    } else if result < 0 {
      doc.syntaxErrors.append(
        ConfigError(file: file, line: 0, message: "libinih failed to read the file (\(result))"))
    }
    return doc
  }

  final class Context {
    var doc: ConfigDocument
    let lines: [ArraySlice<UInt8>]
    var index = 0
    var continuation = false

    init(bytes: [UInt8], file: String) {
      doc = ConfigDocument(file: file)
      var b = bytes[...]
      if b.starts(with: [0xEF, 0xBB, 0xBF]) { b = b.dropFirst(3) }
      lines = b.split(separator: 0x0A, omittingEmptySubsequences: false).map { $0 }
    }

    /// The ini_reader: copies line `index` (with its newline) into libinih's
    /// buffer; `nil` at the end.
    func nextLine(into buffer: UnsafeMutablePointer<CChar>, size: Int) -> UnsafeMutablePointer<
      CChar
    >? {
      guard index < lines.count else { return nil }
      // A file ending in a newline has an empty last piece: not a line.
      if index == lines.count - 1 && lines[index].isEmpty { return nil }
      var line = lines[index]
      index += 1
      let number = index
      if line.last == 0x0D { line = line.dropLast() }
      if line.contains(0) {
        syntax(number, "the line holds a NUL byte")
        line = []
      } else if line.count > min(IniReader.maxLineBytes, size - 2) {
        syntax(number, "line is longer than \(IniReader.maxLineBytes) bytes; shorten it")
        line = []
      }
      let trimmed = line.drop { $0 == 0x20 || $0 == 0x09 }
      continuation = trimmed.count < line.count && !trimmed.isEmpty
      if trimmed.first == UInt8(ascii: "[") {
        if let close = trimmed.firstIndex(of: UInt8(ascii: "]")) {
          let name = trimmed[trimmed.index(after: trimmed.startIndex)..<close]
          if name.count > IniReader.maxNameBytes {
            syntax(number, "section name is longer than \(IniReader.maxNameBytes) bytes")
          } else {
            doc.headers.append(
              SectionHeader(name: String(decoding: name, as: UTF8.self), line: number))
          }
        }
        continuation = false
      }
      var n = 0
      for byte in line {
        buffer[n] = CChar(bitPattern: byte)
        n += 1
      }
      buffer[n] = 0x0A
      buffer[n + 1] = 0
      return buffer
    }

    func entry(section: String, key: String, value: String) {
      doc.entries.append(
        ConfigEntry(
          section: section, key: key, value: value, line: index, continuation: continuation))
    }

    private func syntax(_ line: Int, _ message: String) {
      doc.syntaxErrors.append(ConfigError(file: doc.file, line: line, message: message))
    }
  }
}

/// Where the config file is when `--config` is not given.
public enum ConfigLocation {
  public static let system = "/etc/earshot/earshot.conf"

  /// `$EARSHOT_CONFIG` if set (for a test or a second agent: it can point
  /// away from /etc even for root), else a user's own file ($XDG_CONFIG_HOME
  /// or ~/.config) when not root and it exists, else the system file.
  public static func defaultPath() -> String {
    if let named = env("EARSHOT_CONFIG"), !named.isEmpty { return named }
    if getuid() != 0, let user = userPath(), access(user, F_OK) == 0 { return user }
    return system
  }

  public static func userPath() -> String? {
    if let x = env("XDG_CONFIG_HOME"), !x.isEmpty { return x + "/earshot/earshot.conf" }
    if let h = env("HOME"), !h.isEmpty { return h + "/.config/earshot/earshot.conf" }
    return nil
  }

  /// System paths for root, the XDG runtime and state directories otherwise.
  public static func paths() -> ConfigPaths {
    guard getuid() != 0 else { return .system }
    let runtime = env("XDG_RUNTIME_DIR") ?? "/run/user/\(getuid())"
    let state = env("XDG_STATE_HOME") ?? ((env("HOME") ?? "/tmp") + "/.local/state")
    return .user(runtimeDir: runtime, stateHome: state)
  }

  static func env(_ name: String) -> String? {
    getenv(name).map { String(cString: $0) }
  }
}

extension Config {
  /// Reads and validates a config file.
  public static func load(path: String, paths: ConfigPaths = ConfigLocation.paths()) throws
    -> Config
  {
    try build(IniReader.read(path: path), paths: paths)
  }
}
