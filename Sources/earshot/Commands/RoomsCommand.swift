import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

let roomsCommand = Command(
  name: "rooms",
  summary:
    "Room aggregator: which room each tracked beacon or device is in, from every agent's sightings",
  arguments: "[evaluate DIR|score TIMELINE|load]",
  details: """
    earshot rooms               subscribes to the sightings that agents ([rooms] track) publish
                                through the [mqtt] broker, decides each beacon's (or device's) room,
                                prints one JSON line per change {"t":T,"event":"room","beacon":
                                "UUID:MAJOR:MINOR","room":"kitchen"} (a device: "device":"ADDRESS"
                                or "irk#TAG" and its "name"; "room":null when away), publishes it
                                retained on [rooms] topic/beacon/BEACON/state with Home Assistant
                                discovery (a sensor and a device_tracker per beacon or device). It
                                keeps no state: on start it reads the rooms the broker retains.
                                Runs until SIGINT or SIGTERM.
    earshot rooms evaluate DIR  replays DIR/*.btsnoop (one capture per receiver, as 'earshot
                                simulate house' writes them) through each receiver's sightings and
                                the rule, with the naive baseline beside it, and scores both against
                                DIR/truth.jsonl. No broker. --baseline scores the simple rules
                                too (strongest receiver over 5 s, over 15 s, Home Assistant's
                                mqtt_room), one line each.
    earshot rooms score FILE    scores an aggregator's printed timeline (FILE or - for standard
                                input; lines with "rule":"naive" from --naive scored apart) against
                                --truth.
    earshot rooms load          a load generator for scale measurements: publishes a sighting per
                                second from each of --agents agents for each of --beacons beacons
                                (rooms agent-0 ..., beacons UUID 0…) to the [mqtt] broker for
                                --seconds (scripts/rooms-scale.sh drives it).

    The rule: the candidate room has the shortest distance over [rooms] window seconds; a
    challenger replaces the room after winning by [rooms] margin for switch_after seconds; heard
    by no agent for away_after seconds it is away; an agent gone offline (its last will) drops
    out at once. Decisions run on the aggregator's own clock: a sighting counts from its
    arrival, whatever its agent's clock says (agents' clocks may differ); with --pace the time
    starts at the first sighting's t (a replay's capture time). See docs/rooms.md.
    """,
  options: [
    .value(
      "config", "FILE", "Config file (default: the user's or /etc/earshot/earshot.conf if present)"),
    .flag("naive", "Also run the naive baseline (strongest receiver each second); print only"),
    .value(
      "pace", "N",
      "Replays at N x real time: time starts at the first sighting's t and runs N times the clock"
    ),
    .value(
      "offsets", "ROOM=DB,...", "evaluate: rssi_offset per receiver (default 0: uncalibrated)"),
    .value(
      "skew", "ROOM=S,...",
      "evaluate: receivers' clocks S seconds ahead (negative: behind) in their sightings' t"),
    .value("drift", "ROOM=PPM,...", "evaluate: receivers' clocks drifting PPM parts per million"),
    .flag(
      "message-time",
      "evaluate: judge on the sightings' own t (the old way, for comparison), not their arrival"),
    .flag(
      "baseline",
      "evaluate: also score the simple rules on the raw reports (strongest receiver over 5 s and 15 s, Home Assistant's mqtt_room fed a 1 Hz 5 s mean)"
    ),
    .flag(
      "changes",
      "evaluate: also print the rule's room changes, one JSON line each, as the aggregator does (with --baseline, each simple rule's too, marked \"rule\":NAME)"
    ),
    .value("truth", "FILE", "score: the ground truth (truth.jsonl)"),
    .value("covered", "ROOM,...", "score: rooms with a receiver (default: the rooms decided)"),
    .value("end", "SECONDS", "score: Unix time the truth ends (default: the last time in either)"),
    .value("stats", "S", "Log sightings handled and beacons kept every S seconds"),
    .value("agents", "N", "load: agents to simulate (default 50)"),
    .value("beacons", "N", "load: beacons each agent hears (default 500)"),
    .value("seconds", "S", "load: how long to publish (default 60)"),
    .value("first-agent", "N", "load: number of the first agent (several generators share a load)"),
  ],
  run: runRooms)

func runRooms(_ args: Arguments) throws -> Int32 {
  switch args.positionals.first {
  case nil: return try runRoomsAggregator(args)
  case "evaluate": return try runRoomsEvaluate(args)
  case "score": return try runRoomsScore(args)
  case "load": return try runRoomsLoad(args)
  case let other?:
    throw UsageError("unknown 'earshot rooms \(other)': use evaluate, score or load, or nothing")
  }
}

