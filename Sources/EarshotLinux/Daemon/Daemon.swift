import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// `earshot run`: one event loop serving find-phone, the mixer and the
/// parts attached to it (the region monitor, shutter, media, the proximity
/// log) to every transport (the control socket, the BLE link, MQTT).
/// Everything runs on the loop's thread.
///
/// Requests from every transport go through `perform` (Requests.swift);
/// events go out to every transport through `AgentTransport.agentEvent`.
/// The loop is made first and handed in; parts may be attached in any
/// order: each owns its status section, and `run` starts the transports
/// once all are in place and stops everything in a fixed order.
public final class Daemon {
  public struct Options: Sendable {
    public var socketPath: String
    /// Where the user's volume is kept while find-phone rings.
    public var stateDirectory: String
    /// `[control] group`: its members may use the socket.
    public var allowedGroup: UInt32?
    /// `[control] max_clients` (fitted to the open-file limit).
    public var maxClients = 1024
    /// `[find-phone]`.
    public var findPhone = FindPhoneConfig()
    /// Handle SIGINT/SIGTERM through the loop (off in in-process tests).
    public var handleSignals = true

    public init(socketPath: String, stateDirectory: String) {
      self.socketPath = socketPath
      self.stateDirectory = stateDirectory
    }
  }

  public let version: String
  public let loop: EventLoop
  public let find: FindPhoneDriver
  public let log: (String) -> Void
  let volume: VolumeControl?
  let handleSignalsEnabled: Bool
  let startedAt = Clock.monotonicNanos()
  private let server: ControlServer
  private let stopPipe: (read: FileDescriptor, write: FileDescriptor)

  /// The control socket: part of every agent.
  public private(set) lazy var control = ControlSocketTransport(server: server, agent: self)
  /// Transports by name (the socket's among them).
  private(set) var transports: [String: AgentTransport] = [:]
  // The optional parts, each attached once (Parts.swift).
  public internal(set) var monitor: AgentMonitor?
  var shutter: ShutterDriver?
  var media: MediaDriver?
  var proximityLog: ProximityLogWriter?
  var tags: TagTransport?
  var trackers: TrackerWatchDriver?
  /// Bonded devices' keys, followed for the monitor (BondedKeysPart.swift).
  var bondedKeys: BondedKeysFollower?
  /// Each part's `status` section.
  var statusSections: [StatusSection: () -> JSONValue] = [:]
  /// Requests waiting for their answer (Requests.swift).
  var pending = PendingReplies()
  var lastFindState: FindStatus.State = .idle
  /// Find-phone is ringing (or about to), so media stays paused.
  var mediaPausedForFind = false

  /// Writing a byte here (from any thread) stops the daemon.
  public var stopDescriptor: FileDescriptor { stopPipe.write }

  public init(
    loop: EventLoop, options: Options, version: String, alert: AlertOutput?,
    volume: VolumeControl?,
    log: @escaping (String) -> Void = { Console.error("earshot run: \($0)\n") }
  ) throws {
    self.loop = loop
    self.version = version
    self.volume = volume
    self.log = log
    var serverOptions = ControlServer.Options(
      path: options.socketPath, allowedGroup: options.allowedGroup)
    serverOptions.maxClients = options.maxClients
    server = try ControlServer(loop: loop, options: serverOptions)
    find = FindPhoneDriver(
      loop: loop, settings: options.findPhone, alert: alert, volume: volume,
      savedVolume: SavedVolumeFile(directory: options.stateDirectory))
    stopPipe = try FileDescriptor.pipe(nonblocking: true)
    handleSignalsEnabled = options.handleSignals
    add(control)
    find.onLog = { [unowned self] in self.log($0) }
    find.onStatusChanged = { [unowned self] status in
      self.recordFind(status)
      self.preemptMedia(status)
      self.dispatch(.find(status))
    }
    find.onNoticeResult = { [unowned self] id, device, result in
      self.recordNotice(id, device, result)
      self.dispatch(.noticeResult(id, device, result))
    }
    find.onVolumeSet = { [unowned self] v in self.volumeChanged(v) }
    volume?.onChange = { [unowned self] v in self.volumeChanged(v) }
  }

  deinit {
    stopPipe.read.close()
    stopPipe.write.close()
  }

  /// Adds a transport: its events from now on, its device link for
  /// find-phone's notices, started by `run` and stopped when it ends.
  public func add(_ transport: AgentTransport) {
    precondition(transports[transport.name] == nil, "two transports named \(transport.name)")
    transports[transport.name] = transport
    if let link = transport.deviceLink { find.add(link) }
  }

  /// Serves until SIGINT/SIGTERM or a byte on `stopDescriptor`.
  public func run() throws {
    signal(SIGPIPE, SIG_IGN)
    try loop.watch(stopPipe.read) { [unowned self] _ in self.loop.stop() }
    // Loop-level signal handling blocks the signals process-wide, which an
    // in-process test must not do to its host.
    if handleSignalsEnabled {
      try loop.handleSignals([SIGINT, SIGTERM]) { [unowned self] sig in
        self.log("signal \(sig): stopping")
        self.loop.stop()
      }
    }
    for t in orderedTransports { t.start() }
    find.recoverLeftover()
    log("serving \(server.options.path)")
    try loop.run()
    stopEverything()
  }

  /// The stop, in an order that does not depend on how the agent was put
  /// together: nothing left raised or playing, then the scanner (restoring
  /// the scan, saving the states), media, the transports (MQTT says
  /// offline), and the proximity log last, so it records all of the above.
  private func stopEverything() {
    if find.status.state != .idle {
      for d in find.status.requesters { find.submit(.deviceStop(d)) }
    }
    bondedKeys?.stop()
    monitor?.stop()
    media?.stop()
    for t in orderedTransports.reversed() { t.stop() }
    if let proximityLog {
      proximityLog.detach(from: loop)
      proximityLog.close()
    }
  }

  var orderedTransports: [AgentTransport] {
    transports.values.sorted { $0.name < $1.name }
  }

  /// Hands an event to every transport, in name order.
  func dispatch(_ event: AgentEvent) {
    for t in orderedTransports { t.agentEvent(event) }
  }

  /// A device can no longer be reached (its connection closed).
  public func deviceGone(_ device: DeviceID) {
    find.submit(.deviceGone(device))
  }

  /// The volume now, if a mixer is there to say.
  public func currentVolume() -> VolumeSetting? {
    (try? volume?.currentVolume()).flatMap { $0 }
  }

  func volumeChanged(_ v: VolumeSetting) {
    proximityLog?.record(
      .volume(VolumeLogEvent(t: Clock.wallNow(), volume: v.level, muted: v.muted)))
    dispatch(.volume(v))
  }
}
