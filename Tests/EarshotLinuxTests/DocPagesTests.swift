import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// The documentation's examples are true: README.md and every docs/*.md page
/// are read, and each fenced block whose info string carries the word `test`
/// is checked (docs/testing.md, "Checked documentation", says how to write one):
///
/// - `console test`: each `$ COMMAND` line runs with `sh` in the page's
///   working directory, against the built binary, and what it prints (stdout
///   and stderr) must be the lines that follow. `...` alone on a line stands
///   for any number of lines, `...` within a line for any text;
///   `(exit status N)` as the last line expects that status (else 0). A
///   command ending in ` &` runs in the background until the block ends.
/// - `ini test`: parsed and validated with the real config parser; no errors.
/// - `link test`: a BLE link exchange (`device → write HEX`, `Earshot → notify
///   HEX`) decoded with the link codec (docs/link-protocol.md).
/// - `file=NAME` (with or without `test`): the block is also written to NAME
///   in the working directory, for the commands after it.
///
/// Every page has a working directory of its own (a temporary directory with
/// links to the checkout's captures/, scenarios/, sounds/ and etc/) and a
/// hermetic environment: HOME and the XDG directories inside it,
/// EARSHOT_CONFIG=/dev/null, TZ=UTC, no session bus. Blocks run in page order,
/// so a file made by one block is there for the next.
final class DocPagesTests: XCTestCase {
  static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

