import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// A failure building or starting the agent that the user can act on (a
/// missing group, an unreachable bus, a bad capture): `earshot run` prints
/// it and exits 1.
public struct AgentError: Error, CustomStringConvertible {
  public let description: String
  public init(_ description: String) { self.description = description }
}

/// What differs between the agent `earshot run` starts and one a test
/// builds; everything else follows from the config.
public struct AgentSurroundings {
  /// The alert player and mixer.
  public enum Audio {
    /// ALSA from `[audio]`.
    case alsa
    /// None (`--no-audio`): find-phone rings silently, volume commands
    /// answer "unavailable", no media.
    case silent
    /// Given ones (a test's recording audio).
    case given(alert: AlertOutput, volume: VolumeControl?)
  }

  public var version: String
  /// Where the monitor's reports come from; nil: nowhere yet (a test
  /// drives the monitor itself).
  public var reports: (any ReportSource)?
  public var audio: Audio
  /// nil: `[control] socket`.
  public var socketPath: String?
  /// Where the volume is saved while ringing; nil: the directory of
  /// `[state] path`.
  public var stateDirectory: String?
  /// The config file SIGHUP reloads; nil: no reloading.
  public var configFile: (path: String, paths: ConfigPaths)?
  /// SIGINT/SIGTERM stop the agent (blocked process-wide, which an
  /// in-process test must not do to its host).
  public var handleSignals = true
  /// Bus addresses; nil: the system bus (BlueZ, logind, Avahi) and the
  /// user's session bus (the find-phone notification).
  public var systemBus: String?
  public var sessionBus: String?
  /// The clocks shown times are read from while the reports are driven
  /// by hand (a test's `TestClock`); the live scanner reads the machine's.
  public var clock: (@Sendable () -> ClockReading)?
  /// Sees each monitor event before the transports do (a test's probe).
  public var probe: ((MonitorEvent) -> Void)?
  public var log: (String) -> Void

  public init(
    version: String, reports: (any ReportSource)?, audio: Audio,
    log: @escaping (String) -> Void
  ) {
    self.version = version
    self.reports = reports
    self.audio = audio
    self.log = log
  }
}

/// The whole agent of `earshot run`, built from its config: the loop, the
/// daemon with its transports, the proximity log, MQTT and the rooms
/// sightings, the region monitor, the Bluetooth proxy, the shutter, media,
/// tags and the BLE link, each as the config asks. `earshot run` and the
/// tests build it here, so a test runs the agent the binary runs.
public final class Agent {
  public let config: Config
  public let surroundings: AgentSurroundings
  /// Everything serves on this loop: it is made first and handed to each part.
  public let loop: EventLoop
  public let daemon: Daemon
  /// nil when nothing needs the scanner (no regions, rooms or proxy).
  public let monitor: AgentMonitor?
  public private(set) var proxy: ESPHomeProxy?
  /// The MQTT bridge (`[mqtt] host`), the BLE link's server (`[link]`).
  public let mqtt: MQTTBridge?
  public let link: BLELinkServer?
  public let notification: FindPhoneNotification
  public let tags: TagTransport
  /// The tracker watch (`[trackers] enabled`).
  public private(set) var trackers: TrackerWatchDriver?
  /// The desktop notification for a tracker that follows.
  public private(set) var trackerNotification: TrackerNotification?
  private var reloader: ConfigReloader?
  private var started = false

