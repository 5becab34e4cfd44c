/// What a plot shows: a window of the log.
public struct PlotInput: Sendable {
  public var start: WallTime
  public var end: WallTime
  public var title: String
  /// Downsampled sightings of every beacon in the window.
  public var sightings: [SightingSummary]
  /// Region segments cut to the window (`PresenceTimeline.segments`).
  public var segments: [RegionSegment]
  /// The regions each beacon was seen in (shaded behind its panel).
  public var beaconRegions: [TrackedID: [String]]
  /// The sighting interval: a gap longer than a few of these breaks a line.
  public var interval: Int64
  public var offset: LogTime.Offset

  public init(
    start: WallTime, end: WallTime, title: String, sightings: [SightingSummary],
    segments: [RegionSegment], beaconRegions: [TrackedID: [String]], interval: Int64 = 10_000_000,
    offset: @escaping LogTime.Offset = LogTime.utc
  ) {
    self.start = start
    self.end = max(end, start + .microseconds(1))
    self.title = title
    self.sightings = sightings
    self.segments = segments
    self.beaconRegions = beaconRegions
    self.interval = max(1, interval)
    self.offset = offset
  }
}

/// Builds the SVG of `earshot plot` by hand: one panel per beacon with its
/// mean RSSI (solid, left axis) and distance (dashed, right axis) over time,
/// the inside intervals of its regions shaded behind; then a presence
/// timeline with one bar row per region (inside coloured, unknown grey).
/// Time runs left to right on the same scale in every panel. Pure.
///
/// Elements carry classes and data attributes (`class="rssi"
/// data-beacon=…`, `class="inside" data-region=…`) so tests and scripts can
/// find them.
public enum ProximityPlot {
  /// Most beacon panels in one plot; the rest are named in a note.
  public static let maxBeacons = 16

  public struct Layout: Sendable {
    public let width = 1200.0
    public let left = 130.0
    public let right = 70.0
    public let top = 84.0
    public let panelHeight = 130.0
    public let panelGap = 46.0
    public let rowHeight = 24.0
    public let start: WallTime
    public let end: WallTime

    public init(start: WallTime, end: WallTime) {
      self.start = start
      self.end = max(end, start + .microseconds(1))
    }

    public var plotWidth: Double { width - left - right }

    /// The x coordinate of a time (clamped to the plot).
    public func x(_ t: WallTime) -> Double {
      let f = Double(t.micros - start.micros) / Double(end.micros - start.micros)
      return left + min(1, max(0, f)) * plotWidth
    }
    /// Top of beacon panel `i`.
    public func panelTop(_ i: Int) -> Double { top + Double(i) * (panelHeight + panelGap) }
  }

