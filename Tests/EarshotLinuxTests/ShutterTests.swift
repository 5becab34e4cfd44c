import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// The remote shutter's Linux side on the host: camera errors, the
/// capture command, JPEG encoding. (Captures from a real V4L2 device run
/// in the kernel test bed: Tests/vm/tests/shutter_vivid.sh.)
final class ShutterTests: XCTestCase {
  var dir: String { NSTemporaryDirectory() + "earshot-shutter-\(getpid())-\(name.hashValue)" }

  override func tearDown() {
    try? FileManager.default.removeItem(atPath: dir)
  }

  private func lines(_ s: String) -> [String] { s.split(separator: "\n").map(String.init) }

  func testMissingCameraCannotEnterAndIsNamed() throws {
    let r = try Earshot.run([
      "shutter", "--config", "/dev/null", "--device", "/dev/video-earshot-none", "--directory", dir,
      "enter", "capture", "exit",
    ])
    XCTAssertEqual(r.status, 1)
    XCTAssertEqual(
      lines(r.stdout),
      [
        "{\"event\":\"enter\",\"value\":1,\"state\":\"exitedOrUnableToEnter\",\"code\":0}",
        "{\"event\":\"capture\",\"value\":2,\"state\":\"photoFailed\",\"code\":3}",
        "{\"event\":\"exit\",\"value\":0,\"state\":\"exitedOrUnableToEnter\",\"code\":0}",
      ])
    XCTAssertTrue(r.stderr.contains("camera /dev/video-earshot-none is missing"), r.stderr)
    XCTAssertFalse(FileManager.default.fileExists(atPath: dir), "nothing may be written")
  }

  func testNotACameraIsRefusedWithTheDeviceNamed() throws {
    let r = try Earshot.run([
      "shutter", "--config", "/dev/null", "--device", "/dev/null", "enter",
    ])
    XCTAssertEqual(
      r.stdout, "{\"event\":\"enter\",\"value\":1,\"state\":\"exitedOrUnableToEnter\",\"code\":0}\n"
    )
    XCTAssertTrue(r.stderr.contains("camera /dev/null"), r.stderr)
  }

  func testCaptureOutsidePhotoModeCapturesNothing() throws {
    let r = try Earshot.run([
      "shutter", "--config", "/dev/null", "--directory", dir, "capture", "2",
    ])
    XCTAssertEqual(r.status, 1)
    XCTAssertEqual(lines(r.stdout).count, 2)
    XCTAssertTrue(
      lines(r.stdout).allSatisfy { $0.contains("\"state\":\"photoFailed\",\"code\":3") })
    XCTAssertFalse(FileManager.default.fileExists(atPath: dir))
  }

  func testUnknownEventsAreErrorsNotStates() throws {
    let r = try Earshot.run(["shutter", "--config", "/dev/null", "-1", "3", "99"])
    XCTAssertEqual(r.status, 1)
    XCTAssertEqual(
      lines(r.stdout),
      [
        "{\"event\":-1,\"value\":-1,\"error\":\"unknown shutter event -1\"}",
        "{\"event\":3,\"value\":3,\"error\":\"unknown shutter event 3\"}",
        "{\"event\":99,\"value\":99,\"error\":\"unknown shutter event 99\"}",
      ])
    let bad = try Earshot.run(["shutter", "snap"])
    XCTAssertEqual(bad.status, 2)
  }

  private func config(_ body: String) throws -> String {
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let path = dir + "/earshot.conf"
    try body.write(toFile: path, atomically: true, encoding: .utf8)
    return path
  }

