import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

public struct ESPHomeProxyError: Error, CustomStringConvertible {
  public let description: String
  public init(_ description: String) { self.description = description }
}

/// The Home Assistant Bluetooth proxy as a part of `earshot run`: the
/// ESPHome API server plus the batching of the shared scanner's reports.
/// Reports are taken as the monitor is given them (`AgentMonitor.observeReports`),
/// so presence and the proxy hear the same radio and neither waits for the
/// other: a report costs the proxy one encode into the pending batch, and
/// nothing at all while no client is subscribed.
public final class ESPHomeProxy {
  public let server: ESPHomeServer
  private let loop: EventLoop
  private var batcher = ESPHomeAdvertisementBatcher()
  private var flushTimer: EventLoop.TimerID?
  private let configuredActive: Bool
  /// Reports forwarded, and those left out (no room in 62 bytes, anonymous
  /// address, or unfinished data).
  public private(set) var forwarded = 0
  public private(set) var skipped = 0

  /// `configuredActive`: the agent scans actively by its config (`[scanner]
  /// passive = false`), whatever the clients ask.
  public init(
    loop: EventLoop, config: ESPHomeConfig, hostname: String, version: String,
    configuredActive: Bool = false, log: @escaping (String) -> Void
  )
    throws
  {
    self.loop = loop
    self.configuredActive = configuredActive
    var psk: [UInt8]? = nil
    if let file = config.keyFile {
      let text: String
      do { text = String(decoding: try FileBytes(path: file).bytes, as: UTF8.self) } catch {
        throw ESPHomeProxyError(
          "cannot read [esphome] key_file \(file): \(error); make it readable by the agent")
      }
      do { psk = try ESPHomeKey.decode(text) } catch {
        throw ESPHomeProxyError("[esphome] key_file \(file): \(error)")
      }
      var st = stat()
      if stat(file, &st) == 0, st.st_mode & 0o077 != 0 {
        log("esphome: \(file) is readable by others; chmod 600 it (it is the proxy's key)")
      }
    } else if !config.insecurePlaintext {
      throw ESPHomeProxyError(
        "[esphome] needs key_file (a base64 32-byte key: openssl rand -base64 32), or insecure_plaintext = true to serve unencrypted"
      )
    }
    let name = config.name ?? ESPHomeDeviceInfo.nodeName(fromHostname: hostname)
    let mac = Self.stableMAC(name: name)
    let info = ESPHomeDeviceInfo(
      name: name, friendlyName: config.name ?? hostname, macAddress: mac, bluetoothMacAddress: mac,
      compilationTime: "earshot \(version)", projectVersion: version, encrypted: psk != nil)
    let options = ESPHomeServer.Options(
      bind: config.bind, port: config.port, maxClients: config.maxClients, psk: psk, info: info,
      serverInfo: "earshot \(version)")
    server = try ESPHomeServer(loop: loop, options: options)
    server.onLog = log
    server.report(
      scanner: ESPHomeScannerStatus(
        state: .running, active: configuredActive, configuredActive: configuredActive))
    if psk == nil {
      log(
        "esphome: WARNING: serving the Bluetooth proxy WITHOUT encryption on \(config.bind):\(server.port) ([esphome] insecure_plaintext = true): anyone who can connect reads every advertisement heard here"
      )
    } else {
      log("esphome: Bluetooth proxy '\(name)' on \(config.bind):\(server.port) (encrypted)")
    }
  }

