import Foundation
import XCTest

/// Where the shared conformance data lives: `../shared/data` beside the
/// repository. Missing data skips outside CI and fails in CI (`CI=true`).
enum SharedData {
  static let root: URL = {
    let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent()
      .deletingLastPathComponent()
    return repo.deletingLastPathComponent().appendingPathComponent("shared/data")
  }()

  static func url(_ relative: String) throws -> URL {
    let url = root.appendingPathComponent(relative)
    guard FileManager.default.fileExists(atPath: url.path) else {
      try requireResource("shared test data \(url.path)")
    }
    return url
  }

  static func bytes(_ relative: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: url(relative)))
  }
}

/// Reports a missing resource: a failure in CI, a skip elsewhere.
func requireResource(_ what: String, file: StaticString = #filePath, line: UInt = #line) throws
  -> Never
{
  if ProcessInfo.processInfo.environment["CI"] == "true" {
    XCTFail("missing in CI: \(what)", file: file, line: line)
    throw XCTSkip("failed: missing \(what)")
  }
  throw XCTSkip("skipped: \(what) is not available (this fails in CI)")
}

func hex(_ s: String) -> [UInt8] {
  guard let b = EarshotTestHex.parse(s) else { fatalError("bad hex in test: \(s)") }
  return b
}

enum EarshotTestHex {
  static func parse(_ s: String) -> [UInt8]? {
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
