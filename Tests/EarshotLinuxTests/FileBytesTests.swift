import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

final class FileBytesTests: XCTestCase {
  func testReadsAWholeFile() throws {
    let path = NSTemporaryDirectory() + "earshot-filebytes-\(getpid())"
    let content = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    try Data(content).write(to: URL(fileURLWithPath: path))
    defer { try? FileManager.default.removeItem(atPath: path) }
    XCTAssertEqual(try FileBytes(path: path).bytes, content)
  }

  func testMissingFileErrorNamesThePathAndTheReason() {
    XCTAssertThrowsError(try FileBytes(path: "/nonexistent/earshot.btsnoop")) { error in
      let text = "\(error)"
      XCTAssertTrue(text.contains("/nonexistent/earshot.btsnoop"), text)
      XCTAssertTrue(text.contains("No such file"), text)
    }
  }

  func testFileStreamReadsAFileInTheCallersPieces() throws {
    let path = NSTemporaryDirectory() + "earshot-filestream-\(getpid())"
    let content = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
    try Data(content).write(to: URL(fileURLWithPath: path))
    defer { try? FileManager.default.removeItem(atPath: path) }
    let stream = try FileStream(path: path)
    var got: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let n = try buffer.withUnsafeMutableBytes { try stream.read(into: $0) }
      XCTAssertLessThanOrEqual(n, 4096)
      if n == 0 { break }
      got += buffer[..<n]
    }
    XCTAssertEqual(got, content)
  }

  func testFileStreamRefusesADirectory() {
    XCTAssertThrowsError(try FileStream(path: NSTemporaryDirectory())) { error in
      XCTAssertTrue("\(error)".contains("Is a directory"), "\(error)")
    }
  }
}
