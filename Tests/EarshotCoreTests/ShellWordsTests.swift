import EarshotTestSupport
import XCTest

@testable import EarshotCore

final class ShellWordsTests: XCTestCase {
  func testSplitsLikeAShellWithoutExpansion() throws {
    XCTAssertEqual(
      try ShellWords.split("/usr/local/bin/lights on"), ["/usr/local/bin/lights", "on"])
    XCTAssertEqual(try ShellWords.split("  a   b\tc  "), ["a", "b", "c"])
    XCTAssertEqual(
      try ShellWords.split(#"say 'hello world' "it's" x\ y"#),
      ["say", "hello world", "it's", "x y"])
    XCTAssertEqual(try ShellWords.split(#"a "b\"c\\d\$e\n" 'f\g'"#), ["a", #"b"c\d$e\n"#, #"f\g"#])
    XCTAssertEqual(
      try ShellWords.split("echo $HOME * ~ ; rm -rf / | x"),
      ["echo", "$HOME", "*", "~", ";", "rm", "-rf", "/", "|", "x"])
    XCTAssertEqual(try ShellWords.split(#"a''b "" ''"#), ["ab", "", ""])
  }

  func testErrors() {
    XCTAssertThrowsError(try ShellWords.split("a 'b"))
    XCTAssertThrowsError(try ShellWords.split("a \"b"))
    XCTAssertThrowsError(try ShellWords.split("a b\\"))
  }

  func testJoinRoundTrips() throws {
    for argv in [["a", "b c", "it's", "", "$x", "*"], ["/bin/lights", "on"]] {
      XCTAssertEqual(try ShellWords.split(ShellWords.join(argv)), argv)
    }
  }
}
