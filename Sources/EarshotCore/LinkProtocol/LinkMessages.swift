/// The BLE device link's messages (docs/link-protocol.md describes the bytes).
///
/// A device writes requests to the write characteristic; Earshot answers each
/// one with exactly one response on the notify characteristic, carrying the
/// request's sequence number, and also notifies events of its own (the
/// phone-found notice, volume changes, ...).

/// The GATT identities of the link. Random 128-bit UUIDs, fixed for good:
/// firmware hard-codes them.
public enum LinkUUID {
  public static let service = "80ebd27d-5e77-455e-9d73-d30dfd1b5b6a"
  /// Device → Earshot: requests (Write With Response).
  public static let write = "7f740979-25c7-45b1-8be2-2b0b8c17e7f0"
  /// Earshot → device: responses and notifications.
  public static let notify = "0ed188d2-810a-4008-8623-cac068828bbc"

  /// The compatibility service (`legacy_remote_volume`), its own pair so the
  /// two protocols never share a characteristic.
  public static let legacyService = "308263c1-f8d7-42bf-b6f4-4a9bbee2094f"
  public static let legacyWrite = "21316af2-3acc-405c-bfbb-cc1c0c9a6efb"
  public static let legacyNotify = "142cb08a-4466-4e76-ae33-d251e06143a5"
}

/// Request opcodes (device → Earshot). A response carries `opcode | 0x80`.
public enum LinkOpcode: UInt8, CaseIterable, Sendable {
  case info = 0x00
  case findStart = 0x01
  case findStop = 0x02
  case noticeAck = 0x03
  case volumeGet = 0x10
  case volumeSet = 0x11
  case volumeMute = 0x12
  case shutter = 0x20
  case playMedia = 0x30

  public static let responseBit: UInt8 = 0x80

  public var name: String {
    switch self {
    case .info: "info"
    case .findStart: "find_start"
    case .findStop: "find_stop"
    case .noticeAck: "notice_ack"
    case .volumeGet: "volume_get"
    case .volumeSet: "volume_set"
    case .volumeMute: "volume_mute"
    case .shutter: "shutter"
    case .playMedia: "play_media"
    }
  }
}

/// A volume as the link carries it: per mille (0...1000) and a mute flag.
public struct LinkVolume: Equatable, Sendable {
  public static let maxLevel: UInt16 = 1000
  /// 0...1000 (1000 = full scale).
  public var permille: UInt16
  public var muted: Bool

  public init(permille: UInt16, muted: Bool) {
    self.permille = min(permille, Self.maxLevel)
    self.muted = muted
  }

  /// From the mixer's 0...1 level (rounded to the nearest per mille).
  public init(level: Double, muted: Bool) {
    let clamped = level.isFinite ? min(max(level, 0), 1) : 0
    self.init(permille: UInt16((clamped * 1000).rounded()), muted: muted)
  }

  public var level: Double { Double(permille) / 1000 }
}

/// Remote-shutter events a device sends (issue 10's values).
public enum LinkShutterEvent: Equatable, Sendable {
  case exit
  case enter
  case capture
  /// Any other byte: answered with `unknownEvent`, changes nothing.
  case unknown(UInt8)

  public init(wire: UInt8) {
    switch wire {
    case 0: self = .exit
    case 1: self = .enter
    case 2: self = .capture
    default: self = .unknown(wire)
    }
  }

  public var wire: UInt8 {
    switch self {
    case .exit: 0
    case .enter: 1
    case .capture: 2
    case .unknown(let b): b
    }
  }
}

/// The shutter state synced back to the device.
public enum LinkShutterState: UInt8, CaseIterable, Sendable {
  case exitedOrUnableToEnter = 0
  case enteredPhotoMode = 1
  case photoSuccess = 2
  case photoFailed = 3
}

/// What a device asks for.
public enum LinkRequest: Equatable, Sendable {
  case info
  case findStart
  case findStop
  /// The answer to a phone-found notice: `result` 0 = accepted (shown to
  /// the user), anything else = failed with that device-defined reason.
  case noticeAck(notice: UInt16, result: UInt8)
  case volumeGet
  case volumeSet(permille: UInt16)
  case volumeMute(Bool)
  case shutter(LinkShutterEvent)
  case playMedia(title: String)

  public var opcode: LinkOpcode {
    switch self {
    case .info: .info
    case .findStart: .findStart
    case .findStop: .findStop
    case .noticeAck: .noticeAck
    case .volumeGet: .volumeGet
    case .volumeSet: .volumeSet
    case .volumeMute: .volumeMute
    case .shutter: .shutter
    case .playMedia: .playMedia
    }
  }
}

/// One decoded write: the device's sequence number and what it asks.
public struct LinkRequestFrame: Equatable, Sendable {
  public var seq: UInt8
  public var request: LinkRequest