private func roomsConfig(_ args: Arguments) throws -> Config {
  if args.value("config") != nil || access(ConfigLocation.defaultPath(), F_OK) == 0 {
    return try loadConfig(args).0
  }
  return Config(paths: ConfigLocation.paths())
}

// MARK: The aggregator

private func runRoomsAggregator(_ args: Arguments) throws -> Int32 {
  guard args.positionals.count <= 0 else { throw UsageError("unexpected argument") }
  let config = try roomsConfig(args)
  let hostname = MQTTBridge.Options.hostname()
  let bridgeOptions: MQTTBridge.Options
  do {
    bridgeOptions = try MQTTBridge.Options(
      config: config.mqtt, hostname: hostname, version: version)
  } catch {
    throw CommandFailure("\(error)")
  }
  let rooms = config.rooms
  let topics = RoomTopics(rooms)
  let shards = (0..<rooms.shards).filter { rooms.serves(shard: $0) }
  if let serve = rooms.serve, let bad = serve.first(where: { $0.upperBound >= rooms.shards }) {
    throw CommandFailure(
      "[rooms] serve names shard \(bad.upperBound), but shards = \(rooms.shards) (shards are 0 to \(rooms.shards - 1))"
    )
  }
  // One id per share of the site: aggregators serving other shards coexist.
  let share =
    rooms.serve == nil ? "" : "-" + RoomsConfig.keys.first { $0.name == "serve" }!.show(rooms)
  var client = bridgeOptions.client
  client.clientID = (config.mqtt.clientID ?? "earshot-rooms-\(hostname)") + share
  let statusTopic = topics.aggregatorStatus(hostname + share)
  var options = RoomsAggregator.Options(
    client: client, topics: topics, settings: RoomRule.Settings(config: config),
    track: rooms.track, serves: { rooms.serves(shard: $0) }, shards: shards,
    discovery: config.mqtt.discovery
      ? RoomsDiscovery(
        topics: topics, aggregatorStatus: statusTopic, version: version,
        prefix: config.mqtt.discoveryPrefix) : nil,
    aggregatorStatus: statusTopic)
  options.trackDevices = rooms.trackDevices
  options.espresenseNodes = rooms.espresenseNodes
  options.naive = args.has("naive")
  if let pace = try args.double("pace") {
    guard pace > 0, pace <= 1000 else {
      throw UsageError("--pace expects a number above 0, at most 1000")
    }
    options.pace = pace
    options.replay = true
  }
  let loop: EventLoop
  do { loop = try EventLoop() } catch { throw CommandFailure("\(error)") }
  let aggregator = try RoomsAggregator(loop: loop, options: options)
  Console.lineBuffered = true  // a change is news: out at once
  aggregator.onChange = { Console.line($0) }
  aggregator.onLog = { Console.error("earshot rooms: \($0)\n") }
  try loop.handleSignals([SIGINT, SIGTERM]) { _ in
    aggregator.close()
    loop.stop()
  }
  if let every = try args.double("stats") {
    guard every >= 0.1 else { throw UsageError("--stats expects seconds, at least 0.1") }
    var last = 0
    func report() {
      let n = aggregator.sightings
      Console.error(
        "earshot rooms: \(n - last) sightings in \(ConfigValue.show(every)) s, \(aggregator.rule.beaconCount) beacons, \(aggregator.malformed) malformed\n"
      )
      last = n
      loop.after(seconds: every, report)
    }
    loop.after(seconds: every, report)
  }
  aggregator.start()
  try loop.run()
  return 0
}

// MARK: Evaluation and scoring

private func readTruth(_ path: String) throws -> [RoomChange] {
  let text: String
  do { text = String(decoding: try FileBytes(path: path).bytes, as: UTF8.self) } catch {
    throw CommandFailure("cannot read the truth \(path): \(error)")
  }
  var out: [RoomChange] = []
  for (k, line) in text.split(separator: "\n").enumerated() {
    guard let c = RoomChange.parse(String(line), requireEvent: false) else {
      throw CommandFailure("\(path):\(k + 1): not a truth line {\"t\":…,\"beacon\":…,\"room\":…}")
    }
    out.append(c)
  }
  guard !out.isEmpty else { throw CommandFailure("\(path) holds no truth lines") }
  return out
}

