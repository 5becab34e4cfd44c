/// Event streams a client can subscribe to.
public enum ControlTopic: String, CaseIterable, Sendable {
  case regions, ranging, volume, find, tags, trackers
}

/// The control protocol's command names: the one table the parser, the
/// encoder and the error messages take them from.
public enum ControlVerb: String, CaseIterable, Sendable {
  case status
  case volumeGet = "volume.get"
  case volumeSet = "volume.set"
  case volumeMute = "volume.mute"
  case volumeUnmute = "volume.unmute"
  case findStatus = "find.status"
  case found
  case subscribe
  case unsubscribe
  case deviceRegister = "device.register"
  case findStart = "find.start"
  case findStop = "find.stop"
  case noticeAck = "notice.ack"
  case noticeFail = "notice.fail"
  case shutter
  case mediaPlay = "media.play"
  case mediaPause = "media.pause"
  case mediaResume = "media.resume"
  case mediaStop = "media.stop"
  case ring
  case trackerTrust = "tracker.trust"
  case trackerClear = "tracker.clear"
  case trackerEvidence = "tracker.evidence"
  case trackerRing = "tracker.ring"
}

/// What a control-socket client asks for. The wire name is `cmd`.
public enum ControlCommand: Equatable, Sendable {
  case status
  case volumeGet
  case volumeSet(Double)
  case volumeMute
  case volumeUnmute
  case findStatus
  case found
  case subscribe([ControlTopic])
  case unsubscribe([ControlTopic])
  /// This connection speaks for a device (the local device link).
  case deviceRegister(name: String)
  /// Device requests; the connection must be registered.
  case findStart
  case findStop
  case noticeAck(NoticeID)
  case noticeFail(NoticeID, reason: String)
  /// A remote-shutter event by its wire value (enter 1, capture 2, exit 0;
  /// anything else is answered with `unknown_event`). Answered when the
  /// camera has done it.
  case shutter(Int)
  /// Play a title from the media library; answered with the completion.
  case mediaPlay(title: String)
  case mediaPause
  case mediaResume
  case mediaStop
  /// Write Alert Level to a tag's or a bonded device's Immediate Alert
  /// service (`target`: a tag name or an address).
  case ring(target: String, level: AlertLevel)
  /// Trust a tracker the watch keeps (for `seconds`, or until cleared).
  case trackerTrust(number: Int, seconds: Double?)
  /// Forget a tracker, its evidence and its alert.
  case trackerClear(number: Int)
  /// A tracker's evidence (nil: every tracker kept), as `TrackerEvidence.json`.
  case trackerEvidence(number: Int?)
  /// Ring (or silence, or identify) a tracker the watch keeps.
  case trackerRing(number: Int, mode: TrackerSoundMode)

  /// The command's wire name (`cmd`).
  public var name: String { verb.rawValue }

  public var verb: ControlVerb {
    switch self {
    case .status: .status
    case .volumeGet: .volumeGet
    case .volumeSet: .volumeSet
    case .volumeMute: .volumeMute
    case .volumeUnmute: .volumeUnmute
    case .findStatus: .findStatus
    case .found: .found
    case .subscribe: .subscribe
    case .unsubscribe: .unsubscribe
    case .deviceRegister: .deviceRegister
    case .findStart: .findStart
    case .findStop: .findStop
    case .noticeAck: .noticeAck
    case .noticeFail: .noticeFail
    case .shutter: .shutter
    case .mediaPlay: .mediaPlay
    case .mediaPause: .mediaPause
    case .mediaResume: .mediaResume
    case .mediaStop: .mediaStop
    case .ring: .ring
    case .trackerTrust: .trackerTrust
    case .trackerClear: .trackerClear
    case .trackerEvidence: .trackerEvidence
    case .trackerRing: .trackerRing
    }
  }

  /// Every wire name, in the protocol's order.
  public static var names: [String] { ControlVerb.allCases.map(\.rawValue) }

  /// Longest title `media.play` accepts.
  public static let maxTitleBytes = 1024
}

public struct ControlRequest: Equatable, Sendable {
  /// An integer or a string, echoed in the response.
  public var id: JSONValue
  public var command: ControlCommand

