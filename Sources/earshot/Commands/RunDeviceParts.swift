import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

/// The remote shutter, media playback and the BLE link of `earshot run`,
/// as the config asks. Media needs audio (not with --no-audio).
func attachDeviceParts(
  to daemon: Daemon, config: Config, audio: Bool, hasMixer: Bool, monitor: AgentMonitor?
) throws {
  let log = daemon.log
  daemon.attach(shutter: ShutterDriver(settings: config.shutter, loop: daemon.loop))
  daemon.add(FindPhoneNotification(agent: daemon))
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
  let tags = TagTransport(tags: config.tags, agent: daemon)
  // Tags are presence: a region naming one follows its link.
  if let monitor { tags.onPresence = { monitor.tag($0, connected: $1) } }
  daemon.attach(tags: tags, showStatus: !config.tags.isEmpty)
  guard config.link.enabled else { return }
  let name =
    config.link.name ?? String(hostName().utf8.prefix(LinkConfig.maxNameBytes)) ?? "earshot"
  let server: BLELinkServer
  do {
    server = try BLELinkServer(
      loop: daemon.loop, config: config.link, name: name, features: features)
  } catch {
    throw CommandFailure(
      "[link] enabled = true, but the system D-Bus cannot be reached: \(error); start dbus and bluetoothd, or set [link] enabled = false"
    )
  }
  daemon.add(BLELinkTransport(server: server, agent: daemon))
}

func hostName() -> String {
  var buf = [CChar](repeating: 0, count: 256)
  guard gethostname(&buf, buf.count) == 0 else { return "earshot" }
  return buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
}