private func printScores(
  _ rule: RoomScore, _ naive: RoomScore?, awayAfter: ExitAfter
) {
  let away: Double? = if case .seconds(let s) = awayAfter { s } else { nil }
  Console.line("rule:  " + rule.summary(awayAfter: away))
  if let naive { Console.line("naive: " + naive.summary(awayAfter: away)) }
}

private func runRoomsEvaluate(_ args: Arguments) throws -> Int32 {
  guard args.positionals.count == 2 else { throw UsageError("usage: earshot rooms evaluate DIR") }
  let dir = args.positionals[1]
  let config = try roomsConfig(args)
  func perRoom(_ option: String, _ example: String) throws -> [String: Double] {
    var out: [String: Double] = [:]
    for item in ConfigValue.list(args.value(option) ?? "") {
      let kv = item.split(separator: "=", maxSplits: 1)
      guard kv.count == 2, let v = Double(kv[1]), v.isFinite else {
        throw UsageError("--\(option) expects ROOM=NUMBER,... (e.g. \(example)), got '\(item)'")
      }
      out[String(kv[0])] = v
    }
    return out
  }
  let offsets = try perRoom("offsets", "living=-5,kitchen=5")
  let skews = try perRoom("skew", "kitchen=3600,living=-600")
  let drifts = try perRoom("drift", "bedroom=50")
  guard let d = opendir(dir) else {
    throw CommandFailure("cannot open \(dir): \(SystemError(errno: errno, "opendir"))")
  }
  var captures: [String] = []
  while let e = readdir(d) {
    let name = withUnsafeBytes(of: e.pointee.d_name) {
      String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
    }
    if name.hasSuffix(".btsnoop") { captures.append(name) }
  }
  closedir(d)
  captures.sort()
  guard !captures.isEmpty else { throw CommandFailure("\(dir) holds no .btsnoop captures") }
  let truth = try readTruth(dir + "/truth.jsonl")
  // A capture's name is its receiver's room.
  let covered = Set(captures.map { String($0.dropLast(".btsnoop".count)) })
  try requireTruthRooms(
    covered, truth,
    "none of \(dir)'s captures is named after a room of its truth.jsonl; a capture's name is its receiver's room: rename the captures ROOM.btsnoop (or name each [receiver] of the spec) after the rooms they stand in"
  )
  var track = config.rooms.track
  if track.isEmpty {
    track = Array(Set(truth.compactMap { $0.beacon?.uuid })).map { TrackedMatch(uuid: $0) }
  }
  var sightings: [RoomSighting] = []
  // --baseline: every tracked report, its receiver's offset applied.
  let baselines = args.has("baseline")
  var reports: [(t: Int64, room: String, subject: RoomSubject, rssi: Double)] = []
  var end: Int64 = 0
  for name in captures {
    let room = String(name.dropLast(".btsnoop".count))
    var c = config
    c.rooms.track = track
    c.ranging.rssiOffset = offsets[room] ?? config.ranging.rssiOffset
    var publisher = SightingPublisher(room: room, config: c)
    let bytes: [UInt8]
    do { bytes = try FileBytes(path: dir + "/" + name).bytes } catch {
      throw CommandFailure("cannot read \(dir)/\(name): \(error)")
    }
    var replay = CaptureReplay()
    do {
      try bytes.withUnsafeBytes { raw in
        try replay.run(
          raw,
          report: { t, r in
            end = max(end, t)
            guard let b = TrackedBeacon.iBeacon(advertisingData: r.data) else { return }
            if baselines, let rssi = r.rssi, track.contains(where: { $0.matches(b.id) }) {
              reports.append((t, room, .beacon(b.id), Double(rssi) + c.ranging.rssiOffset))
            }
            // A replay decides on the capture's clock and sends its time.
            let heard = WallTime(micros: t)
            guard
              let s = publisher.report(
                at: DecisionTime(capture: heard), beacon: b, address: r.address, rssi: r.rssi)
            else { return }
            sightings.append(s.sent(at: heard))
          })
      }
    } catch {
      throw CommandFailure("\(dir)/\(name): \(error)")
    }
  }
  // As the broker would deliver them: in the order heard (the capture
  // time, which is the truth's), each arriving when it was heard, on an
  // aggregator whose clock is in step with the truth. The receivers'
  // clocks (--skew, --drift) change only the `t` each sighting carries.
  sightings.sort { ($0.t, $0.room) < ($1.t, $1.room) }
  let start = sightings.first?.t.micros ?? 0
  func arrival(_ t: Int64) -> MonotonicTime {
    MonotonicTime(decision: DecisionTime(micros: t - start))
  }
  let heard = sightings.map(\.t.micros)
  for k in sightings.indices {
    let room = sightings[k].room
    let ahead = (skews[room] ?? 0) + (drifts[room] ?? 0) * 1e-6 * Double(heard[k] - start) / 1e6
    sightings[k].t.micros += Int64((ahead * 1e6).rounded())
  }
  let settings = RoomRule.Settings(config: config)
  var decided: [RoomChange] = []
  var baseline: [RoomChange] = []
  let cpu = Clock.processCPUNanos()
  if args.has("message-time") {
    var rule = RoomRule(settings: settings)
    var naive = RoomRule(settings: settings.naive())
    for s in sightings {
      decided += rule.sighting(s)
      baseline += naive.sighting(s)
    }
    let last = WallTime(micros: max(end, sightings.map(\.t.micros).max() ?? end))
    decided += rule.advance(to: last)
    baseline += naive.advance(to: last)
  } else {
    var judge = RoomJudge(
      settings: settings, clock: RoomClock(origin: .wall(WallTime(micros: start), at: .zero)),
      naive: true)
    for (k, s) in sightings.enumerated() {
      let c = judge.sighting(s, arrival: arrival(heard[k]))
      decided += c.rule
      baseline += c.naive
    }
    let last = judge.advance(to: arrival(end))
    decided += last.rule
    baseline += last.naive
  }
  let cpuSeconds = Double(Clock.processCPUNanos() - cpu) / 1e9
  if args.has("changes") { for c in decided { Console.line(c.json) } }
  Console.line(
    "\(dir): \(captures.count) receivers, \(sightings.count) sightings, rule run in \(JSONLine.format(cpuSeconds * 1000, decimals: 1)) ms CPU (both rules)"
  )
  printScores(
    RoomScore.score(truth: truth, decided: decided, covered: covered, end: end),
    RoomScore.score(truth: truth, decided: baseline, covered: covered, end: end),
    awayAfter: config.rooms.awayAfter)
  if baselines {
    reports.sort { ($0.t, $0.room) < ($1.t, $1.room) }
    let away: Duration =
      if case .seconds(let s) = config.rooms.awayAfter { .seconds(s) } else { .seconds(30) }
    for kind in RoomBaseline.standard {
      var rules: [RoomSubject: RoomBaseline] = [:]
      var changes: [RoomChange] = []
      for r in reports {
        changes += rules[
          r.subject, default: RoomBaseline(kind: kind, subject: r.subject, awayAfter: away)
        ]
        .report(at: WallTime(micros: r.t), room: r.room, rssi: r.rssi)
      }
      for k in rules.keys { changes += rules[k]!.advance(to: WallTime(micros: end)) }
      let score = RoomScore.score(truth: truth, decided: changes, covered: covered, end: end)
      // Marked as the aggregator marks the naive rule's, so that `rooms
      // score` can tell them from the rule's.
      if args.has("changes") {
        for c in changes.sorted(by: { $0.t < $1.t }) {
          Console.line(String(c.json.dropLast()) + ",\"rule\":\"\(kind.name)\"}")
        }
      }
      Console.line("\(kind.name): " + score.summary(awayAfter: nil))
    }
  }
  return 0
}