  public init(id: JSONValue, command: ControlCommand) {
    self.id = id
    self.command = command
  }

  /// The request as one line (without the newline), for clients.
  public var encoded: String {
    var fields: [(String, JSONValue)] = [("id", id), ("cmd", .string(command.name))]
    switch command {
    case .volumeSet(let level): fields.append(("level", .number(level)))
    case .subscribe(let topics), .unsubscribe(let topics):
      fields.append(("topics", .array(topics.map { .string($0.rawValue) })))
    case .deviceRegister(let name): fields.append(("name", .string(name)))
    case .noticeAck(let n): fields.append(("notice", .int(n)))
    case .noticeFail(let n, let reason):
      fields.append(("notice", .int(n)))
      fields.append(("reason", .string(reason)))
    case .shutter(let raw): fields.append(("event", .int(raw)))
    case .mediaPlay(let title): fields.append(("title", .string(title)))
    case .ring(let target, let level):
      fields.append(("target", .string(target)))
      fields.append(("level", .int(Int(level.rawValue))))
    case .trackerTrust(let n, let seconds):
      fields.append(("number", .int(n)))
      if let seconds { fields.append(("seconds", .number(seconds))) }
    case .trackerClear(let n): fields.append(("number", .int(n)))
    case .trackerEvidence(let n?): fields.append(("number", .int(n)))
    case .trackerRing(let n, let mode):
      fields.append(("number", .int(n)))
      fields.append(("mode", .string(mode.rawValue)))
    default: break
    }
    return JSONValue.object(fields).encoded
  }
}

/// An error response's `error` object. Codes are stable; messages say what to do.
public struct ControlError: Error, Equatable, Sendable {
  public enum Code: String, Sendable {
    case parseError = "parse_error"
    case lineTooLong = "line_too_long"
    case invalidRequest = "invalid_request"
    case missingField = "missing_field"
    case unknownCommand = "unknown_command"
    case notRegistered = "not_registered"
    case notRinging = "not_ringing"
    case unknownEvent = "unknown_event"
    case unknownNotice = "unknown_notice"
    case unavailable
    case busy
    case failed
    case permissionDenied = "permission_denied"
    case tooManyClients = "too_many_clients"
  }
  public var code: Code
  public var message: String

  public init(_ code: Code, _ message: String) {
    self.code = code
    self.message = message
  }
}

/// The control socket's wire format: one JSON object per line each way.
/// Requests: `{"id":7,"cmd":"volume.set","level":0.5}`. Every request gets
/// exactly one response with its id: `{"id":7,"ok":true,...}` or
/// `{"id":7,"ok":false,"error":{"code":"...","message":"..."}}`; `id` is
/// null when it could not be read. Lines without an `id` are events:
/// `{"event":"find",...}` for subscribers, `{"event":"notice",...}` for devices.
public enum ControlProtocol {
  /// Longest accepted line in bytes; longer ones get `line_too_long`.
  public static let maxLineBytes = 64 * 1024
  /// Longest device name.
  public static let maxNameBytes = 64
  public static var maxTitleBytes: Int { ControlCommand.maxTitleBytes }

  public struct Rejection: Error, Equatable, Sendable {
    public var id: JSONValue
    public var error: ControlError
  }

  public static func parse(line: [UInt8]) -> Result<ControlRequest, Rejection> {
    let value: JSONValue
    do {
      value = try JSONParser.parse(line)
    } catch {
      return .failure(
        Rejection(id: .null, error: ControlError(.parseError, "malformed JSON: \(error)")))
    }
    guard case .object = value else {
      return .failure(
        Rejection(id: .null, error: ControlError(.invalidRequest, "a request is a JSON object")))
    }
    guard let id = value["id"] else {
      return .failure(
        Rejection(
          id: .null,
          error: ControlError(
            .missingField, "missing \"id\": give each request an integer or string id")
        ))
    }
    guard id.integer != nil || id.string != nil else {
      return .failure(
        Rejection(
          id: .null, error: ControlError(.invalidRequest, "\"id\" must be an integer or a string")))
    }
    do {
      return .success(ControlRequest(id: id, command: try command(value)))
    } catch let e as ControlError {
      return .failure(Rejection(id: id, error: e))
    } catch {
      return .failure(Rejection(id: id, error: ControlError(.invalidRequest, "\(error)")))
    }
  }