  /// README.md and docs/*.md, as paths relative to the checkout.
  static func pages() throws -> [String] {
    let docs = try FileManager.default.contentsOfDirectory(
      atPath: repo.appendingPathComponent("docs").path)
    return ["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
  }

  static func read(_ page: String) throws -> String {
    try String(contentsOf: repo.appendingPathComponent(page), encoding: .utf8)
  }

  // MARK: - The index and the links

  /// Adding a page is one line in README.md's index; a page not listed
  /// there cannot be found, so it fails here.
  func testEveryPageIsInTheReadmeIndex() throws {
    let readme = try Self.read("README.md")
    let linked = Set(MarkdownPage(readme).links.map { $0.split(separator: "#")[0] })
    let pages = try Self.pages().dropFirst()
    XCTAssertGreaterThan(pages.count, 10)
    for page in pages {
      XCTAssertTrue(linked.contains(Substring(page)), "README.md's index lacks \(page)")
    }
  }

  /// Every relative link (a file, a file#anchor, or #anchor) points at a file
  /// that exists and, for an anchor, at a heading of that page.
  func testEveryRelativeLinkResolves() throws {
    var checked = 0
    for page in try Self.pages() {
      let base = URL(fileURLWithPath: page).deletingLastPathComponent().relativePath
      for link in MarkdownPage(try Self.read(page)).links {
        if link.contains("://") || link.hasPrefix("mailto:") { continue }
        checked += 1
        let parts = link.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        let file =
          parts[0].isEmpty
          ? page
          : URL(fileURLWithPath: base == "." ? String(parts[0]) : base + "/" + parts[0])
            .standardized.relativePath
        let path = Self.repo.appendingPathComponent(file).path
        guard FileManager.default.fileExists(atPath: path) else {
          XCTFail("\(page): the link \(link) points at \(file), which does not exist")
          continue
        }
        guard parts.count == 2 else { continue }
        let anchors = MarkdownPage(try Self.read(file)).anchors
        XCTAssertTrue(
          anchors.contains(String(parts[1])),
          "\(page): the link \(link) names no heading of \(file) (it has \(anchors.sorted()))")
      }
    }
    XCTAssertGreaterThan(checked, 30, "the links were not found")
  }

  func testAnchorsAreGitHubs() {
    let page = MarkdownPage(
      "# Faults and what you see\n## `earshot scan`\n## Install\n```\n## not a heading\n```\n## Install\n"
        + "## `earshot simulate scenario --spec FILE [--truth T]`\n## Bonded devices' private addresses\n"
    )
    XCTAssertEqual(
      page.anchors,
      [
        "faults-and-what-you-see", "earshot-scan", "install", "install-1",
        "earshot-simulate-scenario---spec-file---truth-t", "bonded-devices-private-addresses",
      ])
    XCTAssertEqual(
      MarkdownPage("See [a](docs/x.md#y) and `[b](no.md)`, [c](#z).\n```\n[d](e.md)\n```\n").links,
      ["docs/x.md#y", "#z"])
  }

  /// Every command `earshot --help` lists has a row in docs/commands.md's
  /// index (rows name several commands as `earshot a`, `b`, `c`).
  func testEveryCommandIsInTheCommandIndex() throws {
    let help = try runEarshot(["--help"]).out
    let names = help.components(separatedBy: "Commands:\n")[1].components(separatedBy: "\n\n")[0]
      .split(separator: "\n").map { String($0.split(separator: " ")[0]) }
    XCTAssertGreaterThan(names.count, 10, "the command list was not parsed")
    let rows = try Self.read("docs/commands.md").split(separator: "\n")
      .filter { $0.hasPrefix("| `earshot ") }.map { $0.split(separator: "|")[0] }
    for name in names {
      XCTAssertTrue(
        rows.contains { $0.contains("`earshot \(name)`") || $0.contains(", `\(name)`") },
        "docs/commands.md's index lacks earshot \(name)")
    }
  }

  // MARK: - The examples

  /// Every page has examples that a test checks, unless it says why it
  /// cannot (`<!-- examples: none (REASON) -->`).
  func testEveryPageHasCheckedExamples() throws {
    for page in try Self.pages() {
      let text = try Self.read(page)
      let checked = MarkdownPage(text).blocks.filter(\.checked).count
      let optOut = text.split(separator: "\n").contains { $0.hasPrefix("<!-- examples: none (") }
      if optOut {
        XCTAssertEqual(checked, 0, "\(page) says it has no examples but has \(checked)")
      } else {
        XCTAssertGreaterThan(
          checked, 0,
          "\(page) has no checked example: tag one (docs/testing.md#checked-documentation) "
            + "or say why not with <!-- examples: none (REASON) -->")
      }
    }
  }

  func testExamplesOfEveryPage() throws {
    var blocks = 0
    for page in try Self.pages() {
      let examples = MarkdownPage(try Self.read(page)).blocks
      guard examples.contains(where: { $0.checked || $0.file != nil }) else { continue }
      let runner = try ExampleRunner(page: page, repo: Self.repo)
      defer { runner.finish() }
      for block in examples where block.checked || block.file != nil {
        blocks += 1
        try runner.check(block)
      }
    }
    XCTAssertGreaterThan(blocks, 15)
  }

  /// The checker itself fails where it should.
  func testOutputMatching() {
    XCTAssertTrue(ExampleRunner.matches(["a", "...", "d"], ["a", "b", "c", "d"]))
    XCTAssertTrue(ExampleRunner.matches(["a", "...", "b"], ["a", "b"]))
    XCTAssertFalse(ExampleRunner.matches(["a", "...", "d"], ["a", "b", "c"]))
    XCTAssertTrue(ExampleRunner.matches(["{\"x\":1,...}"], ["{\"x\":1,\"y\":2}"]))
    XCTAssertFalse(ExampleRunner.matches(["{\"x\":1,...}"], ["{\"x\":2,\"y\":2}"]))
    XCTAssertTrue(ExampleRunner.matches(["sounds directory: ..."], ["sounds directory: /a/b"]))
    XCTAssertFalse(ExampleRunner.matches(["a"], ["a", "b"]))
    XCTAssertTrue(ExampleRunner.matches(["a b"], ["a b   "]), "trailing spaces do not count")
  }
}

/// What a test needs of a Markdown page: fenced blocks, headings, links.
struct MarkdownPage {
  struct Block {
    let info: [String]  // the info string's words: language, then attributes
    let lines: [String]
    let line: Int  // of the opening fence, 1-based
    var checked: Bool { info.dropFirst().contains("test") }
    var language: String { info.first ?? "" }
    var file: String? {
      info.first { $0.hasPrefix("file=") }.map { String($0.dropFirst(5)) }
    }
  }
  var blocks: [Block] = []
  var anchors: [String] = []
  var links: [String] = []