private func runRoomsScore(_ args: Arguments) throws -> Int32 {
  guard args.positionals.count == 2 else {
    throw UsageError("usage: earshot rooms score TIMELINE --truth FILE")
  }
  guard let truthPath = args.value("truth") else { throw UsageError("score needs --truth FILE") }
  let config = try roomsConfig(args)
  let truth = try readTruth(truthPath)
  let path = args.positionals[1]
  let bytes: [UInt8]
  do { bytes = try FileBytes(path: path).bytes } catch {
    throw CommandFailure("cannot read \(path): \(error)")
  }
  var decided: [RoomChange] = []
  var baseline: [RoomChange] = []
  for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
    guard let c = RoomChange.parse(String(line)) else { continue }
    if line.contains("\"rule\":\"naive\"") {
      baseline.append(c)
    } else if !line.contains("\"rule\":") {  // not a simple rule's (evaluate --baseline --changes)
      decided.append(c)
    }
  }
  let decidedRooms = Set((decided + baseline).compactMap(\.room))
  var covered = Set(ConfigValue.list(args.value("covered") ?? ""))
  if covered.isEmpty { covered = decidedRooms }
  try requireTruthRooms(
    decidedRooms, truth,
    "no room decided in \(path) is a room of \(truthPath); name each agent's [rooms] room after the rooms of the truth"
  )
  let endSeconds = try args.double("end")
  let end =
    endSeconds.map { Int64($0 * 1e6) } ?? (truth + decided + baseline).map(\.t.micros).max()!
  printScores(
    RoomScore.score(truth: truth, decided: decided, covered: covered, end: end),
    baseline.isEmpty
      ? nil : RoomScore.score(truth: truth, decided: baseline, covered: covered, end: end),
    awayAfter: config.rooms.awayAfter)
  return 0
}

