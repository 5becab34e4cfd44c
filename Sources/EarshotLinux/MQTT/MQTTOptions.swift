import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

extension MQTTBridge.Options {
  /// The bridge's settings from `[mqtt]`: client id
  /// `earshot-<hostname>-<user>-<pid>` (unique per agent: a system and a
  /// user agent on one laptop, or several in a test, never take each
  /// other's session) and base topic `earshot/<hostname>` unless set, the password from
  /// `password_file` (its first line), TLS with the system CAs unless `ca`.
  public init(config: MQTTConfig, hostname: String, version: String) throws {
    guard let host = config.host else {
      throw MQTTError("[mqtt] host is not set; set it to the broker's name or address")
    }
    var client = MQTTClient.Options(
      clientID: config.clientID ?? Self.uniqueClientID("earshot", hostname: hostname))
    client.host = host
    client.port = Int32(config.port)
    client.username = config.username
    if let file = config.passwordFile {
      let bytes: [UInt8]
      do { bytes = try FileBytes(path: file).bytes } catch {
        throw MQTTError(
          "cannot read [mqtt] password_file \(file): \(error); "
            + "make it readable by the agent or remove the key")
      }
      let first =
        bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        .first ?? []
      client.password = String(decoding: first.filter { $0 != UInt8(ascii: "\r") }, as: UTF8.self)
    }
    if config.tls {
      client.caFile = config.ca ?? "/etc/ssl/certs/ca-certificates.crt"
      client.certFile = config.cert
      client.keyFile = config.key
    }
    let topics = MQTTTopics(base: config.baseTopic ?? "earshot/\(hostname)")
    self.init(
      client: client, topics: topics,
      discovery: config.discovery
        ? HomeAssistantDiscovery(
          topics: topics, hostname: hostname, version: version, prefix: config.discoveryPrefix)
        : nil)
    qos = Int32(config.qos)
    retain = config.retain
    beaconInterval = config.beaconInterval
  }

  /// `PREFIX-<hostname>-<user>-<pid>`: unique per running agent. The
  /// session is clean, so a new id each start loses nothing.
  public static func uniqueClientID(_ prefix: String, hostname: String) -> String {
    let user = getpwuid(geteuid()).flatMap { $0.pointee.pw_name.map { String(cString: $0) } }
    return "\(prefix)-\(hostname)-\(user ?? "uid\(geteuid())")-\(getpid())"
  }

  /// This machine's host name (the defaults' `<hostname>`).
  public static func hostname() -> String {
    var buffer = [UInt8](repeating: 0, count: 256)
    let ok = buffer.withUnsafeMutableBufferPointer { b in
      b.baseAddress!.withMemoryRebound(to: CChar.self, capacity: b.count) {
        gethostname($0, b.count - 1) == 0
      }
    }
    guard ok else { return "localhost" }
    let name = String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
    return name.isEmpty ? "localhost" : name
  }
}
