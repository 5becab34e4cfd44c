/// Play-by-title requests: from "play <title>" to exactly one completion.
///
/// Pure: events and the time in, actions out. The shell carries out the
/// actions (start a player, arm a timer) and feeds back what happened
/// (first audio written, the player failed, the timer fired). A request
/// completes when playback has really started, when it failed, or at its
/// deadline, whichever comes first; anything after that for the same
/// request is dropped. So every request gets one completion, never two.
///
/// Rules:
/// - The library is asked first: an unknown title is `notFound`, an
///   undecodable file `unsupportedMediaType`, whatever else is going on.
/// - One request starts at a time. A request for a known title while
///   another is still starting, or while find-phone rings, completes at
///   once with `busy`.
/// - A request while something plays replaces it (stop, then start).
/// - Find-phone preempts media: a playing title is paused while the phone
///   rings and resumed after; one still starting is stopped (`busy`).
/// - The user's pause, resume and stop act on what plays; a pause while
///   the ring has paused it means it stays paused after the ring.

public struct MediaRequestID: Hashable, Sendable, Comparable, CustomStringConvertible {
  public let value: UInt64
  public init(_ value: UInt64) { self.value = value }
  public static func < (a: Self, b: Self) -> Bool { a.value < b.value }
  public var description: String { "\(value)" }
}

public enum MediaEvent: Sendable, Equatable {
  /// The player wrote its first audio (or the MPRIS player accepted the file).
  case playbackStarted(MediaRequestID)
  /// The player could not start, or stopped with an error while playing.
  case playbackFailed(MediaRequestID, MediaResponse, String)
  /// The file played to its end.
  case playbackEnded(MediaRequestID)
  /// The deadline armed by `.armTimeout` passed.
  case timeoutReached(MediaRequestID)
  case findPhoneStarted
  case findPhoneEnded
  case userPause
  case userResume
  case userStop
}

public enum MediaAction: Sendable, Equatable {
  /// Start playing `item` for request `id`; report `.playbackStarted(id)`
  /// once the first audio is written, or `.playbackFailed`.
  case startPlayback(MediaRequestID, MediaItem)
  case pausePlayback(MediaRequestID)
  case resumePlayback(MediaRequestID)
  /// Stop and release the player for `id` (silent at once).
  case stopPlayback(MediaRequestID)
  /// Fire `.timeoutReached(id)` at this time (the coordinator's clock).
  case armTimeout(MediaRequestID, at: Double)
  case cancelTimeout(MediaRequestID)
  /// The one completion of request `id`. `item` is what was chosen, if any.
  case complete(MediaRequestID, MediaResponse, item: MediaItem?)
  case log(String)
}

public struct MediaCoordinator: Sendable {
  public enum Phase: Sendable, Equatable {
    case idle
    /// Waiting for the first audio of `id`, until `deadline`.
    case starting(MediaRequestID, MediaItem, deadline: Double, pauseWhenStarted: Bool)
    case playing(MediaRequestID, MediaItem)
    /// `byRing`: resumed automatically when the ring ends.
    case paused(MediaRequestID, MediaItem, byRing: Bool)
  }

  public var library: MediaLibrary
  /// Seconds from request to completion at the latest (`[media] timeout`).
  public let timeout: Double
  /// The player decodes everything (MPRIS); otherwise only files libsndfile
  /// reads are playable and the rest answer `unsupportedMediaType`.
  public let playerDecodesAnything: Bool

  public private(set) var phase: Phase = .idle
  public private(set) var ringing = false
  private var nextID: UInt64 = 1

  public init(library: MediaLibrary, timeout: Double = 5, playerDecodesAnything: Bool = false) {
    self.library = library
    self.timeout = timeout
    self.playerDecodesAnything = playerDecodesAnything
  }

  /// The request still waiting for its completion, if any.
  public var pending: MediaRequestID? {
    if case .starting(let id, _, _, _) = phase { return id }
    return nil
  }

