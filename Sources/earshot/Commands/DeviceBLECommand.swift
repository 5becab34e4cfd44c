import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

/// `earshot device --ble ADDRESS ...`: the device side of the BLE link as a
/// central, on a raw L2CAP ATT client, so a second Linux machine (or a test)
/// can act as the accessory.
let deviceBLEOptions: [Option] = [
  .value(
    "ble", "ADDRESS", "Act as a BLE accessory of the Earshot at ADDRESS (its adapter's address)"),
  .value("adapter", "hciN", "--ble: local adapter (default hci0)"),
  .flag("random", "--ble: ADDRESS is a random (not public) LE address"),
  .value(
    "security", "LEVEL", "--ble: low (no encryption), medium (encrypted) or high (MITM; default)"),
  .flag("legacy", "--ble: use the legacy remote-volume service"),
  .value(
    "wait", "SECONDS", "--ble: print notifications for this long after the requests (default 0)"),
  .flag("ack-notice", "--ble: answer a phone_found notice with notice_ack"),
  .value("timeout", "SECONDS", "--ble: how long to wait for each answer (default 10)"),
]

private struct Pending {
  var seq: UInt8
  var opcode: LinkOpcode
}

func runDeviceBLE(_ args: Arguments) throws -> Int32 {
  guard let addressText = args.value("ble"), let peer = BDAddress(addressText) else {
    throw UsageError("--ble ADDRESS is required (like AA:BB:CC:DD:EE:FF)")
  }
  let legacy = args.has("legacy")
  let requests = try parseBLERequests(args.positionals, legacy: legacy)
  let security: GATTClient.Security
  switch args.value("security") ?? "high" {
  case "low": security = .low
  case "medium": security = .medium
  case "high": security = .high
  default: throw UsageError("--security is low, medium or high")
  }
  let timeout = try args.double("timeout") ?? 10
  let wait = try args.double("wait") ?? 0
  // --fail-notice answers with result 1 (a device-defined failure).
  let noticeResult: UInt8? =
    args.has("fail-notice") ? 1 : args.has("ack-notice") ? 0 : nil
  Console.lineBuffered = true

  let client: GATTClient
  do {
    client = try GATTClient(
      adapter: args.value("adapter") ?? "hci0", peer: peer, randomAddress: args.has("random"),
      security: security, timeoutSeconds: timeout)
    try client.exchangeMTU()
  } catch {
    throw CommandFailure("\(error)")
  }
  var j = JSONLine()
  j.add("event", "connected")
  j.add("peer", peer.description)
  j.add("mtu", Int(client.mtu))
  j.add("security", client.securityLevel)
  Console.line(j.line)

  // A Find Me locator's session (only alert requests) needs no link service.
  let alertLevelHandle =
    try requests.contains {
      if case .alert = $0 { true } else { false }
    } ? alertHandle(client, peer) : nil
  let alertsOnly = requests.allSatisfy { $0.isAlert } && noticeResult == nil
  var writeHandle: UInt16 = 0
  var notifyHandle: UInt16 = 0
  if !alertsOnly {
    let serviceUUID = legacy ? LinkUUID.legacyService : LinkUUID.service
    guard let range = try client.findService(serviceUUID) else {
      throw CommandFailure(
        "\(peer) has no service \(serviceUUID): is the link enabled there\(legacy ? " with legacy_remote_volume" : "")?"
      )
    }
    let chars = try client.characteristics(range)
    func handle(_ uuid: String) -> ATT.Characteristic? {
      let want = ATT.uuidBytes(uuid)
      return chars.first { $0.uuid == want }
    }
    guard let w = handle(legacy ? LinkUUID.legacyWrite : LinkUUID.write),
      let n = handle(legacy ? LinkUUID.legacyNotify : LinkUUID.notify)
    else {
      throw CommandFailure("the service on \(peer) lacks the write or notify characteristic")
    }
    writeHandle = w.valueHandle
    notifyHandle = n.valueHandle
    let end =
      chars.first { $0.declaration > n.valueHandle }.map { $0.declaration - 1 } ?? range.1
    guard let ccc = try client.configurationHandle(after: n.valueHandle, end: end) else {
      throw CommandFailure("the notify characteristic has no configuration descriptor")
    }
    if let code = try client.write(ccc, [0x01, 0x00]) {
      printATTError(code, what: "enable notifications")
      return 1
    }
  }

  var pending: Pending? = nil
  var answered = false
  var noticeToAck: UInt16? = nil
  var legacyAnswer = false
  client.onNotification = { h, value in
    guard !alertsOnly, h == notifyHandle else { return }
    if legacy {
      var line = JSONLine()
      line.add("notification", "legacy")
      line.add("hex", value.withUnsafeBytes { $0.hexString })
      if let v = LegacyRemoteVolume.decodeVolume(value), v.isFinite, (0...1).contains(v) {
        line.add("volume", v, decimals: 4)
      } else if let text = String(validating: value, as: UTF8.self) {
        line.add("text", text)
      }
      Console.line(line.line)
      legacyAnswer = true
      return
    }
    var line = JSONLine()
    switch LinkCodec.decodeIncoming(value) {
    case .failure(let e):
      line.add("malformed", "\(e)")
      line.add("hex", value.withUnsafeBytes { $0.hexString })
    case .success(.response(let r)):
      line.add("response", r.opcode.name)
      line.add("seq", Int(r.seq))
      line.add("status", r.status.name)
      describe(r.body, &line)
      if let p = pending, p.seq == r.seq, p.opcode == r.opcode { answered = true }
    case .success(.notification(let seq, let n)):
      line.add("notification", notificationName(n))
      line.add("seq", Int(seq))
      switch n {
      case .phoneFound(let notice):
        line.add("notice", Int(notice))
        if noticeResult != nil { noticeToAck = notice }
      case .volumeChanged(let v):
        line.add("level", v.level, decimals: 3)
        line.add("muted", v.muted)
      case .shutterState(let s): line.add("state", shutterStateName(s))
      case .findEnded(let r): line.add("reason", findEndName(r))
      }
    }
    Console.line(line.line)
  }

  var seq: UInt8 = 0
  var status: Int32 = 0
  func sendAndWait(_ request: BLERequest) throws {
    let bytes: [UInt8]
    switch request {
    case .link(let r):
      seq &+= 1
      bytes = LinkCodec.encode(LinkRequestFrame(seq: seq, request: r))
      pending = Pending(seq: seq, opcode: r.opcode)
    case .raw(let b):
      bytes = b
      pending = nil
    case .legacy(let b):
      bytes = b
      pending = nil
    case .pause(let seconds):
      try client.pump(until: Clock.monotonicNanos() + UInt64(seconds * 1e9))
      return
    case .alert(let b, let withResponse):
      var sent = JSONLine()
      sent.add(
        withResponse ? "sent_alert" : "sent_alert_command", b.withUnsafeBytes { $0.hexString })
      Console.line(sent.line)
      guard let h = alertLevelHandle else { return }
      if !withResponse {
        try client.writeWithoutResponse(h, b)
      } else if let code = try client.write(h, b) {
        printATTError(code, what: b.withUnsafeBytes { $0.hexString })
        status = 1
      } else {
        Console.line(#"{"written":"alert_level"}"#)
      }
      return
    }
    var sent = JSONLine()
    sent.add("sent", bytes.withUnsafeBytes { $0.hexString })
    Console.line(sent.line)
    answered = false
    legacyAnswer = false
    if let code = try client.write(writeHandle, bytes) {
      printATTError(code, what: bytes.withUnsafeBytes { $0.hexString })
      status = 1
      return
    }
    let deadline = Clock.monotonicNanos() + UInt64(timeout * 1e9)
    switch request {
    case .link:
      try client.pump(until: deadline) { answered }
      if !answered {
        Console.error("no response to seq \(seq) within \(timeout) s\n")
        status = 3
      }
    case .legacy(let b)
    where b == LegacyRemoteVolume.requestName || b == LegacyRemoteVolume.requestVolume:
      try client.pump(until: deadline) { legacyAnswer }
      if !legacyAnswer {
        Console.error("no answer within \(timeout) s\n")
        status = 3
      }
    default: break
    }
  }

  do {
    for r in requests { try sendAndWait(r) }
    let deadline = Clock.monotonicNanos() + UInt64(wait * 1e9)
    while Clock.monotonicNanos() < deadline {
      try client.pump(until: deadline) { noticeToAck != nil }
      if let notice = noticeToAck, let result = noticeResult {
        noticeToAck = nil
        try sendAndWait(.link(.noticeAck(notice: notice, result: result)))
      }
    }
  } catch {
    throw CommandFailure("\(error)")
  }
  return status
}

private func printATTError(_ code: UInt8, what: String) {
  var line = JSONLine()
  line.add("att_error", "0x" + (code < 16 ? "0" : "") + String(code, radix: 16))
  line.add("name", ATT.errorName(code))
  line.add("write", what)
  Console.line(line.line)
}

enum BLERequest {
  case link(LinkRequest)
  case legacy([UInt8])
  case raw([UInt8])
  /// The Immediate Alert service's Alert Level, as a Find Me locator writes
  /// it (without response), or with response to hear an ATT error.
  case alert([UInt8], withResponse: Bool)
  /// Stay connected this long (printing notifications) before the next request.
  case pause(Double)

  var isAlert: Bool {
    switch self {
    case .alert, .pause: true
    default: false
    }
  }
}

/// The value handle of the Immediate Alert service's Alert Level.
private func alertHandle(_ client: GATTClient, _ peer: BDAddress) throws -> UInt16 {
  guard let range = try client.findService(AlertLevel.immediateAlertService) else {
    throw CommandFailure(
      "\(peer) has no Immediate Alert service (0x1802): is the link enabled there?")
  }
  let want = [
    UInt8(AlertLevel.characteristic & 0xFF), UInt8(AlertLevel.characteristic >> 8),
  ]
  guard let c = try client.characteristics(range).first(where: { $0.uuid == want }) else {
    throw CommandFailure("the Immediate Alert service on \(peer) has no Alert Level (0x2A06)")
  }
  return c.valueHandle
}

func parseBLERequests(_ words: [String], legacy: Bool) throws -> [BLERequest] {
  var out: [BLERequest] = []
  var rest = words[...]
  func level(_ w: String?) throws -> Double {
    guard let w, let v = Double(w), (0...1).contains(v) else {
      throw UsageError("a level is a number from 0.0 to 1.0, got '\(w ?? "")'")
    }
    return v
  }
  while let word = rest.popFirst() {
    switch (legacy, word) {
    case (_, "alert"):
      // A byte is sent as given, reserved values too (for tests).
      guard let w = rest.popFirst(), let byte = AlertLevel(name: w)?.rawValue ?? UInt8(w) else {
        throw UsageError("alert none|mild|high|BYTE")
      }
      out.append(.alert([byte], withResponse: false))
    case (_, "sleep"):
      guard let w = rest.popFirst(), let seconds = Double(w), seconds >= 0, seconds <= 3600 else {
        throw UsageError("sleep SECONDS (0 to 3600)")
      }
      out.append(.pause(seconds))
    case (_, "alert-write"):
      guard let h = rest.popFirst(), let b = bytes(fromHex: h) else {
        throw UsageError("alert-write needs hex bytes, like alert-write 02")
      }
      out.append(.alert(b, withResponse: true))
    case (_, "raw"):
      guard let h = rest.popFirst(), let b = bytes(fromHex: h) else {
        throw UsageError("raw needs hex bytes, like raw 0107")
      }
      out.append(legacy ? .legacy(b) : .raw(b))
    case (true, "name"): out.append(.legacy(LegacyRemoteVolume.requestName))
    case (true, "volume"): out.append(.legacy(LegacyRemoteVolume.requestVolume))
    case (true, "set"):
      // Not range-checked here on purpose: tests send bad values too.
      guard let w = rest.popFirst(), let v = Double(w) else { throw UsageError("set LEVEL") }
      out.append(.legacy(LegacyRemoteVolume.encodeVolume(v)))
    case (false, "info"): out.append(.link(.info))
    case (false, "find"):
      switch rest.popFirst() {
      case "start": out.append(.link(.findStart))
      case "stop": out.append(.link(.findStop))
      default: throw UsageError("find start|stop")
      }
    case (false, "volume"):
      switch rest.popFirst() {
      case "get": out.append(.link(.volumeGet))
      case "set":
        let v = try level(rest.popFirst())
        out.append(.link(.volumeSet(permille: LinkVolume(level: v, muted: false).permille)))
      case "mute": out.append(.link(.volumeMute(true)))
      case "unmute": out.append(.link(.volumeMute(false)))
      default: throw UsageError("volume get|set LEVEL|mute|unmute")
      }
    case (false, "notice-ack"):
      guard let n = rest.popFirst().flatMap({ UInt16($0) }) else {
        throw UsageError("notice-ack N [RESULT]")
      }
      var result: UInt8 = 0
      if let r = rest.first.flatMap({ UInt8($0) }) {
        result = r
        rest = rest.dropFirst()
      }
      out.append(.link(.noticeAck(notice: n, result: result)))
    case (false, "shutter"):
      let w = rest.popFirst()
      let event: LinkShutterEvent
      switch w {
      case "enter": event = .enter
      case "capture": event = .capture
      case "exit": event = .exit
      default:
        guard let b = w.flatMap({ UInt8($0) }) else {
          throw UsageError("shutter enter|capture|exit|BYTE")
        }
        event = LinkShutterEvent(wire: b)
      }
      out.append(.link(.shutter(event)))
    case (false, "play"):
      guard let t = rest.popFirst(), !t.isEmpty, t.utf8.count <= LinkCodec.maxTitleBytes else {
        throw UsageError("play TITLE (1 to \(LinkCodec.maxTitleBytes) bytes)")
      }
      out.append(.link(.playMedia(title: t)))
    default:
      throw UsageError(
        legacy
          ? "unknown legacy request '\(word)'; use name, volume, set LEVEL or raw HEX"
          : "unknown request '\(word)'; see earshot device --help")
    }
  }
  return out
}

private func describe(_ body: LinkResponseBody, _ line: inout JSONLine) {
  switch body {
  case .none: break
  case .info(let version, let features):
    line.add("version", Int(version))
    line.add("features", Int(features.rawValue))
  case .findStart(let r):
    line.add(
      "result", ["ringing", "joined", "already_requested", "queued"][Int(r.rawValue)])
  case .findStop(let r):
    line.add("result", ["stopped", "withdrawn", "not_requested"][Int(r.rawValue)])
  case .volume(let v):
    line.add("level", v.level, decimals: 3)
    line.add("muted", v.muted)
  case .shutter(let s): line.add("state", shutterStateName(s))
  }
}

private func notificationName(_ n: LinkNotification) -> String {
  switch n {
  case .phoneFound: "phone_found"
  case .volumeChanged: "volume_changed"
  case .shutterState: "shutter_state"
  case .findEnded: "find_ended"
  }
}

private func shutterStateName(_ s: LinkShutterState) -> String {
  switch s {
  case .exitedOrUnableToEnter: "exitedOrUnableToEnter"
  case .enteredPhotoMode: "enteredPhotoMode"
  case .photoSuccess: "photoSuccess"
  case .photoFailed: "photoFailed"
  }
}

private func findEndName(_ r: LinkFindEndReason) -> String {
  switch r {
  case .found: "found"
  case .deviceStop: "device_stop"
  case .timeout: "timeout"
  case .alertFailed: "alert_failed"
  }
}
