/// The ESPHome native API messages Earshot speaks, by their ids in
/// aioesphomeapi's `api.proto`. One table says what the server does with
/// each message a client may send; anything else is ignored, as ESPHome
/// ignores messages for components it lacks.
public enum ESPHomeMessageID: UInt32, Sendable, CaseIterable {
  case helloRequest = 1
  case helloResponse = 2
  case authenticationRequest = 3  // "ConnectRequest" before ESPHome 2025
  case authenticationResponse = 4
  case disconnectRequest = 5
  case disconnectResponse = 6
  case pingRequest = 7
  case pingResponse = 8
  case deviceInfoRequest = 9
  case deviceInfoResponse = 10
  case listEntitiesRequest = 11
  case listEntitiesDoneResponse = 19
  case subscribeStatesRequest = 20
  case subscribeLogsRequest = 28
  case subscribeHomeassistantServicesRequest = 34
  case getTimeResponse = 37
  case subscribeHomeAssistantStatesRequest = 38
  case subscribeBluetoothLEAdvertisementsRequest = 66
  case subscribeBluetoothConnectionsFreeRequest = 80
  case bluetoothConnectionsFreeResponse = 81
  case unsubscribeBluetoothLEAdvertisementsRequest = 87
  case bluetoothLERawAdvertisementsResponse = 93
  case bluetoothScannerStateResponse = 126
  case bluetoothScannerSetModeRequest = 127
}

/// What the server does with a client's message.
public enum ESPHomeClientMessage: Sendable, Equatable {
  case hello(clientInfo: String, major: UInt32, minor: UInt32)
  case authenticate
  case disconnect
  case disconnected  // the client's DisconnectResponse to our request
  case ping
  case pong
  case deviceInfo
  case listEntities
  /// States, logs, Home Assistant services and states: accepted, nothing to send.
  case subscribeQuietly(ESPHomeMessageID)
  case subscribeAdvertisements(flags: UInt32)
  case unsubscribeAdvertisements
  case connectionsFree
  case setScannerMode(active: Bool)
  case ignored(type: UInt32)

  /// Decodes one message; a malformed body throws (the client is closed).
  public static func decode(type: UInt32, body: [UInt8]) throws(ProtobufError) -> Self {
    let fields = try protobufFields(body)
    func uint(_ n: UInt32) -> UInt64 {
      for case (n, .varint(let v)) in fields.reversed() { return v }
      return 0
    }
    func text(_ n: UInt32) -> String {
      for case (n, .bytes(let b)) in fields.reversed() { return String(decoding: b, as: UTF8.self) }
      return ""
    }
    guard let id = ESPHomeMessageID(rawValue: type) else { return .ignored(type: type) }
    switch id {
    case .helloRequest:
      return .hello(
        clientInfo: text(1), major: UInt32(truncatingIfNeeded: uint(2)),
        minor: UInt32(truncatingIfNeeded: uint(3)))
    case .authenticationRequest: return .authenticate
    case .disconnectRequest: return .disconnect
    case .disconnectResponse: return .disconnected
    case .pingRequest: return .ping
    case .pingResponse: return .pong
    case .deviceInfoRequest: return .deviceInfo
    case .listEntitiesRequest: return .listEntities
    case .subscribeStatesRequest, .subscribeLogsRequest, .subscribeHomeassistantServicesRequest,
      .subscribeHomeAssistantStatesRequest:
      return .subscribeQuietly(id)
    case .subscribeBluetoothLEAdvertisementsRequest:
      return .subscribeAdvertisements(flags: UInt32(truncatingIfNeeded: uint(1)))
    case .unsubscribeBluetoothLEAdvertisementsRequest: return .unsubscribeAdvertisements
    case .subscribeBluetoothConnectionsFreeRequest: return .connectionsFree
    case .bluetoothScannerSetModeRequest: return .setScannerMode(active: uint(1) == 1)
    default: return .ignored(type: type)
    }
  }
}

/// Who the proxy says it is (DeviceInfoResponse, HelloResponse, the Noise
/// server hello).
public struct ESPHomeDeviceInfo: Sendable, Equatable {
  /// The node name: lower case, digits and '-', at most 31 bytes (ESPHome's rule).
  public var name: String
  public var friendlyName: String
  /// "AA:BB:CC:DD:EE:FF": Home Assistant's unique id for the device.
  public var macAddress: String
  public var bluetoothMacAddress: String
  /// ESPHome's version the API behaves as; Home Assistant compares it.
  public var esphomeVersion = "2024.11.0"
  public var compilationTime: String
  public var model = "Linux"
  public var manufacturer = "Earshot"
  /// "MANUFACTURER.MODEL": Home Assistant names the device's manufacturer
  /// and model after the two halves of a project name, over the fields above.
  public var projectName = "Earshot.Linux"
  public var projectVersion: String
  public var encrypted: Bool

  /// PASSIVE_SCAN | RAW_ADVERTISEMENTS | FEATURE_STATE_AND_MODE: no active
  /// connections (GATT); the scanner's state is reported and its mode
  /// requests honoured (`ESPHomeScannerStatus`).
  public static let featureFlags: UInt32 = 1 | 32 | 64

