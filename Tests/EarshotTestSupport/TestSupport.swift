import Foundation
import XCTest

/// Helpers shared by the test targets.

/// Where the shared conformance data lives: `../shared/data` beside the
/// repository. Missing data skips outside CI and fails in CI (`CI=true`).
public enum SharedData {
  public static let root: URL = {
    let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent()
      .deletingLastPathComponent()
    return repo.deletingLastPathComponent().appendingPathComponent("shared/data")
  }()

  public static func url(_ relative: String) throws -> URL {
    let url = root.appendingPathComponent(relative)
    guard FileManager.default.fileExists(atPath: url.path) else {
      try requireResource("shared test data \(url.path)")
    }
    return url
  }

  public static func bytes(_ relative: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: url(relative)))
  }
}

/// Reports a missing resource: a failure in CI, a skip elsewhere.
public func requireResource(_ what: String, file: StaticString = #filePath, line: UInt = #line)
  throws
  -> Never
{
  if ProcessInfo.processInfo.environment["CI"] == "true" {
    XCTFail("missing in CI: \(what)", file: file, line: line)
    throw XCTSkip("failed: missing \(what)")
  }
  throw XCTSkip("skipped: \(what) is not available (this fails in CI)")
}

public func hex(_ s: String) -> [UInt8] {
  guard let b = EarshotTestHex.parse(s) else { fatalError("bad hex in test: \(s)") }
  return b
}

public enum EarshotTestHex {
  public static func parse(_ s: String) -> [UInt8]? {
    var out = [UInt8]()
    var chars = Array(s.utf8.filter { $0 != 32 })
    guard chars.count % 2 == 0 else { return nil }
    while !chars.isEmpty {
      guard let b = UInt8(String(decoding: chars.prefix(2), as: UTF8.self), radix: 16) else {
        return nil
      }
      out.append(b)
      chars.removeFirst(2)
    }
    return out
  }
}

/// The built `earshot` binary, next to the test bundle in .build/<config>/.
public enum Earshot {
  public static let binary: String = {
    let dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for candidate in [dir, dir.deletingLastPathComponent()] {
      let path = candidate.appendingPathComponent("earshot").path
      if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return ".build/debug/earshot"
  }()

  public struct Result {
    public let status: Int32
    public let stdout: String
    public let stderr: String
  }

  /// What a command started by a test sees instead of the host's config:
  /// without --config, earshot reads $EARSHOT_CONFIG, here an empty file, and
  /// never /etc/earshot/earshot.conf or the user's (even when run as root).
  public static let hermeticEnvironment = ["EARSHOT_CONFIG": "/dev/null"]

  /// The environment of a child: this process's, with `hermeticEnvironment`
  /// and then `extra` laid over it.
  public static func environment(_ extra: [String: String] = [:]) -> [String: String] {
    ProcessInfo.processInfo.environment.merging(hermeticEnvironment) { $1 }.merging(extra) { $1 }
  }

  /// Runs a command to completion and captures its output (in the
  /// `environment(extra)`).
  public static func run(
    _ args: [String], executable: String = Earshot.binary, stdin: String? = nil,
    environment extra: [String: String] = [:]
  )
    throws -> Result
  {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = args
    p.environment = environment(extra)
    let out = Pipe()
    // stderr goes to a file so a chatty child can never fill a second pipe.
    let errPath = NSTemporaryDirectory() + "earshot-stderr-\(UUID().uuidString)"
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    defer { try? FileManager.default.removeItem(atPath: errPath) }
    let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
    p.standardOutput = out
    p.standardError = err
    let input = Pipe()
    p.standardInput = input
    try p.run()
    try err.close()
    if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
    try input.fileHandleForWriting.close()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    let errData = (try? Data(contentsOf: URL(fileURLWithPath: errPath))) ?? Data()
    return Result(
      status: p.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
      stderr: String(decoding: errData, as: UTF8.self))
  }

  public static func tool(_ name: String) -> String? {
    for dir in ["/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin"] {
      let path = "\(dir)/\(name)"
      if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
  }
}

/// A private D-Bus daemon for one test. Its address is the one dbus-daemon
/// prints once it is listening (a socket file can exist before that, and a
/// connect to it then is refused). Stopped by `stop()` or when released.
public final class PrivateBus {
  public let address: String
  private let process: Process
  private var configFile: String?

  /// `activation` false: the bus starts no service on demand (the host's
  /// session services, such as an installed notification server, stay out).
  public init(activation: Bool = true, file: StaticString = #filePath, line: UInt = #line) throws {
    guard let daemon = Earshot.tool("dbus-daemon") else {
      try requireResource("dbus-daemon (package dbus-daemon)", file: file, line: line)
    }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: daemon)
    p.arguments = ["--session", "--nofork", "--nopidfile", "--print-address=1"]
    if !activation {
      let path = NSTemporaryDirectory() + "earshot-bus-\(UUID().uuidString).conf"
      try """
      <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
       "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
      <busconfig>
        <type>session</type>
        <listen>unix:tmpdir=\(NSTemporaryDirectory())</listen>
        <auth>EXTERNAL</auth>
        <policy context="default">
          <allow send_destination="*" eavesdrop="true"/>
          <allow eavesdrop="true"/>
          <allow own="*"/>
        </policy>
      </busconfig>
      """.write(toFile: path, atomically: true, encoding: .utf8)
      configFile = path
      p.arguments = ["--config-file=\(path)", "--nofork", "--nopidfile", "--print-address=1"]
    }
    let out = Pipe()
    p.standardOutput = out
    try p.run()
    let text = String(decoding: firstLine(of: out), as: UTF8.self)
      .trimmingCharacters(in: .whitespacesAndNewlines)
    guard text.hasPrefix("unix:") else {
      p.terminate()
      XCTFail("dbus-daemon printed no address: \(text)", file: file, line: line)
      throw XCTSkip("failed: no private bus")
    }
    address = text
    process = p
  }

  public func stop() {
    if let configFile { try? FileManager.default.removeItem(atPath: configFile) }
    configFile = nil
    guard process.isRunning else { return }
    process.terminate()
    process.waitUntilExit()
  }

  deinit { stop() }
}

/// What a child process writes to `pipe` up to its first newline (without
/// it), waiting for it; everything it wrote if it closes the pipe first.
public func firstLine(of pipe: Pipe) -> Data {
  var data = Data()
  while !data.contains(0x0A) {
    let chunk = pipe.fileHandleForReading.availableData
    if chunk.isEmpty { break }
    data.append(chunk)
  }
  return data.prefix { $0 != 0x0A }
}
