/// The command-line front door: a table of subcommands, each with its
/// options, so that parsing and `--help` come from one description.
struct Command: Sendable {
  let name: String
  /// One line for the command list.
  let summary: String
  /// Positional arguments as shown in usage, e.g. "[set VALUE|mute|unmute]".
  var arguments: String = ""
  /// Longer text shown by `--help` after the usage line.
  var details: String = ""
  var options: [Option] = []
  let run: @Sendable (Arguments) throws -> Int32
}

struct Option: Sendable {
  let name: String
  /// Placeholder for the value (e.g. "FILE"); `nil` for a flag.
  let value: String?
  let help: String

  static func flag(_ name: String, _ help: String) -> Option {
    Option(name: name, value: nil, help: help)
  }
  static func value(_ name: String, _ placeholder: String, _ help: String) -> Option {
    Option(name: name, value: placeholder, help: help)
  }
}

/// What the user typed, checked against the command's option table.
struct Arguments {
  let command: String
  var flags: Set<String> = []
  var values: [String: String] = [:]
  var positionals: [String] = []

  func has(_ flag: String) -> Bool { flags.contains(flag) }
  func value(_ name: String) -> String? { values[name] }

  func double(_ name: String) throws -> Double? {
    guard let text = values[name] else { return nil }
    guard let v = Double(text), v.isFinite else {
      throw UsageError("--\(name) expects a number, got '\(text)'")
    }
    return v
  }
}

/// A mistake in how the command was called; exit status 2.
struct UsageError: Error {
  let message: String
  init(_ message: String) { self.message = message }
}

/// A failure the user can act on (no adapter, bad file, ...); exit status 1.
struct CommandFailure: Error {
  let message: String
  init(_ message: String) { self.message = message }
}

enum ArgumentParser {
  static func parse(_ args: ArraySlice<String>, for command: Command) throws -> Arguments {
    var result = Arguments(command: command.name)
    var rest = args
    let table = Dictionary(uniqueKeysWithValues: command.options.map { ($0.name, $0) })
    while let arg = rest.popFirst() {
      if arg == "--" {
        result.positionals.append(contentsOf: rest)
        break
      }
      guard arg.hasPrefix("--"), arg.count > 2 else {
        result.positionals.append(arg)
        continue
      }
      var name = String(arg.dropFirst(2))
      var inline: String? = nil
      if let eq = name.firstIndex(of: "=") {
        inline = String(name[name.index(after: eq)...])
        name = String(name[..<eq])
      }
      guard let option = table[name] else {
        throw UsageError("unknown option --\(name)")
      }
      if option.value == nil {
        guard inline == nil else { throw UsageError("--\(name) takes no value") }
        result.flags.insert(name)
      } else {
        guard let v = inline ?? rest.popFirst() else {
          throw UsageError("--\(name) needs a value (\(option.value!))")
        }
        result.values[name] = v
      }
    }
    return result
  }

  static func help(for c: Command) -> String {
    var s = "Usage: earshot \(c.name)"
    if !c.options.isEmpty { s += " [options]" }
    if !c.arguments.isEmpty { s += " \(c.arguments)" }
    s += "\n\n\(c.summary)\n"
    if !c.details.isEmpty { s += "\n\(c.details)\n" }
    let all = c.options + [.flag("help", "Show this help")]
    s += "\nOptions:\n"
    let width = all.map { optionLabel($0).count }.max() ?? 0
    for o in all {
      let label = optionLabel(o)
      s += "  \(label)\(String(repeating: " ", count: width - label.count + 2))\(o.help)\n"
    }
    return s
  }

  private static func optionLabel(_ o: Option) -> String {
    o.value.map { "--\(o.name) \($0)" } ?? "--\(o.name)"
  }
}