  public init(seq: UInt8, request: LinkRequest) {
    self.seq = seq
    self.request = request
  }
}

/// The outcome byte of every response. Media completions use the same table
/// (issue 10's response codes), so one byte answers every request.
public enum LinkStatus: UInt8, CaseIterable, Sendable {
  case ok = 0x00
  case failure = 0x01
  case busy = 0x02
  case timeout = 0x03
  /// The feature is not configured or not running here (no mixer, no camera).
  case unavailable = 0x04
  case notFound = 0x05
  case unsupportedMediaType = 0x06
  case playerNotRunning = 0x07
  /// notice_ack for a notice this device was not sent (or already answered).
  case unknownNotice = 0x08
  /// A shutter event that is not enter, capture or exit.
  case unknownEvent = 0x09

  public var name: String {
    switch self {
    case .ok: "ok"
    case .failure: "failure"
    case .busy: "busy"
    case .timeout: "timeout"
    case .unavailable: "unavailable"
    case .notFound: "not_found"
    case .unsupportedMediaType: "unsupported_media_type"
    case .playerNotRunning: "player_not_running"
    case .unknownNotice: "unknown_notice"
    case .unknownEvent: "unknown_event"
    }
  }
}

/// What a find_start did (the coordinator's reply, as one byte).
public enum LinkFindStartResult: UInt8, CaseIterable, Sendable {
  case ringing = 0
  /// Already ringing for another device: this one joins.
  case joined = 1
  /// This device already asked; nothing stacks.
  case alreadyRequested = 2
  /// The last ring is still stopping; this one rings right after.
  case queued = 3
}

/// What a find_stop did.
public enum LinkFindStopResult: UInt8, CaseIterable, Sendable {
  /// The alert stops (no notice follows).
  case stopped = 0
  /// This device's request is withdrawn; it still rings for others.
  case withdrawn = 1
  /// This device had no open request.
  case notRequested = 2
}

/// Why a ring ended (the find_ended notification).
public enum LinkFindEndReason: UInt8, CaseIterable, Sendable {
  case found = 0
  case deviceStop = 1
  case timeout = 2
  case alertFailed = 3
}

/// Which features this Earshot serves (info response, a bit mask).
public struct LinkFeatures: OptionSet, Equatable, Sendable {
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }
  public static let find = LinkFeatures(rawValue: 1 << 0)
  public static let volume = LinkFeatures(rawValue: 1 << 1)
  public static let shutter = LinkFeatures(rawValue: 1 << 2)
  public static let media = LinkFeatures(rawValue: 1 << 3)
}

/// The data of a successful response (status ok); an error response has none.
public enum LinkResponseBody: Equatable, Sendable {
  case none
  case info(version: UInt8, features: LinkFeatures)
  case findStart(LinkFindStartResult)
  case findStop(LinkFindStopResult)
  case volume(LinkVolume)
  case shutter(LinkShutterState)
}

/// Earshot's answer to one request.
public struct LinkResponse: Equatable, Sendable {
  public var opcode: LinkOpcode
  public var seq: UInt8
  public var status: LinkStatus
  public var body: LinkResponseBody

  public init(opcode: LinkOpcode, seq: UInt8, status: LinkStatus, body: LinkResponseBody = .none) {
    self.opcode = opcode
    self.seq = seq
    self.status = status
    self.body = status == .ok ? body : .none
  }

  /// An error answer to `frame` (no body).
  public static func error(_ status: LinkStatus, to frame: LinkRequestFrame) -> LinkResponse {
    LinkResponse(opcode: frame.request.opcode, seq: frame.seq, status: status)
  }

  public static func ok(_ body: LinkResponseBody = .none, to frame: LinkRequestFrame)
    -> LinkResponse
  {
    LinkResponse(opcode: frame.request.opcode, seq: frame.seq, status: .ok, body: body)
  }
}

/// Notification codes (Earshot → device, unsolicited).
public enum LinkNotificationCode: UInt8, CaseIterable, Sendable {
  case phoneFound = 0x40
  case volumeChanged = 0x41
  case shutterState = 0x42
  case findEnded = 0x43
}

/// Something Earshot tells a device without being asked.
public enum LinkNotification: Equatable, Sendable {
  /// The user found the laptop; answer with notice_ack(notice, result).
  case phoneFound(notice: UInt16)
  case volumeChanged(LinkVolume)
  case shutterState(LinkShutterState)
  case findEnded(LinkFindEndReason)

  public var code: LinkNotificationCode {
    switch self {
    case .phoneFound: .phoneFound
    case .volumeChanged: .volumeChanged
    case .shutterState: .shutterState
    case .findEnded: .findEnded
    }
  }
}

/// What arrives on the notify characteristic, for centrals (the CLI, tests).
public enum LinkIncoming: Equatable, Sendable {
  case response(LinkResponse)
  case notification(seq: UInt8, LinkNotification)
}