  public init(config: Config, surroundings: AgentSurroundings) throws {
    self.config = config
    self.surroundings = surroundings
    let log = surroundings.log
    let statePath = config.state.path
    let stateDir =
      statePath.lastIndex(of: "/").map { String(statePath[..<$0]) }
      ?? SocketPath.defaultStateDirectory()
    var options = Daemon.Options(
      socketPath: surroundings.socketPath ?? config.control.socket,
      stateDirectory: surroundings.stateDirectory ?? (stateDir.isEmpty ? "/" : stateDir))
    options.handleSignals = surroundings.handleSignals
    if let name = config.control.group {
      guard let group = getgrnam(name) else {
        throw AgentError("[control] group '\(name)' does not exist; create it or remove the key")
      }
      options.allowedGroup = group.pointee.gr_gid
    }
    // Many clients need many descriptors: soft limit up to the hard one, and
    // the client cap fitted below it (beyond it clients get a clear refusal).
    let fileLimit = FileLimit.raiseToHard()
    options.maxClients = FileLimit.clientCap(
      configured: config.control.maxClients, softLimit: fileLimit)
    if options.maxClients < config.control.maxClients {
      log(
        "[control] max_clients = \(config.control.maxClients) lowered to \(options.maxClients): the open-file limit is \(fileLimit) (raise LimitNOFILE= or ulimit -Hn)"
      )
    }
    options.findPhone = config.findPhone
    do { loop = try EventLoop() } catch { throw AgentError("\(error)") }
    let alert: AlertOutput?
    let volume: VolumeControl?
    switch surroundings.audio {
    case .alsa:
      do {
        let audio = try DaemonAudio.make(
          config.audio, findPhoneSound: config.findPhone.sound, loop: loop, log: log)
        (alert, volume) = (audio.alert, audio.volume)
      } catch {
        throw AgentError("\(error)")
      }
    case .silent: (alert, volume) = (nil, nil)
    case .given(let a, let v): (alert, volume) = (a, v)
    }
    do {
      daemon = try Daemon(
        loop: loop, options: options, version: surroundings.version, alert: alert,
        volume: volume, log: log)
    } catch {
      throw AgentError("\(error)")
    }
    // The parts, in any order; the reports start once all are in place.
    (monitor, mqtt) = try Self.attachParts(to: daemon, config: config, surroundings: surroundings)
    if config.esphome.enabled, let monitor {
      proxy = try Self.proxy(config: config, surroundings: surroundings, monitor: monitor)
      if let proxy { daemon.attach(esphome: proxy) }
    }
    if config.trackers.enabled, let monitor {
      let driver = TrackerWatchDriver(
        config: config.trackers, now: { MonotonicTime(nanos: Clock.boottimeNanos()) }, log: log)
      let live = !(surroundings.reports?.capturesTime ?? false)
      driver.attach(to: monitor, live: live)
      if live { driver.attachLaptop(loop: loop, wifi: config.trackers.wifi) }
      daemon.attach(trackers: driver)
      driver.proximityLog = daemon.proximityLog
      driver.onFollowing = { [unowned daemon] in daemon.dispatch(.trackerFollowing($0)) }
      trackers = driver
      let notification = TrackerNotification(
        agent: daemon, address: surroundings.sessionBus,
        now: { [unowned driver] in driver.watch.latest })
      daemon.add(notification)
      trackerNotification = notification
    }
    (notification, tags, link) = try Self.attachDeviceParts(
      to: daemon, config: config, surroundings: surroundings, audio: alert != nil,
      hasMixer: volume != nil, monitor: monitor)
  }

  /// Starts the reports (a replay without a pace runs to its end here)
  /// and takes SIGHUP for reloads. `run` does it if nobody did.
  public func start() throws {
    guard !started else { return }
    started = true
    if let monitor, let reports = surroundings.reports {
      try reports.start(monitor, of: self)
    }
    // SIGHUP reloads the config (Daemon/ConfigReloader.swift).
    if let file = surroundings.configFile {
      let reloader = ConfigReloader(
        path: file.path, config: config, daemon: daemon, paths: file.paths)
      try reloader.attach()
      self.reloader = reloader
    }
  }

  /// Serves until SIGINT/SIGTERM or a byte on `daemon.stopDescriptor`.
  public func run() throws {
    try start()
    try daemon.run()
    proxy?.shutdown()
  }

  /// The proximity log, MQTT and the region monitor, as the config asks.
  /// Returns the monitor, not yet started, and the MQTT bridge.
  private static func attachParts(
    to daemon: Daemon, config: Config, surroundings: AgentSurroundings
  ) throws -> (AgentMonitor?, MQTTBridge?) {
    let log = daemon.log
    let replay = surroundings.reports?.capturesTime ?? false
    let writer = ProximityLogWriter.forMonitor(
      config: config, path: nil, replay: replay, report: { log("proximity log: \($0)") })
    if let writer {
      daemon.attach(log: writer)
      // A replay's log is written at its end (capture time: no timer flushes
      // and no retention against today's date).
      if !replay { writer.attach(to: daemon.loop) }
    }
    var rooms: RoomsAgent? = nil
    var mqtt: MQTTBridge? = nil
    if config.mqtt.enabled {
      do {
        let hostname = MQTTBridge.Options.hostname()
        let options = try MQTTBridge.Options(
          config: config.mqtt, hostname: hostname, version: surroundings.version)
        let bridge = try MQTTBridge(loop: daemon.loop, settings: options)
        daemon.add(MQTTTransport(bridge: bridge, agent: daemon))
        mqtt = bridge
        // [rooms] track: sightings for the room aggregator (earshot rooms).
        if config.rooms.publishes {
          rooms = RoomsAgent(config: config, hostname: hostname, bridge: bridge)
        }
      } catch {
        throw AgentError("\(error)")
      }
    } else if config.rooms.publishes {
      throw AgentError(
        "[rooms] track needs [mqtt] host: sightings go to the aggregator through the broker")
    }
    // The Bluetooth proxy and the tracker watch need the scanner even with
    // nothing to monitor.
    guard
      !config.regions.isEmpty || rooms != nil || config.esphome.enabled || config.trackers.enabled
    else {
      if replay {
        throw AgentError(
          "--input needs [region \"NAME\"]s, [rooms] track, [esphome] or [trackers] enabled in the config"
        )
      }
      return (nil, mqtt)
    }
    let driver: MonitorDriver
    do {
      driver = try MonitorDriver(
        config: config, emitRange: true,
        stateFile: replay ? nil : StateFile(path: config.state.path), runHooks: true,
        output: { _ in }, log: log)
    } catch {
      throw AgentError("\(error)")
    }
    if let clock = surroundings.clock { driver.timeline = .live(read: clock) }
    rooms?.attach(to: driver)
    let monitor = AgentMonitor(loop: daemon.loop, driver: driver, proximityLog: writer)
    monitor.onAdapterState = { log($0.message) }
    if let probe = surroundings.probe { monitor.observe(probe) }
    daemon.attach(monitor: monitor)
    return (monitor, mqtt)
  }