  private static func command(_ v: JSONValue) throws -> ControlCommand {
    guard let cmdValue = v["cmd"] else {
      throw ControlError(
        .missingField, "missing \"cmd\"; one of: \(ControlCommand.names.joined(separator: ", "))")
    }
    guard let cmd = cmdValue.string else {
      throw ControlError(.invalidRequest, "\"cmd\" must be a string")
    }
    guard let verb = ControlVerb(rawValue: cmd) else {
      throw ControlError(
        .unknownCommand,
        "unknown command \(JSONLine.quoted(cmd)); commands: \(ControlCommand.names.joined(separator: ", "))"
      )
    }
    switch verb {
    case .status: return .status
    case .volumeGet: return .volumeGet
    case .volumeSet:
      guard let field = v["level"] else {
        throw ControlError(.missingField, "\(verb.rawValue) needs \"level\" (0.0 to 1.0)")
      }
      guard let level = field.number, (0...1).contains(level) else {
        throw ControlError(.invalidRequest, "\"level\" must be a number from 0.0 to 1.0")
      }
      return .volumeSet(level)
    case .volumeMute: return .volumeMute
    case .volumeUnmute: return .volumeUnmute
    case .findStatus: return .findStatus
    case .found: return .found
    case .subscribe, .unsubscribe:
      guard let field = v["topics"] else {
        throw ControlError(
          .missingField,
          "\(verb.rawValue) needs \"topics\": a list of \(ControlTopic.allCases.map(\.rawValue).joined(separator: ", "))"
        )
      }
      guard let list = field.array, !list.isEmpty else {
        throw ControlError(.invalidRequest, "\"topics\" must be a non-empty list of strings")
      }
      var topics: [ControlTopic] = []
      for item in list {
        guard let s = item.string, let t = ControlTopic(rawValue: s) else {
          throw ControlError(
            .invalidRequest,
            "unknown topic \(item.encoded); topics are \(ControlTopic.allCases.map(\.rawValue).joined(separator: ", "))"
          )
        }
        if !topics.contains(t) { topics.append(t) }
      }
      return verb == .subscribe ? .subscribe(topics) : .unsubscribe(topics)
    case .deviceRegister:
      guard let field = v["name"] else {
        throw ControlError(.missingField, "\(verb.rawValue) needs \"name\"")
      }
      guard let name = field.string, validName(name) else {
        throw ControlError(
          .invalidRequest,
          "\"name\" must be 1 to \(maxNameBytes) bytes of printable text")
      }
      return .deviceRegister(name: name)
    case .findStart: return .findStart
    case .findStop: return .findStop
    case .noticeAck, .noticeFail:
      guard let field = v["notice"] else {
        throw ControlError(
          .missingField, "\(verb.rawValue) needs \"notice\", the id from the notice event")
      }
      guard let n = field.integer, n > 0 else {
        throw ControlError(.invalidRequest, "\"notice\" must be a positive integer")
      }
      if verb == .noticeAck { return .noticeAck(NoticeID(n)) }
      let reason = v["reason"]?.string ?? "the device refused the notice"
      return .noticeFail(NoticeID(n), reason: reason)
    case .shutter:
      guard let field = v["event"] else {
        throw ControlError(
          .missingField, "\(verb.rawValue) needs \"event\": enter, capture, exit, or a wire value")
      }
      if let n = field.integer { return .shutter(Int(clamping: n)) }
      if let name = field.string, let c = ShutterCommand(text: name) { return .shutter(c.rawValue) }
      throw ControlError(
        .invalidRequest,
        "\"event\" must be enter, capture, exit or an integer (enter 1, capture 2, exit 0)")
    case .mediaPlay:
      guard let field = v["title"] else {
        throw ControlError(.missingField, "\(verb.rawValue) needs \"title\"")
      }
      guard let title = field.string, !title.isEmpty, title.utf8.count <= maxTitleBytes else {
        throw ControlError(
          .invalidRequest, "\"title\" must be 1 to \(maxTitleBytes) bytes of text")
      }
      return .mediaPlay(title: title)
    case .mediaPause: return .mediaPause
    case .mediaResume: return .mediaResume
    case .mediaStop: return .mediaStop
    case .ring:
      guard let field = v["target"] else {
        throw ControlError(
          .missingField, "ring needs \"target\": a [tag \"NAME\"] name or a device address")
      }
      guard let target = field.string, validName(target) else {
        throw ControlError(
          .invalidRequest, "\"target\" must be 1 to \(maxNameBytes) bytes of printable text")
      }
      var level = AlertLevel.high
      if let l = v["level"] {
        guard
          let parsed = l.integer.flatMap({ UInt8(exactly: $0) }).flatMap(AlertLevel.init(rawValue:))
            ?? l.string.flatMap(AlertLevel.init(name:))
        else {
          throw ControlError(
            .invalidRequest, "\"level\" must be 0 (none), 1 (mild) or 2 (high)")
        }
        level = parsed
      }
      return .ring(target: target, level: level)
    case .trackerEvidence:
      guard let field = v["number"] else { return .trackerEvidence(number: nil) }
      guard let n = field.integer.flatMap({ Int(exactly: $0) }), n > 0 else {
        throw ControlError(.invalidRequest, "\"number\" must be a tracker's number, 1 or more")
      }
      return .trackerEvidence(number: n)
    case .trackerTrust, .trackerClear, .trackerRing:
      guard let field = v["number"] else {
        throw ControlError(
          .missingField, "\(verb.rawValue) needs \"number\" (earshot trackers shows them)")
      }
      guard let n = field.integer.flatMap({ Int(exactly: $0) }), n > 0 else {
        throw ControlError(.invalidRequest, "\"number\" must be a tracker's number, 1 or more")
      }
      if verb == .trackerRing {
        var mode = TrackerSoundMode.ring
        if let m = v["mode"] {
          guard let parsed = m.string.flatMap(TrackerSoundMode.init(rawValue:)) else {
            throw ControlError(.invalidRequest, "\"mode\" must be ring, silence or identify")
          }
          mode = parsed
        }
        return .trackerRing(number: n, mode: mode)
      }
      guard verb == .trackerTrust else { return .trackerClear(number: n) }
      var seconds: Double? = nil
      if let s = v["seconds"] {
        guard let d = s.number, d > 0, d <= 365 * 86_400 else {
          throw ControlError(.invalidRequest, "\"seconds\" must be more than 0 and at most a year")
        }
        seconds = d
      }
      return .trackerTrust(number: n, seconds: seconds)
    }
  }

