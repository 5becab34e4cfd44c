/// Draws a tracker's evidence as `earshot plot` draws presence, with its
/// layout, time axis and SVG pieces: one row per place (in the order first
/// heard, unknown places in a last row), a mark per sighting (darker the
/// stronger its signal), and a red line at the moment it started to follow.
/// Pure.
///
/// Elements carry classes and data attributes (`class="sighting"
/// data-place=…`, `class="alert"`) so tests and scripts can find them.
public enum TrackerEvidencePlot {
  public static func svg(
    _ e: TrackerEvidence, title: String? = nil, offset: @escaping LogTime.Offset = LogTime.utc
  ) -> String {
    typealias P = ProximityPlot
    let times = e.sightings.map(\.time) + (e.following.map { [$0] } ?? [])
    let first = times.min() ?? WallTime(micros: 0)
    let last = times.max() ?? first
    // A little room either side, so the first and last marks are not on the frame.
    let pad = Duration.microseconds(max(60_000_000, (last.micros - first.micros) / 40))
    let L = P.Layout(start: first - pad, end: last + pad)
    let places = e.places
    let unknown = e.sightings.contains { $0.place == nil }
    let rows = places.map { "place \($0.number)" } + (unknown ? ["unknown"] : [])
    let rowsTop = L.top + 22
    let h = Double(max(1, rows.count)) * L.rowHeight
    let height = rowsTop + h + 50

    var s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(P.n(L.width))\" "
    s += "height=\"\(P.n(height))\" viewBox=\"0 0 \(P.n(L.width)) \(P.n(height))\" "
    s += "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
    s +=
      "<rect x=\"0\" y=\"0\" width=\"\(P.n(L.width))\" height=\"\(P.n(height))\" fill=\"#ffffff\"/>\n"
    let heading =
      title ?? "Tracker \(e.number.value): \(e.family.rawValue) \(e.kind.rawValue) \(e.address)"
    s += P.text(L.left, 24, heading, size: 17, weight: "bold")
    var subtitle =
      "\(LogTime.short(first, offset: offset)) to \(LogTime.short(last, offset: offset)): "
      + "\(e.sightings.count) sighting(s) kept in \(places.count) place(s), \(e.moves.count) move(s)"
    if let f = e.following { subtitle += "; follows since \(LogTime.short(f, offset: offset))" }
    s += P.text(L.left, 42, subtitle, size: 12, fill: "#555555")
    s += legend(L, y: 62)

    s += "<g class=\"timeline\">\n"
    s += P.text(L.left, L.top + 12, "Sightings per place", size: 12, weight: "bold")
    s += "<rect x=\"\(P.n(L.left))\" y=\"\(P.n(rowsTop))\" width=\"\(P.n(L.plotWidth))\" "
    s += "height=\"\(P.n(h))\" fill=\"#fafafa\" stroke=\"#999999\" stroke-width=\"1\"/>\n"
    for (t, label) in P.timeTicks(L.start, L.end, offset: offset) {
      let x = L.x(t)
      s += P.line(x, rowsTop, x, rowsTop + h, stroke: "#e0e0e0")
      s += P.text(x, rowsTop + h + 14, label, size: 10, anchor: "middle", fill: "#444444")
    }
    for (i, r) in rows.enumerated() {
      let y = rowsTop + Double(i) * L.rowHeight
      s += P.text(L.left - 6, y + L.rowHeight / 2 + 4, r, size: 11, anchor: "end")
      if i > 0 { s += P.line(L.left, y, L.left + L.plotWidth, y, stroke: "#dddddd") }
    }
    for sighting in e.sightings {
      let row = sighting.place.flatMap { places.firstIndex(of: $0) } ?? places.count
      let y = rowsTop + (Double(row) + 0.5) * L.rowHeight
      let place = sighting.place.map { String($0.number) } ?? "unknown"
      s += "<circle class=\"sighting\" data-place=\"\(place)\" cx=\"\(P.n(L.x(sighting.time)))\" "
      s += "cy=\"\(P.n(y))\" r=\"5\" fill=\"#1f77b4\" fill-opacity=\"\(opacity(sighting.rssi))\">"
      s += "<title>\(P.esc(LogTime.short(sighting.time, offset: offset)))"
      if let rssi = sighting.rssi { s += ", \(rssi) dBm" }
      s += "</title></circle>\n"
    }
    if let f = e.following {
      let x = L.x(f)
      s += "<g class=\"alert\">\n"
      s += P.line(x, rowsTop - 6, x, rowsTop + h + 2, stroke: "#d62728", width: 2)
      s += P.text(x + 4, rowsTop - 8, "follows", size: 11, fill: "#d62728")
      s += "</g>\n"
    }
    if e.sightings.isEmpty {
      s += P.text(L.left + 8, rowsTop + 16, "No sightings kept.", size: 12, fill: "#555555")
    }
    s += "</g>\n</svg>\n"
    return s
  }

  /// Stronger signals darker: -100 dBm faint, -40 dBm solid; no RSSI mid.
  static func opacity(_ rssi: Int8?) -> String {
    guard let rssi else { return "0.6" }
    let f = min(1, max(0, (Double(rssi) + 100) / 60))
    return ProximityPlot.n(0.25 + 0.75 * f)
  }

  static func legend(_ L: ProximityPlot.Layout, y: Double) -> String {
    typealias P = ProximityPlot
    var s = "<g class=\"legend\">\n"
    s += "<circle cx=\"\(P.n(L.left + 6))\" cy=\"\(P.n(y - 4))\" r=\"5\" fill=\"#1f77b4\"/>\n"
    s += P.text(L.left + 16, y, "a sighting kept as evidence (darker: stronger signal)", size: 11)
    let x = L.left + 350
    s += P.line(x, y - 10, x, y + 2, stroke: "#d62728", width: 2)
    s += P.text(x + 8, y, "the moment it was found to follow", size: 11)
    s += "</g>\n"
    return s
  }
}