  public init(
    name: String, friendlyName: String, macAddress: String, bluetoothMacAddress: String,
    compilationTime: String, projectVersion: String, encrypted: Bool
  ) {
    self.name = name
    self.friendlyName = friendlyName
    self.macAddress = macAddress
    self.bluetoothMacAddress = bluetoothMacAddress
    self.compilationTime = compilationTime
    self.projectVersion = projectVersion
    self.encrypted = encrypted
  }

  /// A valid node name from a host name: "My Laptop.lan" -> "my-laptop".
  public static func nodeName(fromHostname host: String) -> String {
    let first = host.split(separator: ".").first.map(String.init) ?? host
    var out = ""
    for c in first.lowercased().unicodeScalars {
      let ok = ("a"..."z").contains(c) || ("0"..."9").contains(c)
      if ok { out.unicodeScalars.append(c) } else if !out.hasSuffix("-") { out += "-" }
    }
    while out.hasSuffix("-") { out.removeLast() }
    return String((out.isEmpty ? "earshot" : out).prefix(31))
  }
}

/// Encodings of the server's messages.
public enum ESPHomeServerMessage {
  /// The API version Earshot answers with (ESPHome 2024.11 said 1.10).
  public static let apiVersion: (major: UInt32, minor: UInt32) = (1, 10)

  public static func helloResponse(serverInfo: String, name: String) -> [UInt8] {
    var w = ProtobufWriter()
    w.uint(1, UInt64(apiVersion.major))
    w.uint(2, UInt64(apiVersion.minor))
    w.string(3, serverInfo)
    w.string(4, name)
    return w.bytes
  }

  public static func deviceInfoResponse(_ d: ESPHomeDeviceInfo) -> [UInt8] {
    var w = ProtobufWriter()
    w.string(2, d.name)
    w.string(3, d.macAddress)
    w.string(4, d.esphomeVersion)
    w.string(5, d.compilationTime)
    w.string(6, d.model)
    w.string(8, d.projectName)
    w.string(9, d.projectVersion)
    w.string(12, d.manufacturer)
    w.string(13, d.friendlyName)
    w.uint(15, UInt64(ESPHomeDeviceInfo.featureFlags))
    w.string(18, d.bluetoothMacAddress)
    w.bool(19, d.encrypted)
    return w.bytes
  }

  public static func connectionsFree() -> [UInt8] { [] }  // free 0, limit 0: no GATT
}

/// One advertising report as the proxy forwards it.
public struct ESPHomeRawAdvertisement: Sendable, Equatable {
  /// The address as the API carries it: the 48-bit value, most significant
  /// byte first when printed (`BDAddress.raw`).
  public var address: UInt64
  public var rssi: Int32
  /// 0 public, 1 random, 2 public identity, 3 random identity (HCI's values).
  public var addressType: UInt32
  /// The report's AD data, at most `maxData` bytes.
  public var data: [UInt8]

  /// ESPHome's limit: 31 bytes of advertising data and 31 of scan response.
  public static let maxData = 62

  public init(address: UInt64, rssi: Int32, addressType: UInt32, data: [UInt8]) {
    self.address = address
    self.rssi = rssi
    self.addressType = addressType
    self.data = data
  }

  /// Appends this advertisement as element 1 of a BluetoothLERawAdvertisementsResponse.
  public func encode(into w: inout ProtobufWriter) {
    var e = ProtobufWriter()
    e.uint(1, address)
    e.sint32(2, rssi)
    e.uint(3, UInt64(addressType))
    e.bytes(4, data)
    w.message(1, e.bytes)
  }

  /// Decodes a BluetoothLERawAdvertisementsResponse body (for tests and tools).
  public static func decodeBatch(_ body: [UInt8]) throws(ProtobufError) -> [Self] {
    var out: [Self] = []
    for case (1, .bytes(let element)) in try protobufFields(body) {
      var a = Self(address: 0, rssi: 0, addressType: 0, data: [])
      for (n, v) in try protobufFields(element) {
        switch (n, v) {
        case (1, .varint(let x)): a.address = x
        case (2, .varint(let x)): a.rssi = ProtobufWire.unzigzag(x)
        case (3, .varint(let x)): a.addressType = UInt32(truncatingIfNeeded: x)
        case (4, .bytes(let b)): a.data = b
        default: break
        }
      }
      out.append(a)
    }
    return out
  }
}

/// Gathers advertisements into BluetoothLERawAdvertisementsResponse bodies
/// the way ESPHome's bluetooth_proxy does: a batch goes out when it holds
/// `capacity` advertisements, or when the owner's flush timer fires
/// (ESPHome: 16 per message, flushed every 100 ms).
public struct ESPHomeAdvertisementBatcher: Sendable {
  public static let defaultCapacity = 16
  public static let flushIntervalNanos: UInt64 = 100_000_000
  public let capacity: Int
  private var writer = ProtobufWriter()
  public private(set) var count = 0

  public init(capacity: Int = defaultCapacity) { self.capacity = capacity }

  /// Adds one advertisement; returns a full batch's body when this one fills it.
  public mutating func add(_ a: ESPHomeRawAdvertisement) -> [UInt8]? {
    a.encode(into: &writer)
    count += 1
    return count >= capacity ? flush() : nil
  }

  /// The pending batch's body, or `nil` if none is pending.
  public mutating func flush() -> [UInt8]? {
    guard count > 0 else { return nil }
    defer {
      writer = ProtobufWriter()
      count = 0
    }
    return writer.bytes
  }
}