  func testCaptureCommandGetsThePathAndEnvironment() throws {
    let conf = try config(
      """
      [shutter]
      directory = \(dir)/photos
      capture_command = sh -c 'printf "%s|%s" "$1" "$EARSHOT_PHOTO" > "$1"' capture %f
      """)
    let r = try Earshot.run(["shutter", "--config", conf], stdin: "enter\ncapture\nexit\n")
    XCTAssertEqual(r.status, 0, r.stderr)
    let out = lines(r.stdout)
    XCTAssertEqual(out.count, 3)
    XCTAssertTrue(out[0].contains("enteredPhotoMode"))
    let json = try XCTUnwrap(
      JSONSerialization.jsonObject(with: Data(out[1].utf8)) as? [String: Any])
    XCTAssertEqual(json["state"] as? String, "photoSuccess")
    let photo = try XCTUnwrap(json["photo"] as? String)
    XCTAssertTrue(photo.hasPrefix(dir + "/photos/earshot-"), photo)
    XCTAssertTrue(photo.hasSuffix(".jpg"))
    XCTAssertEqual(try String(contentsOfFile: photo, encoding: .utf8), "\(photo)|\(photo)")
    XCTAssertTrue(out[2].contains("exitedOrUnableToEnter"))
  }

  func testFailingAndHangingCaptureCommandsArePhotoFailed() throws {
    let conf = try config(
      """
      [shutter]
      directory = \(dir)/photos
      capture_command = sh -c 'echo "no camera here" >&2; exit 4'
      """)
    let r = try Earshot.run(["shutter", "--config", conf, "enter", "capture", "exit"])
    XCTAssertEqual(r.status, 1)
    XCTAssertTrue(lines(r.stdout)[1].contains("\"state\":\"photoFailed\""), r.stdout)
    XCTAssertTrue(r.stderr.contains("failed (exit 4): no camera here"), r.stderr)

    let slow = try config(
      """
      [shutter]
      directory = \(dir)/photos
      capture_command = sh -c 'sleep 30'
      timeout = 0.5
      """)
    let started = Date()
    let h = try Earshot.run(["shutter", "--config", slow, "enter", "capture", "exit"])
    XCTAssertLessThan(Date().timeIntervalSince(started), 20)
    XCTAssertTrue(lines(h.stdout)[1].contains("\"state\":\"photoFailed\""), h.stdout)
    XCTAssertTrue(h.stderr.contains("took longer than 0.5 s; killed"), h.stderr)
  }

  func testBadSettingsSayWhatToWrite() throws {
    let conf = try config("[shutter]\nwarmup_frames = lots\n")
    let r = try Earshot.run(["shutter", "--config", conf, "enter"])
    XCTAssertEqual(r.status, 1)
    XCTAssertTrue(
      r.stderr.contains(
        "[shutter] warmup_frames: expected a whole number from 0 to 100, got 'lots'"),
      r.stderr)
    let unknown = try config("[shutter]\ndevise = /dev/video0\n")
    let u = try Earshot.run(["shutter", "--config", unknown, "enter"])
    XCTAssertTrue(u.stderr.contains("[shutter] devise: unknown key"), u.stderr)
  }

  // MARK: JPEG

  /// A YUYV frame of 8 vertical colour bars (BT.601 studio-range values).
  private func colourBars(width: Int, height: Int) -> [UInt8] {
    // Y, U, V for white, yellow, cyan, green, magenta, red, blue, black at 75%.
    let bars: [(UInt8, UInt8, UInt8)] = [
      (180, 128, 128), (162, 44, 142), (131, 156, 44), (112, 72, 58), (84, 184, 198),
      (65, 100, 212), (35, 212, 114), (16, 128, 128),
    ]
    var f = [UInt8](repeating: 0, count: width * height * 2)
    for y in 0..<height {
      for x in stride(from: 0, to: width, by: 2) {
        let (yy, u, v) = bars[x * 8 / width]
        let i = (y * width + x) * 2
        f[i] = yy
        f[i + 1] = u
        f[i + 2] = yy
        f[i + 3] = v
      }
    }
    return f
  }

