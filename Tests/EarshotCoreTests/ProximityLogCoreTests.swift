import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

#if canImport(FoundationXML)
  import FoundationXML
#endif

private let uuid = BeaconUUID("8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182")!
private let desk = TrackedID(uuid: uuid, major: 1, minor: 10)
private let door = TrackedID(uuid: uuid, major: 2, minor: 1)
private let s = Int64(1_000_000)
/// 2026-01-01T00:00:00Z in microseconds.
private let t0 = Int64(1_767_225_600) * s

final class SightingDownsamplerTests: XCTestCase {
  func testOneRowPerBeaconPerIntervalWithMeanMinMaxAndCount() {
    var d = SightingDownsampler(interval: 10 * s)
    var out: [SightingSummary] = []
    for (k, rssi) in [-60.0, -70, -65].enumerated() {
      out += d.add(
        BeaconSighting(
          t: WallTime(micros: t0 + Int64(k) * s), beacon: desk, rssi: rssi, distance: 2))
    }
    out += d.add(BeaconSighting(t: WallTime(micros: t0 + 3 * s), beacon: door, rssi: nil))
    XCTAssertTrue(out.isEmpty, "nothing is complete before the interval ends")
    // A sighting in the next interval completes desk's first.
    out += d.add(BeaconSighting(t: WallTime(micros: t0 + 10 * s), beacon: desk, rssi: -50))
    XCTAssertEqual(out.count, 1)
    XCTAssertEqual(out[0].start, WallTime(micros: t0))
    XCTAssertEqual(out[0].end, WallTime(micros: t0 + 10 * s))
    XCTAssertEqual(out[0].count, 3)
    XCTAssertEqual(out[0].rssiMean, -65)
    XCTAssertEqual(out[0].rssiMin, -70)
    XCTAssertEqual(out[0].rssiMax, -60)
    XCTAssertEqual(out[0].distanceMean, 2)
    // The timer closes door's interval; desk's second stays open.
    let closed = d.close(before: WallTime(micros: t0 + 12 * s))
    XCTAssertEqual(closed.map(\.beacon), [door])
    XCTAssertEqual(closed[0].count, 1)
    XCTAssertEqual(closed[0].rssiCount, 0)
    XCTAssertNil(closed[0].rssiMean, "no RSSI, no mean")
    XCTAssertEqual(d.openCount, 1)
    let rest = d.closeAll()
    XCTAssertEqual(rest.map(\.start), [WallTime(micros: t0 + 10 * s)])
    XCTAssertEqual(rest[0].rssiMean, -50)
    XCTAssertEqual(d.openCount, 0)
  }

  func testIntervalsAlignToTheEpochAndTimeGoingBackLosesNothing() {
    var d = SightingDownsampler(interval: 10 * s)
    XCTAssertEqual(d.intervalStart(WallTime(micros: t0 + 17 * s)), WallTime(micros: t0 + 10 * s))
    XCTAssertEqual(d.intervalStart(WallTime(micros: -1)), WallTime(micros: -10 * s))
    _ = d.add(BeaconSighting(t: WallTime(micros: t0 + 25 * s), beacon: desk, rssi: -60))
    let out = d.add(BeaconSighting(t: WallTime(micros: t0 + 5 * s), beacon: desk, rssi: -80))
    XCTAssertEqual(out.map(\.start), [WallTime(micros: t0 + 20 * s)])
    XCTAssertEqual(d.closeAll().map(\.start), [WallTime(micros: t0)])
  }
}

final class PresenceTimelineTests: XCTestCase {
  func e(_ sec: Int64, _ region: String, _ kind: RegionLogEvent.Kind, _ state: PresenceState)
    -> RegionLogEvent
  {
    RegionLogEvent(t: WallTime(micros: t0 + sec * s), region: region, kind: kind, state: state)
  }