  /// A MAC for Home Assistant's device registry that stays the same across
  /// restarts: from /etc/machine-id and the node name, locally administered.
  static func stableMAC(name: String) -> String {
    let id = (try? FileBytes(path: "/etc/machine-id").bytes) ?? []
    var h = LibcryptoNoise().sha256(id + Array("earshot esphome \(name)".utf8))
    h[0] = (h[0] & 0xFC) | 0x02
    return BDAddress(raw: h.prefix(6).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }).description
  }

  private var bus: DBusConnection?
  private var announcement: AvahiAnnouncement?

  /// Announces the proxy through Avahi on the system bus; silent without
  /// a bus or an avahi-daemon.
  public func announce(on bus: DBusConnection, log: @escaping (String) -> Void) {
    let a = AvahiAnnouncement(
      bus: bus, name: server.options.info.name, port: server.port,
      txt: AvahiAnnouncement.records(server.options.info), log: log)
    do { try a.start() } catch { return }
    self.bus = bus
    announcement = a
  }

  /// Feeds the proxy from the monitor's reports; the clients' scanner-mode
  /// requests go to the monitor's live scanner (a replay has none: the
  /// mode stays as configured), and its state comes back to them.
  public func attach(to monitor: AgentMonitor) {
    monitor.observeReports { [unowned self] report in self.forward(report) }
    monitor.observeAdapterState { [unowned self] state in
      self.server.report(scanner: Self.status(state, configuredActive: self.configuredActive))
    }
    server.onScannerMode = { [unowned monitor] active in
      monitor.scanner?.want(type: active ? .active : .passive)
    }
  }

  /// The adapter's state as ESPHome's scanner state: running while reports
  /// flow (another program's scan counts as the configured mode: its
  /// parameters are not Earshot's to know), failed otherwise.
  static func status(_ state: AdapterState, configuredActive: Bool) -> ESPHomeScannerStatus {
    switch state {
    case .scanning(_, _, let type):
      ESPHomeScannerStatus(
        state: .running, active: type == .active, configuredActive: configuredActive)
    case .sharing:
      ESPHomeScannerStatus(
        state: .running, active: configuredActive, configuredActive: configuredActive)
    case .down, .removed, .failed:
      ESPHomeScannerStatus(
        state: .failed, active: configuredActive, configuredActive: configuredActive)
    }
  }

  /// One advertising report, as the scanner delivered it.
  public func forward(_ report: AdvertisingReport) {
    guard server.subscriberCount > 0 else { return }
    guard report.dataStatus == .complete, report.addressType != .anonymous,
      report.data.count <= ESPHomeRawAdvertisement.maxData
    else {
      skipped += 1
      return
    }
    forwarded += 1
    let a = ESPHomeRawAdvertisement(
      address: report.address.raw, rssi: Int32(report.rssi ?? -127),
      addressType: UInt32(report.addressType.rawValue), data: Array(report.data))
    if let full = batcher.add(a) {
      server.broadcast(batch: full)
    } else if flushTimer == nil {
      flushTimer = loop.after(nanos: ESPHomeAdvertisementBatcher.flushIntervalNanos) {
        [unowned self] in
        self.flushTimer = nil
        self.flush()
      }
    }
  }

  /// The `esphome` section of `status`.
  public var statusJSON: JSONValue {
    .object([
      ("port", .number(Double(server.port))),
      ("encrypted", .bool(server.options.psk != nil)),
      ("clients", .number(Double(server.clientCount))),
      ("subscribed", .number(Double(server.subscriberCount))),
      ("forwarded", .number(Double(forwarded))),
      ("skipped", .number(Double(skipped))),
      ("batches_offered", .number(Double(server.batchesOffered))),
      ("batches_dropped", .number(Double(server.batchesDropped))),
      // The scanner as clients are told, and how many ask for active scanning.
      (
        "scanner",
        .object([
          ("state", .string("\(server.scanner.state)")),
          ("mode", .string(server.scanner.active ? "active" : "passive")),
          ("configured", .string(server.scanner.configuredActive ? "active" : "passive")),
          ("clients_asking_active", .number(Double(server.clientsAskingActive))),
        ])
      ),
      // Connections refused, displaced before their Hello, and the like.
      (
        "bad_input",
        .object(
          server.badInputTotals.sorted { $0.key < $1.key }.map {
            ($0.key, .number(Double($0.value)))
          })
      ),
    ])
  }

  /// Sends the pending batch now (the timer's job; also at the end of a replay).
  public func flush() {
    if let batch = batcher.flush() { server.broadcast(batch: batch) }
  }

  public func shutdown() {
    if let flushTimer { loop.cancel(flushTimer) }
    flushTimer = nil
    server.shutdown()
  }
}
