/// What an INI reader hands the config model: every section header and
/// every `key = value` line with its line number. Pure data, so the model
/// and its validation are tested without files (and the same document
/// shape serves scenario descriptions).
public struct ConfigDocument: Sendable {
  /// The file name used in error messages.
  public var file: String
  public var headers: [SectionHeader] = []
  public var entries: [ConfigEntry] = []
  /// Lines the reader could not parse (no `=`, unclosed `[`, too long).
  public var syntaxErrors: [ConfigError] = []

  public init(file: String) { self.file = file }
}

public struct SectionHeader: Sendable, Equatable {
  /// The text between the brackets, as written (`region "desk"`).
  public var name: String
  public var line: Int
  public init(name: String, line: Int) {
    self.name = name
    self.line = line
  }
}

public struct ConfigEntry: Sendable, Equatable {
  public var section: String
  public var key: String
  public var value: String
  public var line: Int
  /// The line began with whitespace, so an INI reader took it as the
  /// continuation of the previous key's value.
  public var continuation: Bool

  public init(section: String, key: String, value: String, line: Int, continuation: Bool = false) {
    self.section = section
    self.key = key
    self.value = value
    self.line = line
    self.continuation = continuation
  }
}

/// One problem in a config file, located so that the user can go and fix it.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
  public var file: String
  public var line: Int
  public var section: String?
  public var key: String?
  public var message: String

  public init(file: String, line: Int, section: String? = nil, key: String? = nil, message: String)
  {
    self.file = file
    self.line = line
    self.section = section
    self.key = key
    self.message = message
  }

  /// `earshot.conf:12: [region "desk"] minor: ...`, the shape compilers use
  /// so editors can jump to it.
  public var description: String {
    var s = "\(file):\(line): "
    if let section { s += "[\(section)] " }
    if let key { s += "\(key): " }
    return s + message
  }
}

/// All the problems found in one file (validation goes on after the first,
/// so that one run shows everything to fix).
public struct ConfigErrors: Error, Sendable, CustomStringConvertible {
  public var errors: [ConfigError]
  public init(_ errors: [ConfigError]) { self.errors = errors }
  public var description: String { errors.map(\.description).joined(separator: "\n") }
}

/// What a key's parser says about a value it rejects (or about a key it
/// does not know). The config builder locates it as a `ConfigError` with the
/// file, line, section and key; a command-line option names its flag.
public struct ConfigValueError: Error, Sendable, Equatable, CustomStringConvertible {
  public var message: String
  public init(_ message: String) { self.message = message }
  public var description: String { message }
}