  func testIntervalsWithUnknownAndOpenEnds() {
    let events = [
      e(0, "desk", .state, .unknown), e(30, "desk", .state, .outside),
      e(100, "desk", .enter, .inside), e(200, "desk", .state, .inside),  // a restart: no split
      e(400, "desk", .exit, .outside), e(500, "desk", .enter, .inside),
      e(600, "desk", .state, .unknown),  // adapter down
      e(700, "desk", .state, .inside), e(50, "lab", .state, .inside),
    ]
    let p = PresenceTimeline.presence(of: events)
    XCTAssertEqual(
      p,
      [
        PresenceInterval(
          region: "desk", start: WallTime(micros: t0 + 100 * s),
          end: WallTime(micros: t0 + 400 * s), ending: .exit),
        PresenceInterval(
          region: "desk", start: WallTime(micros: t0 + 500 * s),
          end: WallTime(micros: t0 + 600 * s), ending: .unknown),
        PresenceInterval(
          region: "desk", start: WallTime(micros: t0 + 700 * s), end: nil, ending: .open),
        PresenceInterval(
          region: "lab", start: WallTime(micros: t0 + 50 * s), end: nil, ending: .open),
      ])
    XCTAssertEqual(p[2].duration(now: WallTime(micros: t0 + 750 * s)), 50 * s)
    let totals = PresenceTimeline.totals(p, now: WallTime(micros: t0 + 800 * s))
    XCTAssertEqual(totals.map(\.0), ["desk", "lab"])
    XCTAssertEqual(totals.map(\.1), [(300 + 100 + 100) * s, 750 * s])
    // Unknown is a segment of its own, never presence.
    let segs = PresenceTimeline.segments(of: events).filter { $0.region == "desk" }
    XCTAssertEqual(
      segs.map(\.state), [.unknown, .outside, .inside, .outside, .inside, .unknown, .inside])
  }

  func testAWindowCutsIntervalsAndKnowsTheStateAtItsStart() {
    let events = [
      e(100, "desk", .enter, .inside), e(400, "desk", .exit, .outside),
      e(500, "desk", .enter, .inside), e(900, "desk", .exit, .outside),
    ]
    let p = PresenceTimeline.presence(
      of: events, from: WallTime(micros: t0 + 300 * s), to: WallTime(micros: t0 + 600 * s))
    XCTAssertEqual(
      p,
      [
        PresenceInterval(
          region: "desk", start: WallTime(micros: t0 + 300 * s),
          end: WallTime(micros: t0 + 400 * s), ending: .exit, clippedStart: true),
        PresenceInterval(
          region: "desk", start: WallTime(micros: t0 + 500 * s),
          end: WallTime(micros: t0 + 600 * s), ending: .windowEnd),
      ])
    XCTAssertTrue(
      PresenceTimeline.presence(of: events, from: WallTime(micros: t0 + 950 * s)).isEmpty)
  }
}

final class LogTimeTests: XCTestCase {
  let now = t0 + 12 * 3600 * s

  func testRelativeAndISOTimes() throws {
    XCTAssertEqual(
      try LogTime.parse("2h", now: WallTime(micros: now), offset: LogTime.utc),
      WallTime(micros: now - 7200 * s))
    XCTAssertEqual(
      try LogTime.parse("30m", now: WallTime(micros: now), offset: LogTime.utc),
      WallTime(micros: now - 1800 * s))
    XCTAssertEqual(
      try LogTime.parse("7d", now: WallTime(micros: now), offset: LogTime.utc),
      WallTime(micros: now - 7 * 86_400 * s))
    XCTAssertEqual(
      try LogTime.parse("1.5h", now: WallTime(micros: now), offset: LogTime.utc),
      WallTime(micros: now - 5400 * s))
    XCTAssertEqual(
      try LogTime.parse("now", now: WallTime(micros: now), offset: LogTime.utc),
      WallTime(micros: now))
    XCTAssertEqual(
      try LogTime.parse("@1767225600.5", now: WallTime(micros: now), offset: LogTime.utc),
      WallTime(micros: t0 + s / 2))
    XCTAssertThrowsError(
      try LogTime.parse("@1e20", now: WallTime(micros: now), offset: LogTime.utc),
      "beyond an Int64 of microseconds: an error, not a crash")
    XCTAssertEqual(
      try LogTime.parse("2026-01-01T00:00:00Z", now: WallTime(micros: now), offset: LogTime.utc),
      WallTime(micros: t0))
    XCTAssertEqual(
      try LogTime.parse(
        "2026-01-01T01:00:00+01:00", now: WallTime(micros: now), offset: LogTime.utc),
      WallTime(micros: t0))
    XCTAssertEqual(
      try LogTime.parse("2025-12-31T19:00-0500", now: WallTime(micros: now), offset: LogTime.utc),
      WallTime(micros: t0))
    XCTAssertEqual(
      try LogTime.parse("2026-01-01 00:00:01.25Z", now: WallTime(micros: now), offset: LogTime.utc),
      WallTime(micros: t0 + 1_250_000))
    // No zone: local time, here UTC+1.
    let cet: LogTime.Offset = { _ in 3600 }
    XCTAssertEqual(
      try LogTime.parse("2026-01-01T01:00", now: WallTime(micros: now), offset: cet),
      WallTime(micros: t0))
    XCTAssertEqual(
      try LogTime.parse("2026-01-01", now: WallTime(micros: now), offset: cet),
      WallTime(micros: t0 - 3600 * s))
    XCTAssertEqual(
      try LogTime.parse("2024-02-29", now: WallTime(micros: now), offset: LogTime.utc),
      WallTime(micros: 1_709_164_800 * s))
    for bad in ["", "2h30", "yesterday", "2026-13-01", "2026-02-30", "2026-01-01T25:00", "-", "5x"]
    {
      XCTAssertThrowsError(
        try LogTime.parse(bad, now: WallTime(micros: now), offset: LogTime.utc), bad)
    }
  }

