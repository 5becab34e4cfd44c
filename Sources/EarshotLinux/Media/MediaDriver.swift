import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// Carries out the media coordinator's actions on the event loop: the
/// built-in ALSA file player or an MPRIS player, one loop timer per
/// request deadline, and the completions. The coordinator's clock is the
/// monotonic clock in seconds.
public final class MediaDriver {
  public let settings: MediaConfig
  private let loop: EventLoop
  private var coordinator: MediaCoordinator
  private var timers: [MediaRequestID: EventLoop.TimerID] = [:]
  private var deadlines: [MediaRequestID: Double] = [:]
  private var events: [MediaEvent] = []
  private var processing = false
  private let alsa: MediaFilePlayer?
  private let mpris: MprisPlayer?
  /// The request the ALSA player is working for.
  private var playing: MediaRequestID?

  /// Exactly once per request: its response and the title chosen, if any.
  public var onCompletion: (MediaRequestID, MediaResponse, MediaItem?) -> Void = { _, _, _ in }
  public var onLog: (String) -> Void = { _ in }
  /// What plays (or nil) after each change, for status and for the CLI.
  public var onIdle: () -> Void = {}

  public init(settings: MediaConfig, library: MediaLibrary, loop: EventLoop) {
    self.settings = settings
    self.loop = loop
    coordinator = MediaCoordinator(
      library: library, timeout: settings.timeout, playerDecodesAnything: settings.player != nil)
    if let bus = settings.player {
      mpris = MprisPlayer(busName: bus, timeout: settings.timeout, loop: loop)
      alsa = nil
    } else {
      alsa = MediaFilePlayer(device: settings.device, loop: loop)
      mpris = nil
    }
    alsa?.onStarted = { [weak self] in
      guard let self, let id = self.playing else { return }
      self.feed(.playbackStarted(id))
    }
    alsa?.onFailed = { [weak self] code, why in
      guard let self, let id = self.playing else { return }
      self.feed(.playbackFailed(id, code, why))
    }
    alsa?.onEnded = { [weak self] in
      guard let self, let id = self.playing else { return }
      self.feed(.playbackEnded(id))
    }
  }

  public var phase: MediaCoordinator.Phase { coordinator.phase }
  public var library: MediaLibrary { coordinator.library }

  static func now() -> Double { Double(Clock.monotonicNanos()) / 1e9 }

  /// "play <title>": returns the request's id; its completion follows
  /// through `onCompletion` (possibly before this returns).
  @discardableResult
  public func request(title: String) -> MediaRequestID {
    let (id, actions) = coordinator.request(title: title, now: MediaDriver.now())
    run(actions)
    return id
  }

  public func pause() { feed(.userPause) }
  public func resume() { feed(.userResume) }
  public func stop() { feed(.userStop) }
  /// Find-phone preempts media: call when the ring starts and ends.
  public func findPhoneStarted() { feed(.findPhoneStarted) }
  public func findPhoneEnded() { feed(.findPhoneEnded) }

  private func feed(_ event: MediaEvent) {
    // A result handled after its request's deadline is late, even when the
    // timer, ready in the same loop turn, has not been serviced yet.
    switch event {
    case .playbackStarted(let id), .playbackFailed(let id, _, _):
      if let d = deadlines[id], d <= MediaDriver.now() {
        if let t = timers.removeValue(forKey: id) { loop.cancel(t) }
        deadlines[id] = nil
        events.append(.timeoutReached(id))
      }
    default: break
    }
    events.append(event)
    guard !processing else { return }
    processing = true
    defer { processing = false }
    while !events.isEmpty {
      let actions = coordinator.handle(events.removeFirst(), now: MediaDriver.now())
      perform(actions)
    }
  }

  /// Actions from a request: performed with the same re-entrancy guard.
  private func run(_ actions: [MediaAction]) {
    if processing {
      perform(actions)
      return
    }
    processing = true
    perform(actions)
    while !events.isEmpty {
      perform(coordinator.handle(events.removeFirst(), now: MediaDriver.now()))
    }
    processing = false
  }

  private func perform(_ actions: [MediaAction]) {
    for action in actions {
      switch action {
      case .startPlayback(let id, let item): start(id, item)
      case .pausePlayback(let id):
        if let alsa, playing == id { alsa.pause() }
        mpris?.pause()
      case .resumePlayback(let id):
        if let alsa, playing == id { alsa.resume() }
        mpris?.play()
      case .stopPlayback(let id):
        if let alsa, playing == id {
          alsa.stop()
          playing = nil
        }
        // MPRIS: OpenUri replaces what plays; a Stop sent alongside could
        // overtake it (two separate dbus-send processes).
        let replacing = actions.contains { if case .startPlayback = $0 { true } else { false } }
        if !replacing { mpris?.stop() }
      case .armTimeout(let id, let at):
        let delay = max(0, at - MediaDriver.now())
        deadlines[id] = at
        timers[id] = loop.after(seconds: delay) { [weak self] in
          guard let self else { return }
          self.timers[id] = nil
          self.deadlines[id] = nil
          self.feed(.timeoutReached(id))
        }
      case .cancelTimeout(let id):
        if let t = timers.removeValue(forKey: id) { loop.cancel(t) }
        deadlines[id] = nil
      case .complete(let id, let response, let item):
        onCompletion(id, response, item)
      case .log(let line):
        onLog(line)
      }
    }
    if coordinator.phase == .idle { onIdle() }
  }

  private func start(_ id: MediaRequestID, _ item: MediaItem) {
    if let alsa {
      playing = id
      alsa.play(path: item.path)
    } else if let mpris {
      mpris.open(path: item.path) { [weak self] outcome in
        switch outcome {
        case .ok: self?.feed(.playbackStarted(id))
        case .failed(let code, let why): self?.feed(.playbackFailed(id, code, why))
        }
      }
    }
  }
}