  init(_ text: String) {
    var open: (info: [String], line: Int, indent: Int, lines: [String])?
    var counts: [String: Int] = [:]
    for (i, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
      let trimmed = line.trimmingCharacters(in: .whitespaces)
      if trimmed.hasPrefix("```") {
        if let o = open {
          blocks.append(Block(info: o.info, lines: o.lines, line: o.line))
          open = nil
        } else {
          let indent = line.prefix { $0 == " " }.count
          open = (trimmed.dropFirst(3).split(separator: " ").map(String.init), i + 1, indent, [])
        }
        continue
      }
      if let indent = open?.indent {
        // A block in a list item: its lines are indented as its fence is.
        let spaces = min(indent, line.prefix { $0 == " " }.count)
        open!.lines.append(String(line.dropFirst(spaces)))
        continue
      }
      if line.hasPrefix("#"), let space = line.firstIndex(of: " "),
        line[..<space].allSatisfy({ $0 == "#" })
      {
        let slug = Self.slug(String(line[space...]))
        let n = counts[slug, default: 0]
        counts[slug] = n + 1
        anchors.append(n == 0 ? slug : "\(slug)-\(n)")
      }
      links += Self.links(in: String(line))
    }
  }

  /// GitHub's heading anchors: lower case, punctuation but `-` and `_`
  /// dropped, spaces turned into `-`.
  static func slug(_ heading: String) -> String {
    var out = ""
    for c in heading.trimmingCharacters(in: .whitespaces).lowercased() {
      if c == " " {
        out.append("-")
      } else if c.isLetter || c.isNumber || c == "-" || c == "_" {
        out.append(c)
      }
    }
    return out
  }

  /// `[text](target)` outside code spans.
  static func links(in line: String) -> [String] {
    var out: [String] = []
    var inCode = false
    var i = line.startIndex
    while i < line.endIndex {
      let c = line[i]
      if c == "`" {
        inCode.toggle()
      } else if !inCode, c == "]", line[line.index(after: i)...].hasPrefix("(") {
        let start = line.index(i, offsetBy: 2)
        if let end = line[start...].firstIndex(of: ")") {
          let target = String(line[start..<end])
          if !target.contains(" ") { out.append(target) }
          i = end
        }
      }
      i = line.index(after: i)
    }
    return out
  }
}

/// Runs one page's example blocks in its own working directory.
final class ExampleRunner {
  let page: String
  let directory: String
  private let environment: [String: String]
  private var background: [Process] = []

  init(page: String, repo: URL) throws {
    self.page = page
    directory = try makeTempDirectory()
    let fm = FileManager.default
    for item in ["captures", "scenarios", "sounds", "etc"] {
      try fm.createSymbolicLink(
        atPath: directory + "/" + item, withDestinationPath: repo.appendingPathComponent(item).path)
    }
    let home = directory + "/home"
    for d in [home + "/.config", home + "/.local/state", directory + "/run"] {
      try fm.createDirectory(atPath: d, withIntermediateDirectories: true)
    }
    let bin = URL(fileURLWithPath: try earshotBinary()).deletingLastPathComponent().path
    environment = Earshot.environment([
      // /usr/sbin: mosquitto, for a user whose PATH lacks it.
      "PATH": bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        + ":/usr/sbin:/sbin",
      "HOME": home, "XDG_CONFIG_HOME": home + "/.config", "XDG_STATE_HOME": home + "/.local/state",
      "XDG_RUNTIME_DIR": directory + "/run", "TZ": "UTC", "LC_ALL": "C.UTF-8",
      "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(directory)/no-bus",
    ])
  }

  /// Stops what runs in the background and removes the directory.
  func finish() {
    for p in background where p.isRunning {
      p.terminate()
      p.waitUntilExit()
    }
    background = []
    try? FileManager.default.removeItem(atPath: directory)
  }

