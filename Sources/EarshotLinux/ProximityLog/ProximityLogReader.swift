import EarshotCore

/// Queries over a proximity log, with `earshot log`'s filters applied.
/// Opens the file read-only: it never blocks the agent's writer (WAL lets
/// readers and one writer work at once).
public final class ProximityLogReader {
  public let store: ProximityLogStore

  public init(path: String) throws {
    store = try ProximityLogStore.openForReading(path: path)
  }

  /// Regions the filtered beacons were ranged in.
  private func regions(of filter: TrackedMatch) throws -> Set<String> {
    var out: Set<String> = []
    for (b, regions) in try store.beaconRegions() where filter.matches(b) {
      out.formUnion(regions)
    }
    return out
  }

  /// Region events, sightings and (without a region or beacon filter)
  /// adapter, find-phone and volume events in the window, oldest first.
  public func records(_ q: LogQuery) throws -> [LogRecord] {
    var out: [LogRecord] = []
    var events = try store.regionEvents(until: q.until, region: q.region)
    if let since = q.since { events.removeAll { $0.t < since } }
    if let f = q.beacon {
      let regions = try regions(of: f)
      events.removeAll { e in !(e.beacon.map(f.matches) ?? false) && !regions.contains(e.region) }
    }
    out += events.map { .region($0) }

    // Sightings and telemetry keep the beacons of the filter and of the
    // region (read once for both).
    let members = try q.region.map { region in
      Set(try store.beaconRegions().filter { $0.value.contains(region) }.keys)
    }
    func kept(_ b: TrackedID) -> Bool {
      (q.beacon?.matches(b) ?? true) && (members?.contains(b) ?? true)
    }
    let rows = try store.sightings(since: q.since, until: q.until, uuid: q.beacon?.wholeUUID)
    out += rows.filter { kept($0.beacon) }.map { .sightings($0) }
    let readings = try store.telemetry(since: q.since, until: q.until)
    out += readings.filter { kept($0.beacon) }.map { .telemetry($0) }

    if q.region == nil && q.beacon == nil {
      out += try store.agentEvents(since: q.since, until: q.until)
    }
    return out.enumerated().sorted {
      ($0.element.t, $0.element.rank, $0.offset) < ($1.element.t, $1.element.rank, $1.offset)
    }.map(\.element)
  }

  /// Region events that bear on the query's presence (all before `until`).
  public func regionEvents(_ q: LogQuery) throws -> [RegionLogEvent] {
    var events = try store.regionEvents(until: q.until, region: q.region)
    if let f = q.beacon {
      let regions = try regions(of: f)
      let named = Set(events.filter { $0.beacon.map(f.matches) ?? false }.map(\.region))
      events.removeAll { !regions.contains($0.region) && !named.contains($0.region) }
    }
    return events
  }

  public func presence(_ q: LogQuery) throws -> [PresenceInterval] {
    PresenceTimeline.presence(of: try regionEvents(q), from: q.since, to: q.until)
  }

  /// Everything `earshot plot` draws for a window.
  public func plotInput(_ q: LogQuery, title: String, offset: @escaping LogTime.Offset) throws
    -> PlotInput
  {
    let start = q.since ?? WallTime(micros: 0)
    let end = q.until ?? start + .seconds(86_400)
    var rows = try store.sightings(since: start, until: end, uuid: q.beacon?.wholeUUID)
    if let f = q.beacon { rows.removeAll { !f.matches($0.beacon) } }
    let membership = try store.beaconRegions()
    if let region = q.region {
      rows.removeAll { !(membership[$0.beacon]?.contains(region) ?? false) }
    }
    // States are drawn only as far as the log knows them: an open interval
    // ends at the latest record, not at the end of the day.
    let known = max(start + .microseconds(1), min(end, try store.lastTime() ?? end))
    return PlotInput(
      start: start, end: end, title: title, sightings: rows,
      segments: PresenceTimeline.segments(of: try regionEvents(q), from: start, to: known),
      beaconRegions: membership, interval: store.sightingInterval() ?? 10_000_000, offset: offset)
  }
}
