import EarshotTestSupport
import XCTest

@testable import EarshotCore

final class HCICommandTests: XCTestCase {
  func testLegacyScanCommandsEncodeAsTheSpecLaysThemOut() {
    let params = HCICommand.leSetScanParameters(type: .active, timing: .continuous)
    XCTAssertEqual(params.packet, hex("01 0B 20 07 01 60 00 60 00 00 00"))
    XCTAssertEqual(HCICommand.leSetScanEnable(true).packet, hex("01 0C 20 02 01 00"))
    XCTAssertEqual(
      HCICommand.leSetScanEnable(false, filterDuplicates: true).packet, hex("01 0C 20 02 00 01"))
  }

  func testExtendedScanCommandsEncodeOnePHY() {
    let params = HCICommand.leSetExtendedScanParameters(type: .passive, timing: .specDefault)
    XCTAssertEqual(params.packet, hex("01 41 20 08 00 00 01 00 10 00 10 00"))
    XCTAssertEqual(
      HCICommand.leSetExtendedScanEnable(true).packet, hex("01 42 20 06 01 00 00 00 00 00"))
  }

  func testOpcodeSplitsIntoOGFAndOCF() {
    XCTAssertEqual(HCIOpcode.leSetExtendedScanEnable.rawValue, 0x2042)
    XCTAssertEqual(HCIOpcode.readLocalSupportedCommands.ogf, 0x04)
    XCTAssertEqual(HCIOpcode.readLocalSupportedCommands.ocf, 0x0002)
  }

  func testCommandPacketParsesBackAndKnowsScanEnable() {
    let packet = HCICommand.leSetExtendedScanEnable(false).packet
    let parsed = packet.withUnsafeBytes {
      HCICommand(packet: UnsafeRawBufferPointer(rebasing: $0[1...]))
    }
    XCTAssertEqual(parsed, .leSetExtendedScanEnable(false))
    XCTAssertEqual(parsed?.scanEnableValue, false)
    XCTAssertNil(HCICommand.leSetScanParameters(type: .active, timing: .continuous).scanEnableValue)
    let bad = hex("0C 20 05 01")
    XCTAssertNil(bad.withUnsafeBytes { HCICommand(packet: $0) })
  }

  func testCommandCompleteAndStatusDecode() {
    let complete = hex("0E 04 01 0C 20 0C")
    let r = complete.withUnsafeBytes { CommandResponse(event: $0) }
    XCTAssertEqual(r?.opcode, .leSetScanEnable)
    XCTAssertEqual(r?.status, .commandDisallowed)
    let status = hex("0F 04 01 01 41 20")
    let s = status.withUnsafeBytes { CommandResponse(event: $0) }
    XCTAssertEqual(s, .status(opcode: .leSetExtendedScanParameters, status: .unknownCommand))
    // Wrong length, another event, and a credit-only Command Complete (opcode 0).
    for bytes in [hex("0E 05 01 0C 20 00"), hex("3E 01 02"), hex("0E 03 01 00 00")] {
      XCTAssertNil(bytes.withUnsafeBytes { CommandResponse(event: $0) })
    }
  }

  func testSupportedCommandsChooseTheCommandSet() {
    var octets = [UInt8](repeating: 0, count: 64)
    octets[26] = 0x0C  // legacy scan parameters + enable
    let legacy = SupportedCommands(octets: octets)
    XCTAssertEqual(ScanCommandSet.choose(legacy), .legacy)
    octets[37] = 0x20  // only Set Extended Scan Parameters: not enough
    XCTAssertEqual(ScanCommandSet.choose(SupportedCommands(octets: octets)), .legacy)
    octets[36] = 0xFE
    octets[37] = 0xFF  // what btvirt -l2 reports
    let ext = SupportedCommands(octets: octets)
    XCTAssertTrue(ext.hasExtendedScanning)
    XCTAssertEqual(ScanCommandSet.choose(ext), .extended)
    XCTAssertEqual(ScanCommandSet.choose(ext, forced: .legacy), .legacy)
    XCTAssertNil(ScanCommandSet.choose(SupportedCommands(octets: [UInt8](repeating: 0, count: 64))))
  }

  func testSupportedCommandsFromReturnParameters() {
    var p = [UInt8](repeating: 0, count: 65)
    p[1 + 37] = 0x60
    XCTAssertEqual(SupportedCommands(returnParameters: p)?.hasExtendedScanning, true)
    p[0] = 0x01
    XCTAssertNil(SupportedCommands(returnParameters: p))
    XCTAssertNil(SupportedCommands(returnParameters: [0, 1, 2]))
  }

  func testRestoreDisablesThenResetsParameters() {
    XCTAssertEqual(
      ScanCommandSet.legacy.restore,
      [.leSetScanEnable(false), .leSetScanParameters(type: .passive, timing: .specDefault)])
    XCTAssertEqual(
      ScanCommandSet.extended.restore.map(\.opcode),
      [.leSetExtendedScanEnable, .leSetExtendedScanParameters])
  }

  func testHCIErrorNames() {
    XCTAssertEqual(HCIStatus.commandDisallowed.description, "Command Disallowed (0x0C)")
    XCTAssertEqual(HCIStatus(rawValue: 0x12).name, "Invalid HCI Command Parameters")
    XCTAssertEqual(HCIStatus(rawValue: 0x3C).name, "Advertising Timeout")
    XCTAssertEqual(HCIStatus(rawValue: 0x48).name, "Insufficient Channels")
    XCTAssertEqual(HCIStatus.names.count, 0x49)
    XCTAssertEqual(HCIStatus(rawValue: 0x90).name, "Unknown HCI Error")
  }
}
