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
}