  func check(_ block: MarkdownPage.Block) throws {
    let place = "\(page):\(block.line)"
    if let name = block.file {
      try (block.lines.joined(separator: "\n") + "\n").write(
        toFile: directory + "/" + name, atomically: true, encoding: .utf8)
    }
    guard block.checked else { return }
    switch block.language {
    case "console": try runCommands(block, place)
    case "ini": checkConfig(block, place)
    case "link": checkLinkExchange(block, place)
    default: XCTFail("\(place): no checker for a '\(block.language)' block")
    }
  }

  // MARK: ini

  private func checkConfig(_ block: MarkdownPage.Block, _ place: String) {
    let doc = IniReader.parse(block.lines.joined(separator: "\n") + "\n", file: place)
    do {
      _ = try Config.build(doc)
    } catch {
      XCTFail("\(place): the config example is not valid: \(error)")
    }
  }

  // MARK: link

  /// Writes must decode (or fail with the ATT error the line names);
  /// notifications must decode, and a response must answer the last write
  /// (its opcode with the top bit set, its seq).
  private func checkLinkExchange(_ block: MarkdownPage.Block, _ place: String) {
    var lastWrite: LinkRequestFrame?
    var frames = 0
    for line in block.lines {
      let words = line.split(separator: " ", omittingEmptySubsequences: true)
      guard words.count >= 3, words[1] == "→", words[2] == "write" || words[2] == "notify" else {
        continue
      }
      let rest = line.components(separatedBy: words[2] + " ").dropFirst().joined(
        separator: words[2] + " "
      ).trimmingCharacters(in: .whitespaces)
      let hex = rest.components(separatedBy: "  ")[0]
      guard let bytes = EarshotTestHex.parse(hex) else {
        XCTFail("\(place): '\(hex)' is not hex bytes")
        continue
      }
      frames += 1
      if words[2] == "write" {
        let expectedATT = rest.range(of: "ATT error 0x").flatMap {
          UInt8(rest[$0.upperBound...].prefix(2), radix: 16)
        }
        switch LinkCodec.decodeRequest(bytes) {
        case .success(let frame):
          XCTAssertNil(expectedATT, "\(place): \(hex) decodes as \(frame), not an ATT error")
          lastWrite = frame
        case .failure(let error):
          XCTAssertEqual(
            expectedATT, error.attErrorCode, "\(place): \(hex) is refused: \(error)")
          lastWrite = nil
        }
      } else {
        switch LinkCodec.decodeIncoming(bytes) {
        case .success(.response(let r)):
          XCTAssertEqual(r.opcode, lastWrite?.request.opcode, "\(place): \(hex) answers no write")
          XCTAssertEqual(r.seq, lastWrite?.seq, "\(place): \(hex) has another seq")
        case .success(.notification): break
        case .failure(let error): XCTFail("\(place): \(hex) does not decode: \(error)")
        }
      }
    }
    XCTAssertGreaterThan(frames, 0, "\(place): no frames in the exchange")
  }

  // MARK: console

  private func runCommands(_ block: MarkdownPage.Block, _ place: String) throws {
    var steps: [(command: String, expected: [String])] = []
    for line in block.lines {
      if line.hasPrefix("$ ") {
        steps.append((String(line.dropFirst(2)), []))
      } else if !steps.isEmpty {
        steps[steps.count - 1].expected.append(line)
      } else {
        XCTFail("\(place): output before the first '$ ' command")
      }
    }
    XCTAssertFalse(steps.isEmpty, "\(place): no '$ ' command")
    for (command, expectedLines) in steps {
      var expected = expectedLines
      while expected.last?.isEmpty == true { expected.removeLast() }
      var status: Int32 = 0
      if let last = expected.last, last.hasPrefix("(exit status "), last.hasSuffix(")"),
        let n = Int32(last.dropFirst(13).dropLast())
      {
        status = n
        expected.removeLast()
      }
      if command.hasSuffix(" &") {
        try startInBackground(String(command.dropLast(2)), place)
        continue
      }
      let r = try run(command)
      var got = r.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
      if got.last == "" { got.removeLast() }
      XCTAssertEqual(r.status, status, "\(place): `\(command)` exited \(r.status):\n\(r.output)")
      XCTAssertTrue(
        Self.matches(expected, got),
        "\(place): `\(command)` printed\n\(got.joined(separator: "\n"))\n"
          + "but the page shows\n\(expected.joined(separator: "\n"))")
    }
    for p in background where p.isRunning {
      p.terminate()
      p.waitUntilExit()
    }
    background = []
  }

