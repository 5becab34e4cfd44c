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

  /// A power loss between the rename and the sync can leave an empty file:
  /// it means nothing was saved, not a corrupt state.
  func testAnEmptyFileIsNoSavedVolume() throws {
    let dir = NSTemporaryDirectory() + "earshot-saved-empty-\(getpid())"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let file = SavedVolumeFile(directory: dir)
    _ = FileManager.default.createFile(atPath: file.path, contents: Data())
    XCTAssertNil(try file.load())
    XCTAssertFalse(FileManager.default.fileExists(atPath: file.path), "removed")
    try "garbage".write(toFile: file.path, atomically: true, encoding: .utf8)
    XCTAssertThrowsError(try file.load(), "a file with other text is still an error")
  }
}
