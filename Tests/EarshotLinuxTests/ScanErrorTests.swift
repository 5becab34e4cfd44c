import EarshotCore
import EarshotLinux
import XCTest

/// What each `ScanError` means to the supervisor: which state the user sees
/// while waiting, and what fails a first start even when waiting.
final class ScanErrorTests: XCTestCase {
  func testEachErrorMapsToItsFailureKind() {
    let cases: [(ScanError, ScanFailure.Kind)] = [
      (.noAdapter, .noAdapter),
      (.noSuchAdapter("hci7", available: ["hci0"]), .gone),
      (.adapterGone("hci0"), .gone),
      (.adapterDown("hci0"), .down),
      (.missingCapability("hci0", needs: "CAP_NET_RAW", during: "x"), .permanent),
      (.badAdapterName("usb0"), .permanent),
      (
        .commandFailed("hci0", .leSetScanEnable, .unknownCommand),
        .refused(.leSetScanEnable, .unknownCommand)
      ),
      (.timeout("hci0", .leSetScanEnable), .other),
      (.blocked("hci0"), .other),
    ]
    for (error, kind) in cases {
      XCTAssertEqual(error.failure.kind, kind, "\(error)")
      XCTAssertEqual(error.failure.reason, error.description)
    }
  }
}