  public static func validName(_ name: String) -> Bool {
    !name.isEmpty && name.utf8.count <= maxNameBytes
      && name.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F }
  }

  // MARK: Server messages

  public static func success(id: JSONValue, _ fields: [(String, JSONValue)] = []) -> String {
    JSONValue.object([("id", id), ("ok", .bool(true))] + fields).encoded
  }

  public static func failure(id: JSONValue, _ error: ControlError) -> String {
    JSONValue.object([
      ("id", id), ("ok", .bool(false)),
      (
        "error",
        .object([("code", .string(error.code.rawValue)), ("message", .string(error.message))])
      ),
    ]).encoded
  }

  public static func event(_ name: String, _ fields: [(String, JSONValue)]) -> String {
    JSONValue.object([("event", .string(name))] + fields).encoded
  }

  /// `tracker_following`: a tracker that follows, as `status` lists it.
  public static func trackerFollowingEvent(_ row: TrackerRow) -> String {
    event("tracker_following", [("tracker", json(row))])
  }

  // MARK: Shapes shared by responses and events

  /// A tracker the watch keeps (`status`'s `trackers`, `tracker_following`);
  /// with `now`, how long ago it was first and last heard (seconds).
  public static func json(_ row: TrackerRow, now: MonotonicTime? = nil) -> JSONValue {
    var o: [(String, JSONValue)] = [
      ("number", .number(Double(row.number.value))), ("protocol", .string(row.frame.row.name)),
      ("kind", .string(row.frame.kind.rawValue)), ("state", .string(row.frame.state.rawValue)),
      ("address", .string(row.address.description)),
      ("sightings", .number(Double(row.sightings))), ("places", .number(Double(row.places))),
      ("following", .bool(row.following != nil)),
    ]
    if let rssi = row.rssi { o.append(("rssi", .number(Double(rssi)))) }
    if row.trust != .none { o.append(("trusted", .bool(true))) }
    if let now {
      o.append(
        ("first_seen_s_ago", .number(Double(row.firstSeen.nanos(until: now) / 1_000_000_000))))
      o.append(("last_seen_s_ago", .number(Double(row.lastSeen.nanos(until: now) / 1_000_000_000))))
    }
    return .object(o)
  }

  public static func json(_ v: VolumeSetting) -> JSONValue {
    .object([("level", .number((v.level * 1000).rounded() / 1000)), ("muted", .bool(v.muted))])
  }

  public static func json(_ s: FindStatus, now: MonotonicTime) -> JSONValue {
    var fields: [(String, JSONValue)] = [
      ("state", .string(s.state.rawValue)),
      ("requesters", .array(s.requesters.map { .string($0.description) })),
      ("notifying", .array(s.notifying.map { .string($0.description) })),
    ]
    if let d = s.deadline {
      let left = now.seconds(until: d)
      fields.append(("seconds_left", .number((left * 10).rounded() / 10)))
    }
    fields.append(("level", s.level.map { .number($0) } ?? .null))
    fields.append(("headphones", .bool(s.headphones)))
    fields.append(("last_end", s.lastEnd.map { .string($0.rawValue) } ?? .null))
    fields.append(("outstanding_notices", .int(s.outstandingNotices)))
    return .object(fields)
  }

  /// The phone-found notice as a device receives it.
  public static func noticeEvent(_ id: NoticeID, to device: DeviceID) -> String {
    event(
      "notice",
      [("notice", .int(id)), ("kind", .string("phone_found")), ("device", .string(device.name))])
  }

  /// What became of a phone-found notice, for `find` subscribers.
  public static func noticeResultEvent(_ id: NoticeID, _ device: DeviceID, _ result: NoticeResult)
    -> String
  {
    var fields: [(String, JSONValue)] = [
      ("notice", .int(id)), ("device", .string(device.description)),
    ]
    switch result {
    case .accepted:
      fields.append(("result", .string("accepted")))
    case .failed(let why):
      fields.append(("result", .string("failed")))
      fields.append(("reason", .string(why)))
    }
    return event("notice_result", fields)
  }

  /// The media player's state; null where no player is set up.
  public static func json(_ phase: MediaCoordinator.Phase?) -> JSONValue {
    func item(_ state: String, _ id: MediaRequestID, _ i: MediaItem) -> [(String, JSONValue)] {
      [
        ("state", .string(state)), ("request", .int(id.value)), ("title", .string(i.title)),
        ("path", .string(i.path)),
      ]
    }
    switch phase {
    case nil: return .null
    case .idle?: return .object([("state", .string("idle"))])
    case .starting(let id, let i, _, _)?: return .object(item("starting", id, i))
    case .playing(let id, let i)?: return .object(item("playing", id, i))
    case .paused(let id, let i, let byRing)?:
      return .object(item("paused", id, i) + [("by_ring", .bool(byRing))])
    }
  }

  /// What a find request's reply means on the wire.
  public static func json(_ reply: FindReply) -> JSONValue {
    switch reply {
    case .ringing: return .string("ringing")
    case .joined: return .string("joined")
    case .alreadyRequested: return .string("already_requested")
    case .queued: return .string("queued")
    case .stopped: return .string("stopped")
    case .withdrawn: return .string("withdrawn")
    case .notRequested: return .string("not_requested")
    case .stopping: return .string("stopping")
    case .alreadyStopping: return .string("already_stopping")
    case .notRinging: return .string("not_ringing")
    case .noticeRecorded: return .string("recorded")
    case .unknownNotice: return .string("unknown_notice")
    }
  }
}
