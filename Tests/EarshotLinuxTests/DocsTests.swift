import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

/// The man pages and the bash completion are generated from the command
/// registry and the config key tables (`earshot docs`). The committed copies
/// must be exactly what the binary generates, and the generated text must
/// name every command, option, section and key that --help and the tables do.
final class DocsTests: XCTestCase {
  static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

  private func generate(_ what: String) throws -> String {
    let r = try Earshot.run(["docs", what])
    XCTAssertEqual(r.status, 0, r.stderr)
    return r.stdout
  }

  private func committed(_ path: String) throws -> String {
    try String(contentsOf: Self.repo.appendingPathComponent(path), encoding: .utf8)
  }

  func testCommittedFilesAreWhatTheBinaryGenerates() throws {
    for (what, path) in [
      ("man", "docs/man/earshot.1"), ("conf", "docs/man/earshot.conf.5"),
      ("completion", "etc/completion/earshot.bash"),
    ] {
      XCTAssertEqual(
        try generate(what), try committed(path),
        "\(path) is stale: run scripts/docs.sh and commit the result")
    }
  }

  /// Commands and their options as `earshot --help` and `earshot CMD --help` list them.
  private func helpTable() throws -> [(name: String, options: [String])] {
    let top = try Earshot.run(["--help"])
    XCTAssertEqual(top.status, 0)
    let names = top.stdout.components(separatedBy: "Commands:\n")[1]
      .components(separatedBy: "\n\n")[0]
      .split(separator: "\n").map { String($0.split(separator: " ")[0]) }
    return try names.map { name in
      let help = try Earshot.run([name, "--help"])
      XCTAssertEqual(help.status, 0, name)
      let options = help.stdout.components(separatedBy: "Options:\n")[1]
        .split(separator: "\n").compactMap { line -> String? in
          let word = line.split(separator: " ").first.map(String.init) ?? ""
          return word.hasPrefix("--") && word != "--help" ? word : nil
        }
      return (name, options)
    }
  }

  func testManPageAndCompletionCoverEveryCommandAndOption() throws {
    let man = try generate("man")
    let completion = try generate("completion")
    let table = try helpTable()
    XCTAssertGreaterThan(table.count, 10, "the command list was not parsed")
    XCTAssertGreaterThan(table.map(\.options.count).reduce(0, +), 40)
    for (name, options) in table {
      let section = man.components(separatedBy: ".SS \"\(Self.roff(name))\"\n")
      XCTAssertEqual(section.count, 2, "earshot(1) has no (or two) sections for \(name)")
      let body = section.last!.components(separatedBy: "\n.SS ")[0]
      let line = completion.split(separator: "\n").first {
        $0.hasPrefix("    \(name)) opts=")
      }
      XCTAssertNotNil(line, "completion lacks \(name)")
      for option in options {
        XCTAssertTrue(
          body.contains(".B \(Self.roff(option))"), "earshot(1) \(name) lacks \(option)")
        XCTAssertTrue(
          line?.split(separator: "\"")[1].split(separator: " ").contains(Substring(option))
            ?? false,
          "completion of \(name) lacks \(option)")
      }
    }
    // Completion knows only the listed commands (and the hidden docs command not).
    XCTAssertFalse(completion.contains("docs)"))
  }

  func testConfigPageCoversEverySectionAndKeyWithItsDefault() throws {
    let page = try generate("conf")
    XCTAssertGreaterThan(Config.sections.count, 5)
    for table in Config.sections {
      let parts = page.components(separatedBy: ".SS \"[\(Self.roff(table.name))]\"\n")
      XCTAssertEqual(parts.count, 2, "earshot.conf(5) lacks [\(table.name)]")
      let body = parts.last!.components(separatedBy: "\n.SS ")[0]
      for key in table.keys {
        let shown =
          key.defaultValue.isEmpty
          ? "(default empty)" : "(default \\fB\(Self.roff(key.defaultValue))\\fR)"
        XCTAssertTrue(
          body.contains(".B \(Self.roff(key.name))\n\(shown)\n"),
          "earshot.conf(5) [\(table.name)] lacks \(key.name) with default \(key.defaultValue)")
      }
    }
    for key in Config.regionKeys {
      XCTAssertTrue(page.contains(".B \(Self.roff(key.name))\n"), "region key \(key.name) missing")
    }
  }

  func testPackageVersionIsTheBinarys() throws {
    let r = try Earshot.run(["--version"])
    let version = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
      .split(separator: " ").last.map(String.init)
    let changelog = try committed("debian/changelog")
    XCTAssertTrue(
      changelog.hasPrefix("earshot (\(version ?? "?")) "),
      "debian/changelog's first entry must be earshot --version (\(version ?? "?"))")
  }

  /// Minus signs as the generator writes them.
  static func roff(_ s: String) -> String { s.replacingOccurrences(of: "-", with: "\\-") }
}

/// docs/architecture.md's layout names every folder of the core and the
/// shell, each under its own module, and no folder that is gone.
final class ArchitectureDocTests: XCTestCase {
  /// The folders the layout block names under `module`'s line.
  static func documented(_ module: String, in page: String) -> Set<String> {
    guard let layout = page.components(separatedBy: "## Layout")[safe: 1] else { return [] }
    var names: Set<String> = []
    var inModule = false
    for line in layout.split(separator: "\n") {
      if !line.hasPrefix(" ") {
        inModule = line.hasPrefix(module + "/")
        continue
      }
      guard inModule, let word = line.split(separator: " ").first, word.hasSuffix("/") else {
        continue
      }
      names.insert(String(word.dropLast()))
    }
    return names
  }

  func testLayoutNamesEveryFolderOfTheCoreAndTheShell() throws {
    let page = try String(
      contentsOf: DocsTests.repo.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
    for module in ["Sources/EarshotCore", "Sources/EarshotLinux"] {
      let folders = Set(
        try FileManager.default.contentsOfDirectory(
          atPath: DocsTests.repo.appendingPathComponent(module).path)
      )
      let named = Self.documented(module, in: page)
      XCTAssertFalse(folders.isEmpty, module)
      XCTAssertEqual(
        folders.subtracting(named).sorted(), [],
        "folders of \(module) missing from docs/architecture.md's layout (one line each)")
      XCTAssertEqual(
        named.subtracting(folders).sorted(), [],
        "docs/architecture.md's layout names folders \(module) no longer has")
    }
  }

  func testTheLayoutParserSeesAMissingFolder() {
    let page =
      "## Layout\n```\nSources/EarshotCore/    core\n  Bytes/  bytes\n  JSON/ json\nSources/earshot/ cli\n  Nope/ x\n```\n"
    XCTAssertEqual(Self.documented("Sources/EarshotCore", in: page), ["Bytes", "JSON"])
  }
}

extension Array {
  fileprivate subscript(safe i: Int) -> Element? { indices.contains(i) ? self[i] : nil }
}