  func testDaysFollowTheLocalZoneAcrossAChange() throws {
    // A zone that moves from +1 to +2 at 2026-03-29T01:00Z (as CET does).
    let change = Int64(1_774_746_000)
    let zone: LogTime.Offset = { $0 < change ? 3600 : 7200 }
    let day = try LogTime.day("2026-03-29", offset: zone)
    XCTAssertEqual(day.start, WallTime(micros: (change - 2 * 3600) * s))  // 00:00 at +1 is 23:00Z the day before
    XCTAssertEqual(day.end.micros - day.start.micros, 23 * 3600 * s, "that day is 23 hours long")
    XCTAssertEqual(
      LogTime.iso(WallTime(micros: change * s), offset: zone), "2026-03-29T03:00:00+02:00")
    XCTAssertEqual(LogTime.iso(WallTime(micros: t0), offset: LogTime.utc), "2026-01-01T00:00:00Z")
    XCTAssertEqual(
      LogTime.short(WallTime(micros: t0 + 3_723 * s), offset: LogTime.utc), "2026-01-01 01:02:03")
    XCTAssertEqual(LogTime.duration(3_723 * s), "1h 02m 03s")
    XCTAssertEqual(LogTime.duration(90 * s), "1m 30s")
    XCTAssertEqual(
      LogTime.dayContaining(WallTime(micros: t0 + 5 * s), offset: LogTime.utc).start,
      WallTime(micros: t0))
  }
}