/// Scoring rooms that the truth never names would print 0 % wrong of 0
/// minutes (or 100 %): a mistake (captures or agents named after devices),
/// not a score. A truth that names no room, or nothing decided, passes.
private func requireTruthRooms(_ covered: Set<String>, _ truth: [RoomChange], _ message: String)
  throws
{
  let truthRooms = Set(truth.compactMap(\.room))
  guard !covered.isEmpty, !truthRooms.isEmpty, covered.isDisjoint(with: truthRooms) else { return }
  throw CommandFailure(
    "\(message) (rooms scored: \(covered.sorted().joined(separator: ", ")); the truth's: \(truthRooms.sorted().joined(separator: ", ")))"
  )
}

// MARK: Load

private func runRoomsLoad(_ args: Arguments) throws -> Int32 {
  let config = try roomsConfig(args)
  let agents = Int(args.value("agents") ?? "50") ?? 0
  let beacons = Int(args.value("beacons") ?? "500") ?? 0
  let seconds = try args.double("seconds") ?? 60
  let first = Int(args.value("first-agent") ?? "0") ?? -1
  guard first >= 0 else { throw UsageError("--first-agent expects a whole number") }
  guard (1...1000).contains(agents), (1...65535).contains(beacons), seconds > 0, seconds <= 86_400
  else { throw UsageError("--agents 1…1000, --beacons 1…65535, --seconds above 0") }
  let options: MQTTBridge.Options
  do {
    options = try MQTTBridge.Options(
      config: config.mqtt, hostname: MQTTBridge.Options.hostname(), version: version)
  } catch {
    throw CommandFailure("\(error)")
  }
  var client = options.client
  client.clientID = "earshot-rooms-load-\(getpid())"
  let loop: EventLoop
  do { loop = try EventLoop() } catch { throw CommandFailure("\(error)") }
  let mqtt = try MQTTClient(loop: loop, options: client)
  mqtt.onLog = { Console.error("earshot rooms load: \($0)\n") }
  let topics = RoomTopics(config.rooms)
  let uuid = BeaconUUID(high: 0x4541_5253_484F_5400, low: 0)  // "EARSHOT"
  // Topics worked out once: the generator must not be the bottleneck.
  var pairs: [(topic: String, room: String, near: Bool)] = []
  pairs.reserveCapacity(agents * beacons)
  for b in 0..<beacons {
    let id = TrackedID(uuid: uuid, major: 1, minor: UInt16(b))
    for a in 0..<agents {
      let room = "agent-\(first + a)"
      pairs.append((topics.sighting(id, room: room), room, b % agents == a))
    }
  }
  let tickSeconds = 0.01
  let perTick = max(1, Int((Double(pairs.count) * tickSeconds).rounded(.up)))
  var next = 0
  var sent = 0
  let start = Clock.monotonicNanos()
  func tick() {
    let elapsed = Double(Clock.monotonicNanos() - start) / 1e9
    if elapsed >= seconds {
      Console.line("published \(sent) sightings in \(JSONLine.format(elapsed, decimals: 1)) s")
      mqtt.close()
      loop.stop()
      return
    }
    if mqtt.isConnected {
      // Catch up to where the clock says we should be.
      let due = Int(elapsed / tickSeconds) * perTick + perTick
      var budget = min(due - sent, pairs.count)
      let now = Clock.realtimeMicros()
      while budget > 0 {
        let p = pairs[next]
        let d = p.near ? 1.5 : 5.0 + Double(next % 7) * 0.3
        let s = RoomSighting(
          t: WallTime(micros: now),
          beacon: TrackedID(uuid: uuid, major: 1, minor: UInt16(next / agents)),
          room: p.room, rssi: -70, distance: d, count: 3)
        mqtt.publish(p.topic, s.payload, qos: 0, retain: false)
        sent += 1
        budget -= 1
        next = (next + 1) % pairs.count
      }
    }
    loop.after(seconds: tickSeconds, tick)
  }
  mqtt.start()
  loop.after(seconds: 0, tick)
  try loop.run()
  return 0
}