  /// [esphome]: the Home Assistant Bluetooth proxy, fed by the monitor's
  /// scanner, announced over mDNS through Avahi where the system bus and
  /// avahi-daemon are.
  private static func proxy(
    config: Config, surroundings: AgentSurroundings, monitor: AgentMonitor
  ) throws -> ESPHomeProxy {
    let log = surroundings.log
    let proxy: ESPHomeProxy
    do {
      proxy = try ESPHomeProxy(
        loop: monitor.loop, config: config.esphome, hostname: MQTTBridge.Options.hostname(),
        version: surroundings.version, configuredActive: !config.scanner.passive, log: log)
    } catch {
      throw AgentError("\(error)")
    }
    proxy.attach(to: monitor)
    if config.esphome.mdns, !config.esphome.bindsLoopback,
      let bus = try? DBusConnection(loop: monitor.loop, address: surroundings.systemBus)
    {
      proxy.announce(on: bus, log: log)
    }
    return proxy
  }

  /// The remote shutter, the find-phone notification, media playback,
  /// tags and the BLE link, as the config asks. Media needs audio.
  private static func attachDeviceParts(
    to daemon: Daemon, config: Config, surroundings: AgentSurroundings, audio: Bool,
    hasMixer: Bool, monitor: AgentMonitor?
  ) throws -> (FindPhoneNotification, TagTransport, BLELinkServer?) {
    let log = daemon.log
    daemon.attach(shutter: ShutterDriver(settings: config.shutter, loop: daemon.loop))
    let notification = FindPhoneNotification(agent: daemon, address: surroundings.sessionBus)
    daemon.add(notification)
    var features: LinkFeatures = [.find, .shutter]
    if hasMixer { features.insert(.volume) }
    if audio {
      let scan = MediaScanner.scan(config.media.library)
      // A library the user chose is worth a word at start; the default one
      // (often absent on a server) only shows in `status`.
      if config.media.library != MediaConfig().library {
        for p in scan.problems { log("media: \(p)") }
        log("media: \(scan.library.items.count) titles in \(config.media.library)")
      }
      daemon.attach(
        media: MediaDriver(settings: config.media, library: scan.library, loop: daemon.loop),
        libraryProblems: scan.problems)
      features.insert(.media)
    }
    // Tags connect at start; `ring ADDRESS` opens the bus when first asked.
    let tags = TagTransport(tags: config.tags, agent: daemon, busAddress: surroundings.systemBus)
    tags.trackerAdapter = config.scanner.adapter
    // Tags are presence: a region naming one follows its link.
    if let monitor { tags.onPresence = { monitor.tag($0, connected: $1) } }
    daemon.attach(tags: tags, showStatus: !config.tags.isEmpty)
    guard config.link.enabled else { return (notification, tags, nil) }
    let name =
      config.link.name ?? String(hostName().utf8.prefix(LinkConfig.maxNameBytes)) ?? "earshot"
    let server: BLELinkServer
    do {
      server = try BLELinkServer(
        loop: daemon.loop, config: config.link, name: name, features: features,
        busAddress: surroundings.systemBus)
    } catch {
      throw AgentError(
        "[link] enabled = true, but the system D-Bus cannot be reached: \(error); start dbus and bluetoothd, or set [link] enabled = false"
      )
    }
    daemon.add(BLELinkTransport(server: server, agent: daemon))
    return (notification, tags, server)
  }

  private static func hostName() -> String {
    var buf = [CChar](repeating: 0, count: 256)
    guard gethostname(&buf, buf.count) == 0 else { return "earshot" }
    return buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
  }
}
