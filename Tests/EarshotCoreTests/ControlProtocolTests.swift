import EarshotTestSupport
import XCTest

@testable import EarshotCore

final class JSONParserTests: XCTestCase {
  func testParsesEveryKindOfValue() throws {
    let v = try JSONParser.parse(
      #" {"a":[1,-2.5e2,true,false,null],"s":"x\"\\\/\n\u00e9\ud83d\ude00","o":{}} "#)
    XCTAssertEqual(v["a"], .array([.number(1), .number(-250), .bool(true), .bool(false), .null]))
    XCTAssertEqual(v["s"], .string("x\"\\/\né😀"))
    XCTAssertEqual(v["o"], .object([]))
  }

  func testRejectsMalformedInput() {
    for bad in [
      "", "{", "{\"a\":}", "[1,]", "{\"a\" 1}", "01", "1.", "-", "tru", "\"\\x\"", "\"a",
      "{\"a\":1}x", "\"\u{01}\"", "\"\\ud800\"", "NaN", "1e999", "{'a':1}",
    ] {
      XCTAssertThrowsError(try JSONParser.parse(bad), "accepted \(bad.debugDescription)")
    }
  }

  func testRejectsInvalidUTF8AndDeepNesting() {
    XCTAssertThrowsError(try JSONParser.parse([0x22, 0xFF, 0x22]))
    let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
    XCTAssertThrowsError(try JSONParser.parse(deep))
    let ok = String(repeating: "[", count: 60) + String(repeating: "]", count: 60)
    XCTAssertNoThrow(try JSONParser.parse(ok))
  }

  func testEncodesCompactlyAndRoundTrips() throws {
    let v = JSONValue.object([
      ("id", .number(7)), ("x", .number(0.25)), ("s", .string("a\nb\"")), ("n", .null),
      ("l", .array([.bool(true)])),
    ])
    XCTAssertEqual(v.encoded, #"{"id":7,"x":0.25,"s":"a\nb\"","n":null,"l":[true]}"#)
    XCTAssertEqual(try JSONParser.parse(v.encoded), v)
  }
}

final class LineFramerTests: XCTestCase {
  func testSplitsLinesAcrossChunksAndStripsCR() {
    var f = LineFramer(limit: 100)
    XCTAssertEqual(f.push(Array("ab".utf8)), [])
    XCTAssertEqual(
      f.push(Array("c\r\nde\n\nf".utf8)),
      [.line(Array("abc".utf8)), .line(Array("de".utf8)), .line([])])
    XCTAssertEqual(f.pending, 1)
  }

  func testOversizedLineIsReportedOnceAndTheStreamGoesOn() {
    var f = LineFramer(limit: 8)
    XCTAssertEqual(f.push(Array("12345".utf8)), [])
    XCTAssertEqual(f.push(Array("6789".utf8)), [.oversized])
    XCTAssertEqual(f.push(Array(String(repeating: "x", count: 1000).utf8)), [])
    XCTAssertEqual(f.push(Array("yy\nok\n".utf8)), [.line(Array("ok".utf8))])
    XCTAssertEqual(
      f.push(Array("12345678\n".utf8)), [.line(Array("12345678".utf8))], "exactly the limit fits")
    XCTAssertEqual(f.pending, 0)
  }
}

final class ControlProtocolTests: XCTestCase {
  func parse(_ s: String) -> Result<ControlRequest, ControlProtocol.Rejection> {
    ControlProtocol.parse(line: Array(s.utf8))
  }

  func request(_ s: String) throws -> ControlRequest {
    try parse(s).get()
  }

  func rejection(_ s: String) -> ControlProtocol.Rejection? {
    if case .failure(let r) = parse(s) { return r }
    return nil
  }

  func testParsesEveryCommand() throws {
    XCTAssertEqual(try request(#"{"id":1,"cmd":"status"}"#).command, .status)
    XCTAssertEqual(try request(#"{"id":"a","cmd":"volume.get"}"#).id, .string("a"))
    XCTAssertEqual(
      try request(#"{"id":2,"cmd":"volume.set","level":0.5}"#).command, .volumeSet(0.5))
    XCTAssertEqual(try request(#"{"id":3,"cmd":"volume.mute"}"#).command, .volumeMute)
    XCTAssertEqual(try request(#"{"id":3,"cmd":"volume.unmute"}"#).command, .volumeUnmute)
    XCTAssertEqual(try request(#"{"id":4,"cmd":"find.status"}"#).command, .findStatus)
    XCTAssertEqual(try request(#"{"id":5,"cmd":"found"}"#).command, .found)
    XCTAssertEqual(
      try request(#"{"id":6,"cmd":"subscribe","topics":["find","volume","find"]}"#).command,
      .subscribe([.find, .volume]))
    XCTAssertEqual(
      try request(#"{"id":6,"cmd":"unsubscribe","topics":["regions"]}"#).command,
      .unsubscribe([.regions]))
    XCTAssertEqual(
      try request(#"{"id":7,"cmd":"device.register","name":"earbuds"}"#).command,
      .deviceRegister(name: "earbuds"))
    XCTAssertEqual(try request(#"{"id":8,"cmd":"find.start"}"#).command, .findStart)
    XCTAssertEqual(try request(#"{"id":8,"cmd":"find.stop"}"#).command, .findStop)
    XCTAssertEqual(try request(#"{"id":9,"cmd":"notice.ack","notice":3}"#).command, .noticeAck(3))
    XCTAssertEqual(
      try request(#"{"id":9,"cmd":"notice.fail","notice":3,"reason":"busy"}"#).command,
      .noticeFail(3, reason: "busy"))
  }

  func testTrackerRingTakesANumberAndAMode() throws {
    XCTAssertEqual(
      try request(#"{"id":1,"cmd":"tracker.ring","number":3}"#).command,
      .trackerRing(number: 3, mode: .ring))
    XCTAssertEqual(
      try request(#"{"id":1,"cmd":"tracker.ring","number":3,"mode":"identify"}"#).command,
      .trackerRing(number: 3, mode: .identify))
    XCTAssertNotNil(rejection(#"{"id":1,"cmd":"tracker.ring"}"#), "no number")
    XCTAssertNotNil(rejection(#"{"id":1,"cmd":"tracker.ring","number":0}"#))
    XCTAssertNotNil(rejection(#"{"id":1,"cmd":"tracker.ring","number":1,"mode":"loud"}"#))
    for mode in TrackerSoundMode.allCases {
      let r = ControlRequest(id: .int(5), command: .trackerRing(number: 2, mode: mode))
      XCTAssertEqual(try request(r.encoded), r)
    }
  }

  func testEncodedRequestsParseBack() throws {
    let commands: [ControlCommand] = [
      .status, .volumeSet(0.25), .subscribe([.find, .ranging]), .deviceRegister(name: "x y"),
      .noticeAck(12), .noticeFail(4, reason: "no"), .findStart,
    ]
    for (i, c) in commands.enumerated() {
      let r = ControlRequest(id: .int(i), command: c)
      XCTAssertEqual(try request(r.encoded), r)
    }
  }

  func testErrorsCarryTheIdWhenItCanBeRead() {
    XCTAssertEqual(rejection("{nope")?.id, .null)
    XCTAssertEqual(rejection("{nope")?.error.code, .parseError)
    XCTAssertEqual(rejection("[1]")?.error.code, .invalidRequest)
    XCTAssertEqual(rejection(#"{"cmd":"status"}"#)?.error.code, .missingField)
    XCTAssertEqual(rejection(#"{"id":true,"cmd":"status"}"#)?.id, .null)
    XCTAssertEqual(rejection(#"{"id":1.5,"cmd":"status"}"#)?.error.code, .invalidRequest)
    let unknown = rejection(#"{"id":9,"cmd":"reboot"}"#)
    XCTAssertEqual(unknown?.id, .number(9))
    XCTAssertEqual(unknown?.error.code, .unknownCommand)
    XCTAssertEqual(rejection(#"{"id":9}"#)?.error.code, .missingField)
    XCTAssertEqual(rejection(#"{"id":9,"cmd":"volume.set"}"#)?.error.code, .missingField)
    XCTAssertEqual(
      rejection(#"{"id":9,"cmd":"volume.set","level":true}"#)?.error.code, .invalidRequest)
    XCTAssertEqual(
      rejection(#"{"id":9,"cmd":"volume.set","level":1.5}"#)?.error.code, .invalidRequest)
    XCTAssertEqual(
      rejection(#"{"id":9,"cmd":"subscribe","topics":["weather"]}"#)?.error.code, .invalidRequest)
    XCTAssertEqual(
      rejection(#"{"id":9,"cmd":"device.register","name":""}"#)?.error.code, .invalidRequest)
    XCTAssertEqual(
      rejection(#"{"id":9,"cmd":"notice.ack","notice":0}"#)?.error.code, .invalidRequest)
  }

  func testResponsesAndEventsHaveTheDocumentedShape() {
    XCTAssertEqual(
      ControlProtocol.success(
        id: .number(7), [("volume", ControlProtocol.json(VolumeSetting(level: 0.5, muted: false)))]),
      #"{"id":7,"ok":true,"volume":{"level":0.5,"muted":false}}"#)
    XCTAssertEqual(
      ControlProtocol.failure(id: .null, ControlError(.busy, "try later")),
      #"{"id":null,"ok":false,"error":{"code":"busy","message":"try later"}}"#)
    XCTAssertEqual(
      ControlProtocol.event("notice", [("notice", .int(3))]), #"{"event":"notice","notice":3}"#)
    let s = FindStatus(
      state: .ringing, requesters: [deviceA], notifying: [], deadline: .zero + .seconds(70),
      level: 0.9,
      headphones: false, lastEnd: nil, outstandingNotices: 0)
    XCTAssertEqual(
      ControlProtocol.json(s, now: .zero + .seconds(10)).encoded,
      #"{"state":"ringing","requesters":["socket:earbuds"],"notifying":[],"seconds_left":60,"level":0.9,"headphones":false,"last_end":null,"outstanding_notices":0}"#
    )
  }
}