  static let beaconColors = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
  ]
  static let regionColors = [
    "#2ca02c", "#1f77b4", "#ff7f0e", "#9467bd", "#d62728", "#17becf", "#bcbd22", "#8c564b",
  ]

  /// The default window: the span that has data, from `first` to `last`
  /// (µs), at most one day (the day before `last`) and at least a minute.
  public static func dataSpan(first: WallTime, last: WallTime) -> (
    since: WallTime, until: WallTime
  ) {
    let minute: Int64 = 60_000_000
    let day: Int64 = 86_400_000_000
    let since = max(min(first.micros, last.micros), last.micros - day)
    return (WallTime(micros: since), WallTime(micros: max(last.micros, since + minute)))
  }

  public static func svg(_ input: PlotInput) -> String {
    let L = Layout(start: input.start, end: input.end)
    // Beacons in a stable order; regions in order of first appearance.
    var byBeacon: [TrackedID: [SightingSummary]] = [:]
    for s in input.sightings { byBeacon[s.beacon, default: []].append(s) }
    let allBeacons = byBeacon.keys.sorted()
    let beacons = Array(allBeacons.prefix(maxBeacons))
    var regions: [String] = []
    for s in input.segments where !regions.contains(s.region) { regions.append(s.region) }
    for b in beacons {
      for r in input.beaconRegions[b] ?? [] where !regions.contains(r) { regions.append(r) }
    }
    let regionColor = Dictionary(
      uniqueKeysWithValues: regions.enumerated().map {
        ($0.element, regionColors[$0.offset % regionColors.count])
      })

    let timelineTop = L.panelTop(beacons.count) + (beacons.isEmpty ? 0 : 6)
    let timelineHeight = Double(max(1, regions.count)) * L.rowHeight
    let height = timelineTop + 22 + timelineHeight + 50
    var s = ""
    s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    s +=
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(n(L.width))\" height=\"\(n(height))\" "
    s +=
      "viewBox=\"0 0 \(n(L.width)) \(n(height))\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
    s +=
      "<rect x=\"0\" y=\"0\" width=\"\(n(L.width))\" height=\"\(n(height))\" fill=\"#ffffff\"/>\n"
    s += text(L.left, 24, input.title, size: 17, weight: "bold")
    let span =
      "\(LogTime.short(input.start, offset: input.offset)) to \(LogTime.short(input.end, offset: input.offset))"
    var subtitle = span
    if allBeacons.count > beacons.count {
      subtitle += "  (\(allBeacons.count - beacons.count) more beacons not shown: use --beacon)"
    }
    s += text(L.left, 42, subtitle, size: 12, fill: "#555555")
    s += legend(L, regions: regions, colors: regionColors(regionColor), y: 62)

    let ticks = timeTicks(input.start, input.end, offset: input.offset)
    for (i, b) in beacons.enumerated() {
      s += beaconPanel(
        L, top: L.panelTop(i), beacon: b, color: beaconColors[i % beaconColors.count],
        rows: byBeacon[b]!.sorted { $0.start < $1.start }, input: input,
        regions: input.beaconRegions[b] ?? [], regionColor: regionColor, ticks: ticks)
    }
    if beacons.isEmpty && regions.isEmpty {
      s += text(L.left, timelineTop + 30, "No data in this window.", size: 14, fill: "#555555")
    }
    s += timeline(
      L, top: timelineTop, regions: regions, segments: input.segments, regionColor: regionColor,
      ticks: ticks)
    s += "</svg>\n"
    return s
  }

  static func regionColors(_ d: [String: String]) -> [String: String] { d }

  // MARK: Panels

  static func beaconPanel(
    _ L: Layout, top: Double, beacon: TrackedID, color: String, rows: [SightingSummary],
    input: PlotInput, regions: [String], regionColor: [String: String],
    ticks: [(WallTime, String)]
  ) -> String {
    let h = L.panelHeight
    let bottom = top + h
    var s = "<g class=\"beacon-panel\" data-beacon=\"\(esc(beacon.description))\">\n"
    var title = "Beacon \(beacon)"
    if !regions.isEmpty { title += "  (region \(regions.joined(separator: ", ")))" }
    s += text(L.left, top - 8, title, size: 12, weight: "bold")
    s += "<rect x=\"\(n(L.left))\" y=\"\(n(top))\" width=\"\(n(L.plotWidth))\" height=\"\(n(h))\" "
    s += "fill=\"#fafafa\" stroke=\"#999999\" stroke-width=\"1\"/>\n"
    // Shading first, so lines draw over it.
    for r in regions {
      for seg in input.segments where seg.region == r && seg.state == .inside {
        let x0 = L.x(seg.start)
        let x1 = L.x(seg.end ?? input.end)
        s += "<rect class=\"inside\" data-region=\"\(esc(r))\" x=\"\(n(x0))\" y=\"\(n(top))\" "
        s +=
          "width=\"\(n(max(0, x1 - x0)))\" height=\"\(n(h))\" fill=\"\(regionColor[r] ?? "#2ca02c")\" "
        s += "fill-opacity=\"0.18\"/>\n"
      }
    }
    // RSSI scale: whole tens of dB around the data, at least 30 dB tall.
    let rssis = rows.compactMap(\.rssiMean)
    var lo = ((rssis.min() ?? -90) / 10).rounded(.down) * 10
    var hi = ((rssis.max() ?? -50) / 10).rounded(.up) * 10
    if hi - lo < 30 {
      let mid = ((lo + hi) / 2 / 5).rounded() * 5
      lo = mid - 15
      hi = mid + 15
    }
    func yR(_ v: Double) -> Double { bottom - (v - lo) / (hi - lo) * h }
    let dists = rows.compactMap(\.distanceMean)
    let dMax = niceCeil(max(1, dists.max() ?? 1))
    func yD(_ v: Double) -> Double { bottom - min(1, v / dMax) * h }
    // Grid and axes.
    for (t, label) in ticks {
      let x = L.x(t)
      s += line(x, top, x, bottom, stroke: "#e0e0e0")
      s += text(x, bottom + 14, label, size: 10, anchor: "middle", fill: "#444444")
    }
    var v = lo
    while v <= hi + 0.001 {
      s += line(L.left, yR(v), L.left + L.plotWidth, yR(v), stroke: "#eeeeee")
      s += text(L.left - 6, yR(v) + 4, n(v), size: 10, anchor: "end", fill: "#444444")
      v += 10
    }
    s += text(
      L.left - 40, top + h / 2, "RSSI dBm", size: 10, anchor: "middle", fill: "#444444",
      rotate: true)
    if !dists.isEmpty {
      let step = niceCeil(dMax / 5)
      var dv = 0.0
      while dv <= dMax + step / 1000 {
        s += text(L.left + L.plotWidth + 6, yD(dv) + 4, fmt(dv), size: 10, fill: "#444444")
        dv += step
      }
      s += text(
        L.left + L.plotWidth + 50, top + h / 2, "distance m", size: 10, anchor: "middle",
        fill: "#444444", rotate: true)
    }
    // Series: one path each, broken where the beacon went unseen.
    let gap = input.interval * 5 / 2
    s += series(
      rows.compactMap { r in r.rssiMean.map { (r.start, r.end, $0) } }, gap: gap, L: L, y: yR,
      cls: "rssi", beacon: beacon, color: color, dash: nil)
    if !dists.isEmpty {
      s += series(
        rows.compactMap { r in r.distanceMean.map { (r.start, r.end, $0) } }, gap: gap, L: L, y: yD,
        cls: "distance", beacon: beacon, color: color, dash: "5 3")
    }
    s += "</g>\n"
    return s
  }

  static func series(
    _ points: [(WallTime, WallTime, Double)], gap: Int64, L: Layout, y: (Double) -> Double,
    cls: String,
    beacon: TrackedID, color: String, dash: String?
  ) -> String {
    guard !points.isEmpty else { return "" }
    var d = ""
    var lastEnd: WallTime? = nil
    for (start, end, v) in points {
      let mid = WallTime(micros: start.micros + (end.micros - start.micros) / 2)
      let cmd = lastEnd.map { start.micros - $0.micros > gap } ?? true ? "M" : "L"
      d += "\(cmd)\(n(L.x(mid))),\(n(y(v))) "
      lastEnd = end
    }
    var s =
      "<path class=\"\(cls)\" data-beacon=\"\(esc(beacon.description))\" d=\"\(d.trimmingSpaces)\" "
    s += "fill=\"none\" stroke=\"\(color)\" stroke-width=\"1.6\""
    if let dash { s += " stroke-dasharray=\"\(dash)\"" }
    // A lone point would be invisible as a path: round caps make it a dot.
    s += " stroke-linecap=\"round\" stroke-linejoin=\"round\"/>\n"
    return s
  }

  static func timeline(
    _ L: Layout, top: Double, regions: [String], segments: [RegionSegment],
    regionColor: [String: String], ticks: [(WallTime, String)]
  ) -> String {
    var s = "<g class=\"timeline\">\n"
    s += text(L.left, top + 12, "Presence per region", size: 12, weight: "bold")
    let rowsTop = top + 22
    let h = Double(max(1, regions.count)) * L.rowHeight
    s +=
      "<rect x=\"\(n(L.left))\" y=\"\(n(rowsTop))\" width=\"\(n(L.plotWidth))\" height=\"\(n(h))\" "
    s += "fill=\"#fafafa\" stroke=\"#999999\" stroke-width=\"1\"/>\n"
    for (t, label) in ticks {
      let x = L.x(t)
      s += line(x, rowsTop, x, rowsTop + h, stroke: "#e0e0e0")
      s += text(x, rowsTop + h + 14, label, size: 10, anchor: "middle", fill: "#444444")
    }
    for (i, r) in regions.enumerated() {
      let y = rowsTop + Double(i) * L.rowHeight
      s += text(L.left - 6, y + L.rowHeight / 2 + 4, r, size: 11, anchor: "end")
      if i > 0 { s += line(L.left, y, L.left + L.plotWidth, y, stroke: "#dddddd") }
      for seg in segments where seg.region == r && seg.state != .outside {
        let x0 = L.x(seg.start)
        let x1 = L.x(seg.end ?? L.end)
        let inside = seg.state == .inside
        s += "<rect class=\"\(inside ? "presence" : "unknown")\" data-region=\"\(esc(r))\" "
        s += "x=\"\(n(x0))\" y=\"\(n(y + 4))\" width=\"\(n(max(0.5, x1 - x0)))\" "
        s += "height=\"\(n(L.rowHeight - 8))\" "
        s +=
          inside
          ? "fill=\"\(regionColor[r] ?? "#2ca02c")\"/>\n"
          : "fill=\"#bbbbbb\" fill-opacity=\"0.6\"/>\n"
      }
    }
    s += "</g>\n"
    return s
  }

  static func legend(_ L: Layout, regions: [String], colors: [String: String], y: Double) -> String
  {
    var s = "<g class=\"legend\">\n"
    var x = L.left
    s += line(x, y - 4, x + 24, y - 4, stroke: "#333333", width: 1.6)
    s += text(x + 30, y, "mean RSSI (left axis)", size: 11)
    x += 170
    s += "<line x1=\"\(n(x))\" y1=\"\(n(y - 4))\" x2=\"\(n(x + 24))\" y2=\"\(n(y - 4))\" "
    s += "stroke=\"#333333\" stroke-width=\"1.6\" stroke-dasharray=\"5 3\"/>\n"
    s += text(x + 30, y, "distance (right axis)", size: 11)
    x += 170
    for r in regions {
      s +=
        "<rect x=\"\(n(x))\" y=\"\(n(y - 10))\" width=\"14\" height=\"12\" fill=\"\(colors[r]!)\"/>\n"
      let label = "inside \(r)"
      s += text(x + 19, y, label, size: 11)
      x += 30 + Double(label.count) * 6.5
    }
    s +=
      "<rect x=\"\(n(x))\" y=\"\(n(y - 10))\" width=\"14\" height=\"12\" fill=\"#bbbbbb\" fill-opacity=\"0.6\"/>\n"
    s += text(x + 19, y, "unknown", size: 11)
    s += "</g>\n"
    return s
  }

  // MARK: Time axis

  /// Tick times and labels aligned to local time: the smallest step that
  /// gives at most 12 ticks.
  public static func timeTicks(_ first: WallTime, _ last: WallTime, offset: LogTime.Offset)
    -> [(WallTime, String)]
  {
    let (start, end) = (first.micros, last.micros)
    let steps: [Int64] = [
      60, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400, 172_800, 604_800,
    ].map { $0 * 1_000_000 }
    let span = end - start
    let step = steps.first(where: { span / $0 <= 12 }) ?? steps[steps.count - 1]
    var out: [(WallTime, String)] = []
    // Align in local time: shift by the offset at the start.
    let off = Int64(offset(LogTime.floorDiv(start, 1_000_000))) * 1_000_000
    var t = LogTime.floorDiv(start + off, step) * step - off
    if t < start { t += step }
    while t <= end, out.count < 100 {
      let c = LogTime.components(WallTime(micros: t), offset: offset)
      let label: String
      if step >= 86_400_000_000 || (c.hour == 0 && c.minute == 0 && span > 86_400_000_000) {
        label = "\(LogTime.pad(c.month))-\(LogTime.pad(c.day))"
      } else {
        label = "\(LogTime.pad(c.hour)):\(LogTime.pad(c.minute))"
      }
      out.append((WallTime(micros: t), label))
      t += step
    }
    return out
  }

  // MARK: SVG pieces

  static func text(
    _ x: Double, _ y: Double, _ content: String, size: Int, anchor: String = "start",
    weight: String? = nil, fill: String = "#222222", rotate: Bool = false
  ) -> String {
    var s = "<text x=\"\(n(x))\" y=\"\(n(y))\" font-size=\"\(size)\" fill=\"\(fill)\""
    if anchor != "start" { s += " text-anchor=\"\(anchor)\"" }
    if let weight { s += " font-weight=\"\(weight)\"" }
    if rotate { s += " transform=\"rotate(-90 \(n(x)) \(n(y)))\"" }
    return s + ">\(esc(content))</text>\n"
  }

  static func line(
    _ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, stroke: String, width: Double = 1
  ) -> String {
    "<line x1=\"\(n(x1))\" y1=\"\(n(y1))\" x2=\"\(n(x2))\" y2=\"\(n(y2))\" stroke=\"\(stroke)\" "
      + "stroke-width=\"\(n(width))\"/>\n"
  }

  /// Coordinates with two decimals at most (short and exact enough).
  static func n(_ v: Double) -> String {
    var s = JSONLine.format(v, decimals: 2)
    while s.contains("."), s.hasSuffix("0") { s.removeLast() }
    if s.hasSuffix(".") { s.removeLast() }
    return s == "-0" ? "0" : s
  }

  static func fmt(_ v: Double) -> String {
    v < 10 ? JSONLine.format(v, decimals: 1) : n(v.rounded())
  }

  static func niceCeil(_ v: Double) -> Double {
    var scale = 1.0
    while scale * 10 < v { scale *= 10 }
    while scale > v { scale /= 10 }
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] where m * scale >= v { return m * scale }
    return 10 * scale
  }

  public static func esc(_ s: String) -> String {
    var out = ""
    for c in s {
      switch c {
      case "&": out += "&amp;"
      case "<": out += "&lt;"
      case ">": out += "&gt;"
      case "\"": out += "&quot;"
      case "'": out += "&apos;"
      default: out.append(c)
      }
    }
    return out
  }
}
