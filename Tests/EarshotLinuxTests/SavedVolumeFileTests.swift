import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

final class SavedVolumeFileTests: XCTestCase {
  func testSaveIsWholeAtOnceAndDurableOnRequest() throws {
    let dir = NSTemporaryDirectory() + "earshot-saved-\(getpid())/state"
    defer { try? FileManager.default.removeItem(atPath: dir + "/..") }
    let file = SavedVolumeFile(directory: dir)
    XCTAssertNil(try file.load())
    XCTAssertFalse(file.makeDurable(), "nothing saved yet")
    try file.save(VolumeSetting(level: 0.3, muted: true))
    XCTAssertEqual(try file.load(), VolumeSetting(level: 0.3, muted: true))
    XCTAssertFalse(FileManager.default.fileExists(atPath: file.path + ".tmp"))
    try file.save(VolumeSetting(level: 0.8, muted: false))
    XCTAssertTrue(file.makeDurable())
    XCTAssertEqual(try file.load(), VolumeSetting(level: 0.8, muted: false))
    file.remove()
    XCTAssertNil(try file.load())
  }
}
