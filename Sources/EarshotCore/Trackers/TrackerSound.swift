/// How a stranger makes a tracker play a sound, or asks it who it is: one
/// row per GATT way in (docs/trackers.md, "Ringing and identifying"). The
/// facts: the IETF DULT accessory protocol (draft-ietf-dult-accessory-protocol),
/// Apple's Find My accessory non-owner service and AirGuard's `AirTag.kt`,
/// `AppleFindMy.kt` and `PebbleBee.kt`.
public struct TrackerSoundRow: Equatable, Sendable {
  /// How the tag answers a write.
  public enum Answer: Equatable, Sendable {
    /// The write's acknowledgement is all there is.
    case acknowledgement
    /// A DULT Command_Response indication, after `skip` leading bytes.
    case dult(skip: Int)
  }

  public let name: String
  /// Service and characteristic UUIDs as BlueZ spells them (128-bit, lower case).
  public let service: String
  public let characteristic: String
  public let start: [UInt8]
  /// nil: the sound cannot be stopped (it stops by itself).
  public let stop: [UInt8]?
  /// Notifications or indications must be on before the first write.
  public let subscribeFirst: Bool
  public let answer: Answer
  /// It answers DULT's information opcodes (identify).
  public let identifies: Bool

  /// The key `BlueZCentral.characteristics` lists it under.
  public var key: String { service + "/" + characteristic }
}

public enum TrackerSound {
  /// DULT's non-owner control point: opcodes little-endian, answers by indication.
  public static let dult = TrackerSoundRow(
    name: "DULT", service: "15190001-12f4-c226-88ed-2ac5579f2a85",
    characteristic: "8e0c0001-1d68-fb92-bf61-48377421680e",
    start: DULT.command(DULT.soundStart), stop: DULT.command(DULT.soundStop),
    subscribeFirst: true, answer: .dult(skip: 0), identifies: true)
  /// The AirTag's own sound service: one byte, no way to stop it.
  public static let airTag = TrackerSoundRow(
    name: "AirTag", service: "7dfc9000-7d1c-4951-86aa-8d9728f8d66c",
    characteristic: "7dfc9001-7d1c-4951-86aa-8d9728f8d66c",
    start: [0xAF], stop: nil, subscribeFirst: false, answer: .acknowledgement,
    identifies: false)
  /// Find My accessories (0xFD44): a leading byte, then the DULT opcode.
  public static let findMyAccessory = TrackerSoundRow(
    name: "Find My accessory", service: TagGATT.uuid16(0xFD44),
    characteristic: "4f860003-943b-49ef-bed4-2f730304427a",
    start: [0x01] + DULT.command(DULT.soundStart), stop: [0x01] + DULT.command(DULT.soundStop),
    subscribeFirst: true, answer: .dult(skip: 1), identifies: false)
  /// Pebblebee (0xFA25): start 0x01, stop 0x02 on 0x2C02.
  public static let pebblebee = TrackerSoundRow(
    name: "Pebblebee", service: TagGATT.uuid16(0xFA25), characteristic: TagGATT.uuid16(0x2C02),
    start: [0x01], stop: [0x02], subscribeFirst: false, answer: .acknowledgement,
    identifies: false)

  /// Every row.
  public static let table = [dult, airTag, findMyAccessory, pebblebee]

  /// The ways to try for a family, the first the tag offers first; empty:
  /// a stranger cannot ring it. DULT leads where a tag may speak it: it is
  /// the shared standard and the only one that says "near its owner".
  public static func candidates(_ family: TrackerProtocol.Family) -> [TrackerSoundRow] {
    switch family {
    case .findMy: [dult, airTag, findMyAccessory]
    case .findHub, .dult: [dult]
    case .pebblebee: [pebblebee, dult]
    case .smartTag, .tile, .chipolo: []
    }
  }
}

/// DULT's non-owner messages (draft-ietf-dult-accessory-protocol): a
/// 16-bit little-endian opcode, then its operands.
public enum DULT {
  public static let soundStart: UInt16 = 0x0300
  public static let soundStop: UInt16 = 0x0301
  public static let commandResponse: UInt16 = 0x0302
  public static let soundCompleted: UInt16 = 0x0303
  public static let getIdentifier: UInt16 = 0x0404
  public static let identifierResponse: UInt16 = 0x0405

  /// The statuses of a Command_Response.
  public static let success: UInt16 = 0x0000
  public static let invalidState: UInt16 = 0x0001

  public static func command(_ opcode: UInt16) -> [UInt8] {
    [UInt8(opcode & 0xFF), UInt8(opcode >> 8)]
  }

  public enum Message: Equatable, Sendable {
    /// Command_Response: the opcode it answers and its status.
    case response(to: UInt16, status: UInt16)
    case soundCompleted
    /// Any other opcode (an information answer) with its operands.
    case data(opcode: UInt16, payload: [UInt8])
  }

  /// nil when shorter than an opcode (or a response without its operands).
  public static func parse(_ bytes: [UInt8]) -> Message? {
    bytes.withUnsafeBytes { raw in
      var r = ByteReader(raw)
      guard let op = r.u16le() else { return nil }
      switch op {
      case commandResponse:
        guard let to = r.u16le(), let status = r.u16le() else { return nil }
        return .response(to: to, status: status)
      case soundCompleted: return .soundCompleted
      default: return .data(opcode: op, payload: Array(r.rest()))
      }
    }
  }

  public static func statusName(_ status: UInt16) -> String {
    switch status {
    case 0x0000: "Success"
    case 0x0001: "Invalid_state"
    case 0x0002: "Invalid_configuration"
    case 0x0003: "Invalid_length"
    case 0x0004: "Invalid_param"
    case 0xFFFF: "Invalid_command"
    default: "status 0x" + tagHex(command(status).reversed())
    }
  }

  /// How an information answer's operands read.
  public enum Format: Sendable {
    case hex, text, byte
    /// 0 full, 1 medium, 2 low, 3 critically low.
    case battery
  }

  /// What identify asks, in order: opcode, its answer's opcode, name, format.
  public static let queries: [(opcode: UInt16, answer: UInt16, name: String, format: Format)] = [
    (0x0003, 0x0803, "product data", .hex),
    (0x0004, 0x0804, "manufacturer", .text),
    (0x0005, 0x0805, "model", .text),
    (0x0006, 0x0806, "category", .byte),
    (0x000A, 0x080A, "firmware", .hex),
    (0x000C, 0x080C, "battery", .battery),
    (getIdentifier, identifierResponse, "identifier", .hex),
  ]

  /// Operands as a person reads them; text is cut at 64 bytes and at a NUL.
  public static func show(_ payload: [UInt8], _ format: Format) -> String {
    switch format {
    case .hex: return tagHex(payload)
    case .byte: return payload.first.map { String($0) } ?? "?"
    case .battery:
      let names = ["full", "medium", "low", "critically low"]
      guard let b = payload.first else { return "?" }
      return b < 4 ? names[Int(b)] : "level \(b)"
    case .text:
      let cut = payload.prefix(64).prefix { $0 != 0 }
      let text = String(decoding: cut, as: UTF8.self)
      return String(
        text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.map(Character.init))
    }
  }
}
