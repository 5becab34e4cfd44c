import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// The media driver on a real event loop with real players: concurrent
/// requests and timeouts each get exactly one completion.
final class MediaDriverTests: XCTestCase {
  private var savedBus: String?

  override func setUp() {
    savedBus = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"]
  }

  /// A stale bus address must not outlive the test: libpulse clients
  /// started later (the recorded playback test) misbehave with one.
  override func tearDown() {
    if let savedBus {
      setenv("DBUS_SESSION_BUS_ADDRESS", savedBus, 1)
    } else {
      unsetenv("DBUS_SESSION_BUS_ADDRESS")
    }
  }

  /// A private session bus with no MPRIS player on it, for dbus-send.
  private func sessionBus() throws -> PrivateBus {
    guard Earshot.tool("dbus-send") != nil else {
      try requireResource("dbus-send (package dbus-bin)")
    }
    let bus = try PrivateBus()
    setenv("DBUS_SESSION_BUS_ADDRESS", bus.address, 1)
    return bus
  }

  private func library() -> MediaLibrary {
    MediaLibrary([
      MediaItem(path: "/music/Song.flac", title: "Song", artist: nil, decodable: true),
      MediaItem(path: "/music/Other Song.flac", title: "Other Song", artist: nil, decodable: true),
    ])
  }

  /// Runs the loop until `count` completions arrived (and a little longer
  /// to catch any second one), bounded by a safety timer.
  private func collect(
    _ loop: EventLoop, _ driver: MediaDriver, count: Int, start: () -> [MediaRequestID]
  ) throws -> ([MediaRequestID], [MediaRequestID: [MediaResponse]]) {
    var got: [MediaRequestID: [MediaResponse]] = [:]
    var total = 0
    driver.onCompletion = { id, response, _ in
      got[id, default: []].append(response)
      total += 1
      if total == count {
        loop.after(seconds: 1.0) { loop.stop() }  // late results would show up here
      }
    }
    loop.after(seconds: 20) { loop.stop() }
    let ids = start()
    try loop.run()
    return (ids, got)
  }

  func testConcurrentRequestsEachGetOneCompletion() throws {
    let bus = try sessionBus()
    defer { bus.stop() }
    let loop = try EventLoop()
    var settings = MediaConfig()
    settings.player = "org.mpris.MediaPlayer2.earshottestabsent"
    settings.timeout = 5
    let driver = MediaDriver(settings: settings, library: library(), loop: loop)
    let (ids, got) = try collect(loop, driver, count: 4) {
      [
        driver.request(title: "song"),  // pending: dbus-send runs
        driver.request(title: "other song"),  // busy
        driver.request(title: "nothing"),  // notFound
        driver.request(title: "song"),  // busy
      ]
    }
    XCTAssertEqual(got[ids[0]], [.playerNotRunning])
    XCTAssertEqual(got[ids[1]], [.busy])
    XCTAssertEqual(got[ids[2]], [.notFound])
    XCTAssertEqual(got[ids[3]], [.busy])
    XCTAssertEqual(got.count, 4)
    // Once the first completed, a new request is served again.
    let (again, got2) = try collect(loop, driver, count: 1) { [driver.request(title: "song")] }
    XCTAssertEqual(got2[again[0]], [.playerNotRunning])
  }

  func testTimeoutCompletesOnceAndTheLateResultIsDropped() throws {
    let bus = try sessionBus()
    defer { bus.stop() }
    let loop = try EventLoop()
    var settings = MediaConfig()
    settings.player = "org.mpris.MediaPlayer2.earshottestabsent"
    // Shorter than dbus-send can even start: the deadline always wins, and
    // dbus-send's answer (playerNotRunning) arrives after it.
    settings.timeout = 0.000_001
    let driver = MediaDriver(settings: settings, library: library(), loop: loop)
    var logs: [String] = []
    driver.onLog = { logs.append($0) }
    let (ids, got) = try collect(loop, driver, count: 2) {
      [driver.request(title: "song"), driver.request(title: "other song")]
    }
    XCTAssertEqual(got[ids[0]], [.timeout])
    XCTAssertEqual(got[ids[1]], [.busy])
    XCTAssertTrue(
      logs.contains { $0.contains("late failure ignored") }, logs.joined(separator: "\n"))
  }

  func testAlsaPlayerCompletesWhenTheFirstAudioIsWritten() throws {
    try PulseServer.require()
    let lib = try MediaFixtures.library()
    let loop = try EventLoop()
    let scan = MediaScanner.scan(lib)
    XCTAssertEqual(scan.library.items.count, 4)
    XCTAssertEqual(scan.library.items.filter(\.decodable).count, 3)
    let driver = MediaDriver(settings: MediaConfig(), library: scan.library, loop: loop)
    let (ids, got) = try collect(loop, driver, count: 3) {
      [
        driver.request(title: "morning sun"),  // success at once (first write)
        driver.request(title: "a440"),  // replaces it: success too
        driver.request(title: "tune"),  // unsupportedMediaType
      ]
    }
    XCTAssertEqual(got[ids[0]], [.success])
    XCTAssertEqual(got[ids[1]], [.success])
    XCTAssertEqual(got[ids[2]], [.unsupportedMediaType])
    if case .playing(_, let item) = driver.phase {
      XCTAssertEqual(item.title, "A440 Tone")
    } else {
      XCTFail("not playing: \(driver.phase)")
    }
    driver.stop()
    XCTAssertEqual(driver.phase, .idle)
  }

  func testBusyAlsaDeviceIsBusyOrFailureNamedInTheLog() throws {
    let lib = try MediaFixtures.library()
    let loop = try EventLoop()
    var settings = MediaConfig()
    settings.device = "hw:97,0"  // no such card
    let driver = MediaDriver(
      settings: settings, library: MediaScanner.scan(lib).library, loop: loop)
    var logs: [String] = []
    driver.onLog = { logs.append($0) }
    let (ids, got) = try collect(loop, driver, count: 1) { [driver.request(title: "elan")] }
    XCTAssertEqual(got[ids[0]], [.failure])
    XCTAssertTrue(
      logs.contains { $0.contains("audio device 'hw:97,0'") }, logs.joined(separator: "\n"))
  }
}
