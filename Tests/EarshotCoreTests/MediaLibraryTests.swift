import EarshotCore
import EarshotTestSupport
import XCTest

final class MediaLibraryTests: XCTestCase {
  func testFoldingIgnoresCaseAndAccents() {
    XCTAssertEqual(TextFolding.fold("Café Olé"), "cafe ole")
    XCTAssertEqual(TextFolding.fold("Cafe\u{301}"), "cafe")  // decomposed input
    XCTAssertEqual(TextFolding.fold("ÉLODIE ÅSTRÖM"), "elodie astrom")
    XCTAssertEqual(TextFolding.fold("Łódź"), "lodz")
    XCTAssertEqual(TextFolding.fold("Straße"), "strasse")
    XCTAssertEqual(TextFolding.fold("Ærø"), "aero")
    XCTAssertEqual(TextFolding.fold("Tiếng Việt"), "tieng viet")
    XCTAssertEqual(TextFolding.fold("Ça ira"), "ca ira")
    XCTAssertEqual(TextFolding.fold("ΣΟΦΙΑ"), "σοφια")  // other scripts: lower-cased
    XCTAssertEqual(
      TextFolding.words("Don't Stop Me Now (Remastered 2011)!"),
      ["dont", "stop", "me", "now", "remastered", "2011"])
    XCTAssertEqual(TextFolding.words("  --  "), [])
  }

  private func item(
    _ title: String?, _ artist: String? = nil, path: String? = nil,
    decodable: Bool = true
  ) -> MediaItem {
    MediaItem(
      path: path ?? "/music/\(title ?? "x").flac", title: title, artist: artist,
      decodable: decodable)
  }

  func testTitleFallsBackToFileName() {
    let i = MediaItem(
      path: "/m/Queen/Bohemian Rhapsody.ogg", title: nil, artist: nil, decodable: true)
    XCTAssertEqual(i.title, "Bohemian Rhapsody")
    XCTAssertEqual(
      MediaItem(path: "/m/a.b/.hidden", title: "  ", artist: "", decodable: true).title,
      ".hidden")
    XCTAssertNil(MediaItem(path: "/m/x.wav", title: "T", artist: " ", decodable: true).artist)
    XCTAssertTrue(MediaItem.isAudioFile("/a/B.FLAC"))
    XCTAssertFalse(MediaItem.isAudioFile("/a/cover.jpg"))
    XCTAssertFalse(MediaItem.isAudioFile("/a/README"))
  }

  func testBestMatchFirst() {
    let lib = MediaLibrary([
      item("Hey Jude (Remastered)", "The Beatles"),
      item("Hey Jude", "The Beatles"),
      item("Hey", "Pixies"),
      item("Jude the Obscure"),
      item("Heyday"),
    ])
    XCTAssertEqual(lib.best("hey jude")?.item.title, "Hey Jude")
    XCTAssertEqual(lib.best("hey jude")?.tier, .exact)
    XCTAssertEqual(
      lib.search("hey jude").map(\.item.title),
      [
        "Hey Jude", "Hey Jude (Remastered)",
      ])
    XCTAssertEqual(lib.best("HEY")?.item.title, "Hey")
    XCTAssertEqual(
      lib.search("hey").map(\.item.title),
      [
        "Hey", "Hey Jude", "Heyday", "Hey Jude (Remastered)",
      ])
    XCTAssertEqual(lib.best("hey ju")?.tier, .titlePrefix)
    XCTAssertEqual(lib.best("jude hey")?.tier, .titleWords)
    XCTAssertEqual(lib.best("the beatles hey jude")?.item.title, "Hey Jude")
    XCTAssertEqual(lib.best("hey jude the beatles")?.tier, .artistAndTitle)
    XCTAssertEqual(lib.best("pixies")?.item.title, "Hey")
    XCTAssertEqual(lib.best("pixies")?.tier, .anywhere)
    XCTAssertNil(lib.best("yesterday"))
    XCTAssertNil(lib.best("hey yesterday"))
    XCTAssertNil(lib.best("!!"))
    XCTAssertTrue(lib.search("hey").map(\.score) == lib.search("hey").map(\.score).sorted(by: >))
  }

  func testAccentInsensitiveBothWays() {
    let lib = MediaLibrary([item("Für Elise", "Beethoven"), item("Gymnopédie No. 1")])
    XCTAssertEqual(lib.best("fur elise")?.item.title, "Für Elise")
    XCTAssertEqual(lib.best("FÜR ELISE")?.tier, .exact)
    XCTAssertEqual(lib.best("gymnopedie no 1")?.tier, .exact)
    let plain = MediaLibrary([item("Gymnopedie")])
    XCTAssertEqual(plain.best("Gymnopédie")?.tier, .exact)
  }

  func testFileNameWordsMatch() {
    let lib = MediaLibrary([
      MediaItem(path: "/m/03 Tone A440.wav", title: "Calibration", artist: nil, decodable: true)
    ])
    XCTAssertEqual(lib.best("a440")?.tier, .anywhere)
    XCTAssertEqual(lib.best("calibration")?.tier, .exact)
  }

  func testTiesAreStable() {
    let lib = MediaLibrary([
      item("Song", path: "/b/Song.flac"), item("Song", path: "/a/Song.flac"),
    ])
    XCTAssertEqual(lib.search("song").map(\.item.path), ["/a/Song.flac", "/b/Song.flac"])
  }
}