  /// `sh -c COMMAND`; with `limit`, under coreutils' timeout, which kills
  /// the whole process group (a pipeline too) when the time is up.
  private func shell(_ command: String, limit seconds: Int? = nil) -> Process {
    let p = Process()
    let sh = ["/bin/sh", "-c", "exec 2>&1; " + command]
    if let seconds {
      p.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
      p.arguments = ["\(seconds)"] + sh
    } else {
      p.executableURL = URL(fileURLWithPath: sh[0])
      p.arguments = Array(sh.dropFirst())
    }
    p.currentDirectoryURL = URL(fileURLWithPath: directory)
    p.environment = environment
    return p
  }

  /// Runs to completion (at most 60 s), stdout and stderr as one stream.
  private func run(_ command: String) throws -> (status: Int32, output: String) {
    let p = shell(command, limit: 60)
    let out = Pipe()
    p.standardOutput = out
    p.standardInput = FileHandle.nullDevice
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    let output = String(decoding: data, as: UTF8.self)
    // 124: timeout's status when the time ran out.
    XCTAssertNotEqual(p.terminationStatus, 124, "`\(command)` ran for 60 s:\n\(output)")
    return (p.terminationStatus, output)
  }

  /// Starts `command` and waits (up to 10 s) until it has printed a line
  /// and, if it names one with `--socket PATH`, its socket exists.
  private func startInBackground(_ command: String, _ place: String) throws {
    let log = directory + "/background-\(background.count).log"
    _ = FileManager.default.createFile(atPath: log, contents: nil)
    let p = shell("exec " + command)
    p.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
    p.standardInput = FileHandle.nullDevice
    try p.run()
    background.append(p)
    let words = command.split(separator: " ").map(String.init)
    let socket = words.firstIndex(of: "--socket").flatMap {
      $0 + 1 < words.count ? directory + "/" + words[$0 + 1] : nil
    }
    let deadline = Date().addingTimeInterval(10)
    while Date() < deadline {
      let printed = (try? String(contentsOfFile: log, encoding: .utf8))?.contains("\n") ?? false
      let listening = socket.map { FileManager.default.fileExists(atPath: $0) } ?? true
      if printed && listening { return }
      guard p.isRunning else { break }
      usleep(20_000)
    }
    let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
    XCTFail("\(place): `\(command)` did not get ready in the background:\n\(output)")
  }

  /// `expected` against `got`, line by line: `...` alone matches any number
  /// of lines, `...` in a line any text; trailing spaces do not count.
  static func matches(_ expected: [String], _ got: [String]) -> Bool {
    func strip(_ s: String) -> Substring {
      s[..<(s.lastIndex { $0 != " " }.map { s.index(after: $0) } ?? s.startIndex)]
    }
    func lineMatches(_ pattern: String, _ line: String) -> Bool {
      let parts = strip(pattern).components(separatedBy: "...")
      let text = strip(line)
      guard parts.count > 1 else { return parts[0] == text }
      guard text.hasPrefix(parts[0]), text.hasSuffix(parts.last!),
        text.count >= parts[0].count + parts.last!.count
      else { return false }
      var rest = text.dropFirst(parts[0].count).dropLast(parts.last!.count)
      for middle in parts.dropFirst().dropLast() where !middle.isEmpty {
        guard let r = rest.range(of: middle) else { return false }
        rest = rest[r.upperBound...]
      }
      return true
    }
    func match(_ e: ArraySlice<String>, _ g: ArraySlice<String>) -> Bool {
      guard let first = e.first else { return g.isEmpty }
      if first == "..." {
        return (0...g.count).contains { match(e.dropFirst(), g.dropFirst($0)) }
      }
      guard let line = g.first, lineMatches(first, line) else { return false }
      return match(e.dropFirst(), g.dropFirst())
    }
    return match(expected[...], got[...])
  }
}