  func testYUYVEncodesToAJPEGThatDecodesAtItsSize() throws {
    let frame = V4L2Camera.Frame(
      format: .yuyv, width: 640, height: 480, stride: 1280,
      bytes: colourBars(width: 640, height: 480))
    let jpeg = try JPEGEncoder.encode(frame)
    XCTAssertEqual(Array(jpeg.prefix(2)), [0xFF, 0xD8])
    XCTAssertEqual(Array(jpeg.suffix(2)), [0xFF, 0xD9])
    XCTAssertTrue(JPEGEncoder.hasHuffmanTables(jpeg))
    let d = try JPEGEncoder.decode(jpeg)
    XCTAssertEqual(d.width, 640)
    XCTAssertEqual(d.height, 480)
    // An independent decoder agrees, and the colours are right.
    guard let djpeg = Earshot.tool("djpeg") else {
      try requireResource("djpeg (package libjpeg-turbo-progs)")
    }
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let path = dir + "/bars.jpg"
    try Data(jpeg).write(to: URL(fileURLWithPath: path))
    let ppm = [UInt8](try Earshot.runData(["-pnm", path], executable: djpeg))
    let header = "P6\n640 480\n255\n"
    XCTAssertEqual(String(decoding: ppm.prefix(header.utf8.count), as: UTF8.self), header)
    let px = Array(ppm.dropFirst(header.utf8.count))
    let want: [(Int, Int, Int)] = [
      (1, 1, 1), (1, 1, 0), (0, 1, 1), (0, 1, 0), (1, 0, 1), (1, 0, 0), (0, 0, 1), (0, 0, 0),
    ]
    for (i, w) in want.enumerated() {
      let x = 640 * (2 * i + 1) / 16
      let o = (240 * 640 + x) * 3
      let got = (px[o] > 128 ? 1 : 0, px[o + 1] > 128 ? 1 : 0, px[o + 2] > 128 ? 1 : 0)
      XCTAssertTrue(got == w, "bar \(i): \(px[o]), \(px[o + 1]), \(px[o + 2])")
    }
  }

  func testMJPEGWithoutHuffmanTablesGetsThem() throws {
    let full = try JPEGEncoder.encodeYUYV(
      colourBars(width: 64, height: 32), width: 64, height: 32, stride: 128)
    // Strip every DHT segment, as many webcams' MJPEG frames come.
    var stripped: [UInt8] = [0xFF, 0xD8]
    var i = 2
    while i + 4 <= full.count, full[i] == 0xFF, full[i + 1] != 0xDA {
      let length = Int(full[i + 2]) << 8 | Int(full[i + 3])
      if full[i + 1] != 0xC4 { stripped += full[i..<i + 2 + length] }
      i += 2 + length
    }
    stripped += full[i...]
    XCTAssertFalse(JPEGEncoder.hasHuffmanTables(stripped))
    let fixed = try JPEGEncoder.encode(
      V4L2Camera.Frame(format: .mjpeg, width: 64, height: 32, stride: 0, bytes: stripped))
    XCTAssertTrue(JPEGEncoder.hasHuffmanTables(fixed))
    let d = try JPEGEncoder.decode(fixed)
    XCTAssertEqual(d.width, 64)
    XCTAssertEqual(d.height, 32)
    // A frame with tables is kept as the camera made it.
    XCTAssertEqual(
      try JPEGEncoder.encode(
        V4L2Camera.Frame(format: .mjpeg, width: 64, height: 32, stride: 0, bytes: full)), full)
  }

  func testTruncatedFramesAreErrorsNotCrashes() throws {
    let full = try JPEGEncoder.encodeYUYV(
      colourBars(width: 64, height: 32), width: 64, height: 32, stride: 128)
    XCTAssertThrowsError(try JPEGEncoder.decode(Array(full.prefix(20))))
    XCTAssertThrowsError(try JPEGEncoder.decode([1, 2, 3]))
    XCTAssertThrowsError(
      try JPEGEncoder.encodeYUYV(
        [UInt8](repeating: 0, count: 100), width: 64, height: 32, stride: 128))
  }
}