  /// A new request: returns its id (the completion carries it) and the
  /// actions. The completion may be among these actions (not found, busy).
  public mutating func request(title: String, now: Double) -> (MediaRequestID, [MediaAction]) {
    let id = MediaRequestID(nextID)
    nextID += 1
    guard let match = library.best(title) else {
      return (id, [.log("play '\(title)': no title matches"), .complete(id, .notFound, item: nil)])
    }
    let item = match.item
    guard item.decodable || playerDecodesAnything else {
      return (
        id,
        [
          .log("play '\(title)': \(item.path) is in a format the built-in player cannot decode"),
          .complete(id, .unsupportedMediaType, item: item),
        ]
      )
    }
    // The library answers first: an unknown title is notFound whatever
    // plays. Only then can a known title find the player busy.
    if ringing {
      return (
        id, [.log("play '\(title)': find-phone is ringing"), .complete(id, .busy, item: item)]
      )
    }
    if case .starting(let other, _, _, _) = phase {
      return (
        id,
        [
          .log("play '\(title)': request \(other) is still starting"),
          .complete(id, .busy, item: item),
        ]
      )
    }
    var actions: [MediaAction] = []
    if let current = currentID { actions.append(.stopPlayback(current)) }
    let deadline = now + timeout
    phase = .starting(id, item, deadline: deadline, pauseWhenStarted: false)
    actions.append(.startPlayback(id, item))
    actions.append(.armTimeout(id, at: deadline))
    return (id, actions)
  }

  /// What plays or is paused (not what is starting).
  public var currentID: MediaRequestID? {
    switch phase {
    case .playing(let id, _), .paused(let id, _, _): id
    case .idle, .starting: nil
    }
  }

  public mutating func handle(_ event: MediaEvent, now: Double) -> [MediaAction] {
    switch event {
    case .playbackStarted(let id):
      guard case .starting(id, let item, _, let pauseNow) = phase else {
        return [.log("request \(id): started after its completion; ignored")]
      }
      var actions: [MediaAction] = [.cancelTimeout(id), .complete(id, .success, item: item)]
      if pauseNow {
        phase = .paused(id, item, byRing: false)
        actions.append(.pausePlayback(id))
      } else {
        phase = .playing(id, item)
      }
      return actions

    case .playbackFailed(let id, let code, let why):
      if case .starting(id, let item, _, _) = phase {
        phase = .idle
        return [
          .cancelTimeout(id), .log("request \(id): \(why)"), .complete(id, code, item: item),
        ]
      }
      if currentID == id {
        phase = .idle
        return [.log("request \(id): playback stopped: \(why)")]
      }
      return [.log("request \(id): late failure ignored: \(why)")]

    case .playbackEnded(let id):
      if currentID == id { phase = .idle }
      return []

    case .timeoutReached(let id):
      guard case .starting(id, let item, _, _) = phase else { return [] }
      phase = .idle
      return [
        .log("request \(id): no audio within \(timeout) s"), .stopPlayback(id),
        .complete(id, .timeout, item: item),
      ]

    case .findPhoneStarted:
      ringing = true
      switch phase {
      case .starting(let id, let item, _, _):
        phase = .idle
        return [
          .cancelTimeout(id), .stopPlayback(id), .log("request \(id): find-phone rings"),
          .complete(id, .busy, item: item),
        ]
      case .playing(let id, let item):
        phase = .paused(id, item, byRing: true)
        return [.pausePlayback(id)]
      case .idle, .paused:
        return []
      }

    case .findPhoneEnded:
      guard ringing else { return [] }
      ringing = false
      if case .paused(let id, let item, byRing: true) = phase {
        phase = .playing(id, item)
        return [.resumePlayback(id)]
      }
      return []

    case .userPause:
      switch phase {
      case .playing(let id, let item):
        phase = .paused(id, item, byRing: false)
        return [.pausePlayback(id)]
      case .paused(let id, let item, _):
        phase = .paused(id, item, byRing: false)  // stays paused after the ring
        return []
      case .starting(let id, let item, let deadline, _):
        phase = .starting(id, item, deadline: deadline, pauseWhenStarted: true)
        return []
      case .idle:
        return []
      }

    case .userResume:
      switch phase {
      case .paused(let id, let item, _):
        if ringing {
          phase = .paused(id, item, byRing: true)  // after the ring
          return []
        }
        phase = .playing(id, item)
        return [.resumePlayback(id)]
      case .starting(let id, let item, let deadline, _):
        phase = .starting(id, item, deadline: deadline, pauseWhenStarted: false)
        return []
      case .idle, .playing:
        return []
      }

    case .userStop:
      switch phase {
      case .starting(let id, let item, _, _):
        phase = .idle
        return [
          .cancelTimeout(id), .stopPlayback(id), .log("request \(id): stopped before it started"),
          .complete(id, .failure, item: item),
        ]
      case .playing(let id, _), .paused(let id, _, _):
        phase = .idle
        return [.stopPlayback(id)]
      case .idle:
        return []
      }
    }
  }
}