final class MonitorLineImportTests: XCTestCase {
  func testMonitorLinesBecomeLogEvents() throws {
    let enter = try MonitorLineImport.events(
      fromLine: #"{"t":1767225630.10,"event":"enter","region":"desk","state":"inside"}"#)
    XCTAssertEqual(
      enter,
      [
        .region(
          RegionLogEvent(
            t: WallTime(micros: t0 + 30_100_000), region: "desk", kind: .enter, state: .inside))
      ])
    let range = try MonitorLineImport.events(
      fromLine:
        #"{"t":1767225631.00,"event":"range","region":"desk","state":"inside","beacons":[{"uuid":"8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182","major":1,"minor":10,"address":"C1:02:03:04:05:06","rssi":-67,"accuracy":1.8,"proximity":"near"},{"uuid":"8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182","major":2,"minor":1,"address":"C1:02:03:04:05:07","rssi":null,"accuracy":null,"proximity":"unknown"}]}"#
    )
    XCTAssertEqual(range.count, 2)
    XCTAssertEqual(
      range[0],
      .sighting(
        BeaconSighting(
          t: WallTime(micros: t0 + 31 * s), beacon: desk, address: BDAddress("C1:02:03:04:05:06"),
          rssi: -67,
          distance: 1.8, region: "desk")))
    if case .sighting(let b) = range[1] {
      XCTAssertNil(b.rssi)
      XCTAssertNil(b.distance)
    } else {
      XCTFail("not a sighting")
    }
    let exit = try MonitorLineImport.events(
      fromLine:
        #"{"t":1767226020,"event":"exit","region":"desk","state":"outside","uuid":"8f2c1a3e-5b7d-4e90-a1c2-3d4e5f607182","major":1,"minor":10}"#
    )
    XCTAssertEqual(
      exit,
      [
        .region(
          RegionLogEvent(
            t: WallTime(micros: t0 + 420 * s), region: "desk", kind: .exit, state: .outside,
            beacon: desk))
      ])
    XCTAssertEqual(
      try MonitorLineImport.events(fromLine: #"{"t":1,"event":"hook","region":"desk"}"#), [])
    for bad in [
      #"{"t":1e13,"event":"enter","region":"d","state":"inside"}"#,
      "not json", #"{"event":"enter"}"#, #"{"t":1,"event":"enter","region":"d","state":"in"}"#,
      #"{"t":1,"event":"range","region":"d","beacons":[{"uuid":"zz","major":1,"minor":1}]}"#,
      #"{"t":1,"event":"enter","region":"d","state":"inside"} x"#,
    ] {
      XCTAssertThrowsError(try MonitorLineImport.events(fromLine: bad), bad)
    }
  }

  /// Every kind, read back as the monitor writes it (`addFields`): an
  /// Eddystone's `format`, `namespace` and `instance`, an AltBeacon's
  /// `format` with iBeacon's field names.
  func testLinesOfEveryKindBecomeTheirBeacons() throws {
    let eddy = TrackedID(
      eddystoneNamespace: BeaconBytes(hex: "8f2c1a3e5b7d4e90a1c2")!,
      instance: BeaconBytes(hex: "0000000000a1")!)
    let alt = TrackedID(kind: .altBeacon, uuid: uuid, major: 1, minor: 2)
    for id in [eddy, alt, desk] {
      var j = JSONLine()
      id.addFields(to: &j)
      let fields = j.line.dropFirst().dropLast()
      let line =
        #"{"t":1767225631.00,"event":"range","region":"desk","state":"inside","beacons":[{"#
        + fields + #","address":"C1:02:03:04:05:06","rssi":-67,"accuracy":1.8}]}"#
      let events = try MonitorLineImport.events(fromLine: line)
      guard case .sighting(let b)? = events.first else { return XCTFail(line) }
      XCTAssertEqual(b.beacon, id, line)
    }
    for bad in [
      #"{"format":"nosuch","uuid":"8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182"}"#,
      #"{"format":"eddystone","namespace":"8f2c","instance":"0000000000a1"}"#,
      #"{"format":"altbeacon","uuid":"8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182","major":1}"#,
    ] {
      let line = #"{"t":1,"event":"range","region":"d","beacons":["# + bad + "]}"
      XCTAssertThrowsError(try MonitorLineImport.events(fromLine: line), line)
    }
  }

  func testJSONReader() throws {
    let v = try JSONParser.parse(#" {"a":[1,-2.5e1,true,null,"x\"\u00e9\ud83d\ude00"],"b":{}} "#)
    XCTAssertEqual(v["a"]?.array?.count, 5)
    XCTAssertEqual(v["a"]?.array?[1].number, -25)
    XCTAssertEqual(v["a"]?.array?[4].string, "x\"é😀")
    XCTAssertThrowsError(try JSONParser.parse("[1,]"))
    XCTAssertThrowsError(try JSONParser.parse("01x"))
  }

  func testBeaconFilter() throws {
    XCTAssertTrue(try TrackedMatch.parse(uuid.description).matches(door))
    XCTAssertTrue(try TrackedMatch.parse("\(uuid):1").matches(desk))
    XCTAssertFalse(try TrackedMatch.parse("\(uuid):1").matches(door))
    XCTAssertFalse(try TrackedMatch.parse("\(uuid):1:11").matches(desk))
    XCTAssertThrowsError(try TrackedMatch.parse("\(uuid):x"))
    XCTAssertThrowsError(try TrackedMatch.parse("\(uuid):1:2:3"))
  }

  func testCSVQuotesAndJSONAgree() throws {
    XCTAssertEqual(LogFormatter.csvCell("a,b"), "\"a,b\"")
    XCTAssertEqual(LogFormatter.csvCell("say \"hi\""), "\"say \"\"hi\"\"\"")
    let r = LogRecord.region(
      RegionLogEvent(
        t: WallTime(micros: t0), region: "kitchen, north", kind: .enter, state: .inside,
        beacon: desk))
    let csv = LogFormatter.csv(r, offset: LogTime.utc)
    XCTAssertTrue(csv.contains("\"kitchen, north\""), csv)
    let json = try JSONParser.parse(LogFormatter.json(r, offset: LogTime.utc))
    XCTAssertEqual(json["region"]?.string, "kitchen, north")
    XCTAssertEqual(json["minor"]?.number, 10)
    XCTAssertEqual(json["time"]?.string, "2026-01-01T00:00:00Z")
  }
}

final class ProximityPlotTests: XCTestCase {
  func testSVGIsXMLWithASeriesPerBeaconAndShadingWhereTheIntervalsAre() throws {
    var rows: [SightingSummary] = []
    for k in 0..<360 {  // an hour of 10 s rows from 08:00 for desk, 30 min for door
      let start = t0 + 8 * 3600 * s + Int64(k) * 10 * s
      rows.append(
        SightingSummary(
          beacon: desk, start: WallTime(micros: start), end: WallTime(micros: start + 10 * s),
          count: 10, rssiCount: 10,
          rssiMean: -60 - Double(k % 7), rssiMin: -70, rssiMax: -55, distanceMean: 1.5))
      if k < 180 {
        rows.append(
          SightingSummary(
            beacon: door, start: WallTime(micros: start), end: WallTime(micros: start + 10 * s),
            count: 3, rssiCount: 3,
            rssiMean: -80, rssiMin: -82, rssiMax: -78))
      }
    }
    let events = [
      RegionLogEvent(
        t: WallTime(micros: t0 + 8 * 3600 * s), region: "desk & co", kind: .enter, state: .inside),
      RegionLogEvent(
        t: WallTime(micros: t0 + 9 * 3600 * s), region: "desk & co", kind: .exit, state: .outside),
      RegionLogEvent(
        t: WallTime(micros: t0 + 8 * 3600 * s), region: "door", kind: .enter, state: .inside),
      RegionLogEvent(
        t: WallTime(micros: t0 + 8 * 3600 * s + 1800 * s), region: "door", kind: .state,
        state: .unknown),
    ]
    let input = PlotInput(
      start: WallTime(micros: t0), end: WallTime(micros: t0 + 86_400 * s), title: "Test <day>",
      sightings: rows,
      segments: PresenceTimeline.segments(
        of: events, from: WallTime(micros: t0), to: WallTime(micros: t0 + 86_400 * s)),
      beaconRegions: [desk: ["desk & co"], door: ["door"]])
    let svg = ProximityPlot.svg(input)
    let doc = try SVGDocument(svg)
    XCTAssertEqual(doc.root, "svg")
    let rssi = doc.elements.filter { $0.name == "path" && $0.attributes["class"] == "rssi" }
    XCTAssertEqual(rssi.map { $0.attributes["data-beacon"] }, [desk.description, door.description])
    let distance = doc.elements.filter { $0.attributes["class"] == "distance" }
    XCTAssertEqual(distance.count, 1, "only desk has distances")
    let layout = ProximityPlot.Layout(
      start: WallTime(micros: t0), end: WallTime(micros: t0 + 86_400 * s))
    let inside = doc.elements.filter { $0.attributes["class"] == "inside" }
    XCTAssertEqual(inside.count, 2)
    for r in inside {
      let x = Double(r.attributes["x"]!)!
      let w = Double(r.attributes["width"]!)!
      let region = r.attributes["data-region"]!
      let expectedEnd = region == "door" ? 8 * 3600 + 1800 : 9 * 3600
      XCTAssertEqual(x, layout.x(WallTime(micros: t0 + 8 * 3600 * s)), accuracy: 0.01, region)
      XCTAssertEqual(
        x + w, layout.x(WallTime(micros: t0 + Int64(expectedEnd) * s)), accuracy: 0.02, region)
    }
    // The desk shading lies inside desk's panel.
    let deskShade = inside.first { $0.attributes["data-region"] == "desk & co" }!
    XCTAssertEqual(Double(deskShade.attributes["y"]!)!, layout.panelTop(0), accuracy: 0.01)
    let bars = doc.elements.filter { $0.attributes["class"] == "presence" }
    XCTAssertEqual(bars.map { $0.attributes["data-region"]! }, ["desk & co", "door"])
    // door went unknown at 08:30 and stayed so: a grey bar from there on.
    let unknown = doc.elements.filter { $0.attributes["class"] == "unknown" }
    XCTAssertEqual(unknown.map { $0.attributes["data-region"]! }, ["door"])
    XCTAssertEqual(
      Double(unknown[0].attributes["x"]!)!,
      layout.x(WallTime(micros: t0 + 8 * 3600 * s + 1800 * s)), accuracy: 0.01)
    // Points sit at the middle of their interval: the first desk point.
    let d = rssi[0].attributes["d"]!
    let first = d.dropFirst().split(separator: " ")[0].split(separator: ",")
    XCTAssertEqual(
      Double(first[0])!, layout.x(WallTime(micros: t0 + 8 * 3600 * s + 5 * s)), accuracy: 0.01)
    XCTAssertTrue(doc.text.contains("Test <day>"))
    XCTAssertTrue(doc.text.contains("08:00"), "time labels on the axis")
  }

  func testTicksAlignToLocalTime() {
    let ticks = ProximityPlot.timeTicks(
      WallTime(micros: t0), WallTime(micros: t0 + 86_400 * s), offset: { _ in 3600 })
    XCTAssertEqual(ticks.first?.1, "02:00")
    XCTAssertEqual(ticks.first?.0, WallTime(micros: t0 + 3600 * s))
    XCTAssertLessThanOrEqual(ticks.count, 13)
  }
}

/// The elements of an SVG, read with Foundation's XML parser (which also
/// proves the document is well-formed XML).
struct SVGDocument {
  struct Element {
    let name: String
    let attributes: [String: String]
  }
  var root = ""
  var elements: [Element] = []
  var text = ""

  init(_ svg: String) throws {
    let parser = XMLParser(data: Data(svg.utf8))
    let delegate = Collector()
    parser.delegate = delegate
    guard parser.parse() else {
      throw NSError(
        domain: "SVG", code: 1,
        userInfo: [
          NSLocalizedDescriptionKey:
            "not well-formed XML: \(parser.parserError.map { "\($0)" } ?? "?") line \(parser.lineNumber)"
        ])
    }
    root = delegate.elements.first?.name ?? ""
    elements = delegate.elements
    text = delegate.text
  }

  final class Collector: NSObject, XMLParserDelegate {
    var elements: [Element] = []
    var text = ""
    func parser(
      _ parser: XMLParser, didStartElement name: String, namespaceURI: String?,
      qualifiedName: String?, attributes: [String: String]
    ) {
      elements.append(Element(name: name, attributes: attributes))
    }
    func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }
  }
}

final class ProximityLogConfigTests: XCTestCase {
  func testDefaultsAndTheConfigSection() throws {
    let c = ProximityLogConfig()
    XCTAssertFalse(c.enabled)
    XCTAssertEqual(c.interval, 10)
    XCTAssertEqual(c.keepDays, 90)
    var doc = ConfigDocument(file: "earshot.conf")
    doc.headers = [SectionHeader(name: "log", line: 1)]
    doc.entries = [
      ConfigEntry(section: "log", key: "enabled", value: "true", line: 2),
      ConfigEntry(section: "log", key: "path", value: "/tmp/p.sqlite", line: 3),
      ConfigEntry(section: "log", key: "keep_days", value: "7", line: 4),
    ]
    let config = try Config.build(doc)
    XCTAssertTrue(config.log.enabled)
    XCTAssertEqual(config.log.path, "/tmp/p.sqlite")
    XCTAssertEqual(config.log.keepDays, 7)
    XCTAssertEqual(config.log.interval, 10)
    doc.entries.append(ConfigEntry(section: "log", key: "interval", value: "0", line: 5))
    XCTAssertThrowsError(try Config.build(doc)) {
      XCTAssertTrue("\($0)".contains("interval"), "\($0)")
    }
  }
}
