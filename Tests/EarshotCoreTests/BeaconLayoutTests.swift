import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotCore

/// The beacon layout table and the classifier, on the Eddystone and
/// AltBeacon vectors other decoders test with. The bytes are facts copied
/// from those tests as literals (each names its source); the ones that are
/// also in ../shared/data/ble/vectors are checked against that copy too.
final class BeaconLayoutTests: XCTestCase {
  let classifier = BeaconClassifier.standard

  func frames(_ h: String, _ c: BeaconClassifier = .standard) -> [BeaconFrame] {
    hex(h).withUnsafeBytes { c.frames(in: $0) }
  }

  /// The frames of every report in an H4 HCI event (the real path: the
  /// event decoder hands each report's data to the classifier).
  func framesOfEvent(_ h: String) -> [BeaconFrame] {
    var found: [BeaconFrame] = []
    var decoder = AdvertisingEventDecoder()
    let outcome = hex(h).withUnsafeBytes { raw in
      decoder.decode(h4: raw) { found += classifier.frames(in: $0.data) }
    }
    guard case .reports = outcome else {
      XCTFail("not an advertising event: \(h)")
      return []
    }
    return found
  }

  func only(_ f: [BeaconFrame], file: StaticString = #filePath, line: UInt = #line) -> BeaconFrame?
  {
    XCTAssertEqual(f.count, 1, "frames: \(f)", file: file, line: line)
    return f.count == 1 ? f[0] : nil
  }

  func uid(_ f: BeaconFrame?) -> EddystoneUID? {
    if case .eddystoneUID(let u) = f { return u }
    return nil
  }

  func url(_ f: BeaconFrame?) -> EddystoneURL? {
    if case .eddystoneURL(let u) = f { return u }
    return nil
  }

  func tlm(_ f: BeaconFrame?) -> EddystoneTLM? {
    if case .eddystoneTLM(let t) = f { return t }
    return nil
  }

  func alt(_ f: BeaconFrame?) -> AltBeacon? {
    if case .altBeacon(let a) = f { return a }
    return nil
  }

  // MARK: - beacontools (citruz/beacontools tests/test_parser.py)

  static let beacontoolsUID = "0201060303aafe1716aafe00e3123456789012346789010000000000010000"
  static let beacontoolsURL = "0303aafe1316aafe10f8036769746875620063697472757a"
  static let beacontoolsTLM = "0201060303aafe1116aafe20000b1813000000146700002ac4e4"
  static let beacontoolsETLM = "0201060303aafe1116aafe2001414141414141414141414141deadbeff"
  static let beacontoolsEID = "0201060303aafe0d16aafe30e34549445f74657374"
  static let beacontoolsBad = [
    "30303030303030", "", "0201060303", "12346789010000000000010000",
    "0201060303aafe1716aafe01e3123456789012346789010000000000010000",
  ]

  func testBeacontoolsUIDURLAndEID() throws {
    let u = try XCTUnwrap(uid(only(frames(Self.beacontoolsUID))))
    XCTAssertEqual(u.namespace.description, "12345678901234678901")
    XCTAssertEqual(u.instance.description, "000000000001")
    XCTAssertEqual(u.txPowerAt0m, -29)

    let l = try XCTUnwrap(url(only(frames(Self.beacontoolsURL))))
    XCTAssertEqual(l.url, "https://github.com/citruz")
    XCTAssertEqual(l.txPowerAt0m, -8)

    guard case .eddystoneEID(let e) = only(frames(Self.beacontoolsEID)) else {
      return XCTFail("not an EID")
    }
    XCTAssertEqual(e.txPowerAt0m, -29)
    XCTAssertEqual(e.eid.bytes, Array("EID_test".utf8))
  }

  /// beacontools' TLM bytes end with one byte past the service data (the
  /// RSSI its HCI packets carry); a strict walk finds a structure claiming
  /// 0xE4 bytes and trusts nothing. Without that byte the frame decodes to
  /// what beacontools asserts (its `seconds_since_boot` is the raw 0.1 s
  /// count).
  func testBeacontoolsTLM() throws {
    XCTAssertEqual(frames(Self.beacontoolsTLM), [], "trailing byte: malformed")
    let t = try XCTUnwrap(tlm(only(frames(String(Self.beacontoolsTLM.dropLast(2))))))
    XCTAssertEqual(t.batteryMillivolts, 2840)
    XCTAssertEqual(t.temperature, 19)
    XCTAssertEqual(t.temperatureRaw, 0x1300)
    XCTAssertEqual(t.advertisingCount, 5223)
    XCTAssertEqual(t.uptimeTenths, 10948)
    XCTAssertEqual(t.uptimeSeconds, 1094.8, accuracy: 1e-9)
  }

  /// beacontools' encrypted TLM has service-data length 0x11 (16 bytes),
  /// but the frame is 18 bytes plus the UUID: its salt (DE AD) and MIC
  /// (BE FF) lie outside the structure, so the bytes as given are malformed.
  /// With the length corrected to 0x15 the frame decodes: the encrypted data
  /// is twelve 0x41 bytes ('AAAAAAAAAAAA'). beacontools reads salt and MIC
  /// little-endian (44510 = 0xADDE, 65470 = 0xFFBE); the Eddystone spec says
  /// all multi-byte values are big-endian, so Earshot has 0xDEAD and 0xBEFF.
  func testBeacontoolsEncryptedTLM() throws {
    XCTAssertEqual(frames(Self.beacontoolsETLM), [], "salt and MIC outside the AD: malformed")
    let fixed = Self.beacontoolsETLM.replacingOccurrences(of: "aafe1116", with: "aafe1516")
    guard case .eddystoneEncryptedTLM(let e) = only(frames(fixed)) else {
      return XCTFail("not an encrypted TLM")
    }
    XCTAssertEqual(e.encrypted.bytes, Array("AAAAAAAAAAAA".utf8))
    XCTAssertEqual(e.salt, 0xDEAD)
    XCTAssertEqual(e.salt.byteSwapped, 44510)
    XCTAssertEqual(e.mic.byteSwapped, 65470)
    XCTAssertFalse(BeaconFrame.eddystoneEncryptedTLM(e).hasStableIdentity)
  }

  /// test_bad_packets: none gives a frame ([4] is a well-formed Eddystone
  /// structure with the unknown frame type 0x01).
  func testBeacontoolsBadPackets() {
    for (i, h) in Self.beacontoolsBad.enumerated() {
      XCTAssertEqual(frames(h), [], "test_bad_packets[\(i)]")
    }
    XCTAssertTrue(hex(Self.beacontoolsBad[4]).withUnsafeBytes { ADWalker.isWellFormed($0) })
  }

  // MARK: - aioblescan (frawau/aioblescan tests/test_eddystone.py), H4 events

  static let aioblescanURL =
    "043e2902010301dc29659055f11d0201060303aafe1516aafe10f6036d616b65636f6465002361626f7574b5"
  static let aioblescanUID =
    "043e2902010301dc29659055f11d0201060303aafe1516aafe00f600000000000000000063000000000058b6"

  func testAioblescanEddystone() throws {
    let l = try XCTUnwrap(url(only(framesOfEvent(Self.aioblescanURL))))
    XCTAssertEqual(l.url, "https://makecode.com/#about")
    XCTAssertEqual(l.txPowerAt0m, -10)

    // No reserved bytes: the 18-byte form of the UID frame.
    let u = try XCTUnwrap(uid(only(framesOfEvent(Self.aioblescanUID))))
    XCTAssertEqual(u.namespace.bytes, [UInt8](repeating: 0, count: 9) + [0x63])
    XCTAssertEqual(u.instance.bytes, [UInt8](repeating: 0, count: 5) + [0x58])
    XCTAssertEqual(u.txPowerAt0m, -10)
  }

  // MARK: - py-decode-beacon (xorbit/py-decode-beacon decode_test.py), H4 events

  static let bz3 =
    "043e5002020300ecf800eef30c1e0201041aff4c0002158deefbb9f7384297804096668bb4428113880f4e"
    + "c1bb0300ecf800eef30d1c1bff4401beac8deefbb9f7384297804096668bb4428113880f4fc155b1"
  static let bz4 =
    "043e29020100006d5f57c517011d0201060303aafe1516aafe00de5dc33487f02e477d40580117c5575f6db8"
  static let bz5 =
    "043e27020100006d5f57c517011b0201060303aafe1316aafe10de02746f6b2e74632f576a2f424356b8"
  static let bz6 =
    "043e25020100006d5f57c51701190201060303aafe1116aafe20000c3c200000000fbc000049bab7"

  /// Upstream prints these decodes and asserts only what they are (an
  /// iBeacon and an AltBeacon; Eddystone UID, URL, TLM, none an iBeacon);
  /// the values are read off the bytes per the specs.
  func testPyDecodeBeacon() throws {
    let two = framesOfEvent(Self.bz3)
    XCTAssertEqual(two.count, 2)
    guard case .iBeacon(let i) = two.first else { return XCTFail("bz3: first is not an iBeacon") }
    XCTAssertEqual(i.id.description, "8DEEFBB9-F738-4297-8040-96668BB44281:5000:3918")
    let a = try XCTUnwrap(alt(two.last))
    XCTAssertEqual(a.companyID, 0x0144)
    XCTAssertEqual(a.id1, i.uuid)
    XCTAssertEqual([a.id2, a.id3], [5000, 3919])
    XCTAssertEqual(a.referenceRSSI, -63)
    XCTAssertEqual(a.mfgReserved, 0x55)

    let u = try XCTUnwrap(uid(only(framesOfEvent(Self.bz4))))
    XCTAssertEqual(u.namespace.description, "5dc33487f02e477d4058")
    XCTAssertEqual(u.instance.description, "0117c5575f6d")
    XCTAssertEqual(u.txPowerAt0m, -34)

    let l = try XCTUnwrap(url(only(framesOfEvent(Self.bz5))))
    XCTAssertEqual(l.url, "http://tok.tc/Wj/BCV")
    XCTAssertEqual(l.txPowerAt0m, -34)

    let t = try XCTUnwrap(tlm(only(framesOfEvent(Self.bz6))))
    XCTAssertEqual(t.batteryMillivolts, 3132)
    XCTAssertEqual(t.temperature, 32)
    XCTAssertEqual(t.advertisingCount, 4028)
    XCTAssertEqual(t.uptimeTenths, 18874)
  }

  /// The literals above are the shared vectors' bytes (where the shared
  /// copy exists; CI=true makes a missing file a failure).
  func testLiteralsAreTheSharedVectors() throws {
    let expected: [String: [String: String]] = [
      "beacontools_test_vectors.json": [
        "test_parser.py::test_eddystone_uid": Self.beacontoolsUID,
        "test_parser.py::test_eddystone_url": Self.beacontoolsURL,
        "test_parser.py::test_eddystone_tlm": Self.beacontoolsTLM,
        "test_parser.py::test_eddystone_tlm_enc": Self.beacontoolsETLM,
        "test_parser.py::test_eddystone_eid": Self.beacontoolsEID,
        "test_parser.py::test_bad_packets[4]": Self.beacontoolsBad[4],
      ],
      "aioblescan_test_vectors.json": [
        "test_eddystone.py::test_eddystone_url": Self.aioblescanURL,
        "test_eddystone.py::test_eddystone_uid": Self.aioblescanUID,
      ],
      "py-decode-beacon_vectors.json": [
        "decode_test.py::bz3": Self.bz3, "decode_test.py::bz4": Self.bz4,
        "decode_test.py::bz5": Self.bz5, "decode_test.py::bz6": Self.bz6,
      ],
    ]
    let dir = try SharedData.url("ble/vectors")
    for (file, names) in expected {
      let json = try JSONSerialization.jsonObject(
        with: Data(contentsOf: dir.appendingPathComponent(file)))
      let vectors = try XCTUnwrap((json as? [String: Any])?["vectors"] as? [[String: Any]], file)
      for (name, literal) in names {
        let v = vectors.first { $0["name"] as? String == name }
        XCTAssertEqual(v?["hex"] as? String, literal, "\(file): \(name)")
      }
    }
  }

  // MARK: - AltBeacon (AltBeacon/android-beacon-library tests)

  /// BeaconParserTest / AltBeaconParserTest bytes, with the AD length 0x1B.
  static let altBeacon = "02011a1bff1801beac2f234454cf6d4a0fadf2f4911ba9ffa600010002c509"

  func testAltBeaconFromTheAndroidLibrary() throws {
    let a = try XCTUnwrap(alt(only(frames(Self.altBeacon))))
    XCTAssertEqual(a.companyID, 0x0118)
    XCTAssertEqual(a.id1.description.lowercased(), "2f234454-cf6d-4a0f-adf2-f4911ba9ffa6")
    XCTAssertEqual(a.id2, 1)
    XCTAssertEqual(a.id3, 2)
    XCTAssertEqual(a.referenceRSSI, -59)
    XCTAssertEqual(a.mfgReserved, 9)
    XCTAssertTrue(BeaconFrame.altBeacon(a).hasStableIdentity)
  }

  /// The library's testRecognizeBeacon bytes have AD length 0x1A, one
  /// short: the structure ends at C5, and the 09 left over claims 9 more
  /// bytes that are not there. The library zero-pads and reads on (it asserts
  /// mfgReserved 9); a strict walk calls the data malformed and trusts no
  /// frame in it. testParsesBeaconMissingDataField's bytes (0x1A, then zero
  /// padding) walk cleanly but hold a 25-byte frame, one short of the
  /// 26-byte layout: refused, not decoded with a made-up data byte.
  /// testParseWrongFormatReturnsNothing (code ffff) is refused upstream too.
  func testAltBeaconShortOrWrongIsRefused() {
    XCTAssertEqual(frames("02011a1aff1801beac2f234454cf6d4a0fadf2f4911ba9ffa600010002c509"), [])
    XCTAssertEqual(frames("02011a1aff1801beac2f234454cf6d4a0fadf2f4911ba9ffa600010002c5000000"), [])
    XCTAssertEqual(frames("02011a1aff1801ffff2f234454cf6d4a0fadf2f4911ba9ffa600010002c509"), [])
    // One byte too many (AD length 0x1C) is no AltBeacon either.
    XCTAssertEqual(frames("02011a1cff1801beac2f234454cf6d4a0fadf2f4911ba9ffa600010002c50900"), [])
  }

  // MARK: - iBeacon through the classifier

  /// Every shared vector: the classifier's iBeacons are exactly what
  /// TrackedBeacon.decode finds, report by report.
  func testIBeaconVectorsDecodeAsIBeaconThroughTheClassifier() throws {
    let dir = try SharedData.url("ble/vectors")
    let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter {
      $0.hasSuffix(".json")
    }
    var beacons = 0
    func compare(_ data: UnsafeRawBufferPointer, _ name: String) {
      let old = TrackedBeacon.iBeacon(advertisingData: data)
      let new = classifier.frames(in: data).compactMap { f -> TrackedBeacon? in
        if case .iBeacon(let b) = f { return b }
        return nil
      }
      XCTAssertEqual(new.first, old, name)
      if old != nil { beacons += 1 }
    }
    for file in files {
      let json = try JSONSerialization.jsonObject(
        with: Data(contentsOf: dir.appendingPathComponent(file)))
      let vectors = try XCTUnwrap((json as? [String: Any])?["vectors"] as? [[String: Any]], file)
      for v in vectors {
        let name = "\(file): \(v["name"] as? String ?? "?")"
        let bytes = try XCTUnwrap((v["hex"] as? String).flatMap(EarshotTestHex.parse), name)
        let kind = v["input_kind"] as? String ?? "hci_event_h4"
        bytes.withUnsafeBytes { raw in
          if kind.hasPrefix("ad_data") {
            compare(raw, name)
          } else if kind.hasPrefix("mfg_data") || kind.hasPrefix("company_id") {
            let old = TrackedBeacon.iBeacon(manufacturerData: raw)
            let new = classifier.frame(type: ADType.manufacturerData, value: raw)
            XCTAssertEqual(new, old.map { .iBeacon($0) }, name)
            if old != nil { beacons += 1 }
          } else if kind.hasPrefix("hci_event_h4") || kind.hasPrefix("hci_event_no_h4") {
            var decoder = AdvertisingEventDecoder()
            let body: (AdvertisingReport) -> Void = { compare($0.data, name) }
            _ =
              kind.hasPrefix("hci_event_h4")
              ? decoder.decode(h4: raw, body) : decoder.decode(event: raw, body)
          }
        }
      }
    }
    XCTAssertGreaterThan(beacons, 50, "iBeacon vectors compared")
  }

  func testIBeaconOfIBeaconTestsAndItsNeighbours() throws {
    let f = only(frames("0201061aff4c0002154142434445464748494041424344454600010002f8"))
    guard case .iBeacon(let b) = f else { return XCTFail("not an iBeacon") }
    XCTAssertEqual(b.id.description, "41424344-4546-4748-4940-414243444546:1:2")
    XCTAssertEqual(b.measuredPower, -8)
    // Other vendors' data holding 4C 00 02 15, and a 26-byte Apple frame.
    XCTAssertEqual(frames("1eff88ec4c0002154142434445464748494041424344454600010002f8aabb"), [])
    XCTAssertEqual(frames("1bff4c0002154142434445464748494041424344454600010002f800"), [])
  }

  // MARK: - Malformed and truncated frames

  func testMalformedAndTruncatedFramesAreRefused() {
    let uidBody = "aafe00e31234567890123467890100000000000100"  // 21 bytes
    let cases: [(String, String)] = [
      ("1416aafe00e3123456789012346789010000000000", "UID one byte short (19)"),
      ("1616" + uidBody, "UID with one reserved byte (21)"),
      ("1816" + uidBody + "0000", "UID longer than 22"),
      ("0c16aafe10f804676974687562", "URL scheme 0x04"),
      ("0b16aafe10f803676974680e", "URL code 0x0e (reserved)"),
      ("0b16aafe10f80367697468" + "20", "URL code 0x20 (space, reserved)"),
      ("0b16aafe10f80367697468" + "7f", "URL code 0x7f (reserved)"),
      ("0516aafe10f8", "URL without its scheme"),
      ("1816aafe10f803" + String(repeating: "61", count: 18), "URL of 18 bytes"),
      ("1016aafe20000b1813000000146700002a", "TLM one byte short"),
      ("1216aafe20000b1813000000146700002ac400", "TLM one byte long"),
      ("1116aafe20020b1813000000146700002ac4", "TLM version 2"),
      ("0c16aafe30e34549445f746573", "EID one byte short"),
      ("0d16abfe30e34549445f74657374", "service UUID 0xFEAB"),
      ("0216aa", "service data shorter than a UUID"),
      ("03ff1801", "manufacturer data of two bytes"),
      ("0216aafe", "malformed: length past the end"),
      ("0201060d16aafe30e34549445f74657374ff", "a good EID inside malformed data"),
    ]
    for (h, why) in cases { XCTAssertEqual(frames(h), [], why) }
    // The URL at its limits: no encoded bytes, and all 17.
    XCTAssertEqual(url(only(frames("0616aafe10f802")))?.url, "http://")
    XCTAssertEqual(
      url(only(frames("1716aafe10f801" + String(repeating: "61", count: 16) + "0d")))?.url,
      "https://www." + String(repeating: "a", count: 16) + ".gov")
  }

  // MARK: - User layouts

  /// A made-up format: company 0x1234, code C0 DE, a 6-byte id, a 2-byte
  /// little-endian id, power with a -3 dB correction, a little-endian data
  /// field and a one-byte one.
  func testMadeUpLayoutDecodesAMadeUpFormat() throws {
    let layout = try BeaconLayout(
      parsing: "m:2-3=c0de,i:4-9,i:10-11l,p:12-12:-3,d:13-14l,d:15-15", name: "Acme tag")
    XCTAssertEqual(layout.carrier, .manufacturerData)
    XCTAssertEqual(layout.length, .within(16...254))
    let c = BeaconClassifier(custom: [layout])
    let f = only(frames("020106 11ff 3412c0de 010203040506 3412 c5 cdab 07", c))
    guard case .custom(let b) = f else { return XCTFail("not the custom layout") }
    XCTAssertEqual(b.layoutName, "Acme tag")
    XCTAssertEqual(b.companyID, 0x1234)
    XCTAssertEqual(b.identifiers, [[1, 2, 3, 4, 5, 6], [0x12, 0x34]])
    XCTAssertEqual(b.power, -59 - 3)
    XCTAssertEqual(b.data, [[0xAB, 0xCD], [7]])
    XCTAssertTrue(f?.hasStableIdentity ?? false)
    XCTAssertNil(ESPresenseID.id(for: f!))
    // Bytes past the layout are ignored (as the library ignores them); one
    // byte short is refused; the standard classifier knows nothing of it.
    XCTAssertEqual(frames("12ff 3412c0de 010203040506 3412 c5 cdab 07 ee", c).count, 1)
    XCTAssertEqual(frames("10ff 3412c0de 010203040506 3412 c5 cdab", c), [])
    XCTAssertEqual(frames("11ff 3412c0de 010203040506 3412 c5 cdab 07"), [])
  }

  /// Service-data layouts count offsets from the UUID's first byte, as the
  /// library does; the UUID is written big-endian and sent little-endian.
  func testServiceDataLayoutAndVariableIdentifier() throws {
    let layout = try BeaconLayout(parsing: " s:0-1=fd6f , m:2-2=01 , p:3-3 , i:4-9v ", name: "v")
    XCTAssertEqual(layout.carrier, .serviceData16(0xFD6F))
    let c = BeaconClassifier(custom: [layout])
    guard case .custom(let b) = only(frames("07166ffd01c5aabb", c)) else {
      return XCTFail("not the custom layout")
    }
    XCTAssertNil(b.companyID)
    XCTAssertEqual(b.identifiers, [[0xAA, 0xBB]])
    XCTAssertEqual(b.power, -59)
    XCTAssertEqual(frames("05166ffd01c5", c), [], "a v identifier needs one byte")
    XCTAssertEqual(frames("07166ffe01c5aabb", c), [], "other UUID")

    // An extra (telemetry) layout needs no identifier or power.
    let x = try BeaconLayout(parsing: "x,s:0-1=fd6f,m:2-2=02,d:3-4", name: "t")
    guard case .custom(let t) = only(frames("06166ffd020102", BeaconClassifier(custom: [x]))) else {
      return XCTFail("not the extra layout")
    }
    XCTAssertTrue(t.isExtraFrame)
    XCTAssertEqual(t.data, [[1, 2]])
    XCTAssertFalse(BeaconFrame.custom(t).hasStableIdentity)
  }

  /// A user row that would match an iBeacon comes after the built-ins: an
  /// iBeacon still decodes as one.
  func testUserLayoutsCannotTakeOverBuiltIns() throws {
    let greedy = try BeaconLayout(parsing: "m:2-3=0215,i:4-19,p:24-24", name: "greedy")
    let f = frames(
      "1aff4c0002154142434445464748494041424344454600010002f8", BeaconClassifier(custom: [greedy]))
    guard case .iBeacon = only(f) else { return XCTFail("iBeacon taken over") }
  }

  /// The built-in rows are the library's own layouts where it has them.
  func testBuiltInRows() throws {
    let names = BeaconLayout.builtIn.map(\.name)
    XCTAssertEqual(
      names,
      [
        "iBeacon", "AltBeacon", "Eddystone-UID", "Eddystone-URL", "Eddystone-TLM",
        "Eddystone-eTLM", "Eddystone-EID",
      ])
    let altRow = try XCTUnwrap(BeaconLayout.builtIn(.altBeacon))
    let parsed = try BeaconLayout(parsing: "m:2-3=beac,i:4-19,i:20-21,i:22-23,p:24-24,d:25-25")
    XCTAssertEqual(altRow.identifiers, parsed.identifiers)
    XCTAssertEqual(altRow.matches, [BeaconLayout.Match(offset: 2, bytes: [0xBE, 0xAC])])
    let uidRow = try XCTUnwrap(BeaconLayout.builtIn(.eddystoneUID))
    XCTAssertEqual(uidRow.carrier, .serviceData16(0xFEAA))
    XCTAssertEqual(uidRow.powerCorrection, -41)
    XCTAssertEqual(uidRow.layoutString, "s:0-1=feaa,m:2-2=00,p:3-3:-41,i:4-13,i:14-19")
    XCTAssertNil(BeaconLayout.builtIn(.custom))
  }

  func testLayoutStringErrorsNameTheTermAndWhy() {
    let cases: [(String, String, String)] = [
      ("", "", "empty term"),
      ("m:2-3=beac,,i:4-19,p:24-24", "", "empty term"),
      ("m:2-3=beac,i:4-19,p:24-24,q:1-2", "q:1-2", "unknown term 'q'"),
      ("m:2-3=beac,i:4-19,p:24-24,z", "z", "expected m:"),
      ("m:3-2=beac,i:4-19,p:24-24", "m:3-2=beac", "ends before it starts"),
      ("m:2-3=bea,i:4-19,p:24-24", "m:2-3=bea", "not hex bytes"),
      ("m:2-3=be ac,i:4-19,p:24-24", "m:2-3=be ac", "not hex bytes"),
      ("m:2-3=beacff,i:4-19,p:24-24", "m:2-3=beacff", "3 bytes of hex for a range of 2"),
      ("m:2-3,i:4-19,p:24-24", "m:2-3", "'='"),
      ("m:2=be,i:4-19,p:24-24", "m:2=be", "START-END"),
      ("m:2-3=beac,i:4-300,p:24-24", "i:4-300", "below 254"),
      ("m:2-3=beac,i:4-19x,p:24-24", "i:4-19x", "unknown suffix 'x'"),
      ("m:2-3=beac,i:4-19,d:5-6v,p:24-24", "d:5-6v", "unknown suffix 'v'"),
      ("m:2-3=beac,i:4-19,p:24-25", "p:24-25", "one signed byte"),
      ("m:2-3=beac,i:4-19,p:24-24:abc", "p:24-24:abc", "correction"),
      ("m:2-3=beac,i:4-19,p:24-24,p:25-25", "p:25-25", "a second power field"),
      ("s:0-3=0000feaa,m:4-4=00,i:5-6,p:7-7", "s:0-3=0000feaa", "16-bit service UUID"),
      ("s:0-1=feaa,s:0-1=feab,m:2-2=00,i:4-5,p:3-3", "s:0-1=feab", "a second service UUID"),
      ("s:0-1=feaa,m:1-2=0000,i:4-5,p:3-3", "m:1-2=0000", "service UUID"),
      ("s:0-1=feaa,m:2-2=10,p:3-3,i:4-20v,d:21-21", "i:4-20v", "must be the last field"),
      ("i:4-19,p:24-24", "", "no 'm' term"),
      ("m:2-3=beac,p:24-24", "", "no 'i' term"),
      ("m:2-3=beac,i:4-19", "", "no 'p' term"),
      ("x,x,m:2-3=beac", "x", "twice"),
    ]
    for (text, term, why) in cases {
      do {
        _ = try BeaconLayout(parsing: text)
        XCTFail("accepted: \(text)")
      } catch let e as BeaconLayoutError {
        XCTAssertEqual(e.term, term, text)
        XCTAssertTrue(e.reason.contains(why), "\(text): \(e.reason)")
        if !term.isEmpty { XCTAssertTrue(e.description.contains("'\(term)'"), e.description) }
      } catch {
        XCTFail("\(text): \(error)")
      }
    }
  }

  // MARK: - ESPresense ids

  func testESPresenseIDs() throws {
    let i = try XCTUnwrap(
      only(frames("0201061aff4c0002154142434445464748494041424344454600010002f8")))
    XCTAssertEqual(ESPresenseID.id(for: i), "iBeacon:41424344-4546-4748-4940-414243444546-1-2")

    // The firmware matches AltBeacon on the company id 0xBEAC, not on the
    // beacon code: the Android library's beacon (company 0x0118) has none.
    let a = try XCTUnwrap(only(frames(Self.altBeacon)))
    XCTAssertNil(ESPresenseID.id(for: a))
    let beacCompany = try XCTUnwrap(
      only(frames("1bffacbebeac2f234454cf6d4a0fadf2f4911ba9ffa600010002c509")))
    XCTAssertEqual(
      ESPresenseID.id(for: beacCompany), "altBeacon:2f234454-cf6d-4a0f-adf2-f4911ba9ffa6-1-2")

    // The namespace's fifth byte (0x90) printed twice.
    let u = try XCTUnwrap(only(frames(Self.beacontoolsUID)))
    XCTAssertEqual(ESPresenseID.id(for: u), "eddy:1234567890901234678901-000000000001")
    let u2 = try XCTUnwrap(only(framesOfEvent(Self.bz4)))
    XCTAssertEqual(ESPresenseID.id(for: u2), "eddy:5dc33487f0f02e477d4058-0117c5575f6d")

    for h in [Self.beacontoolsURL, Self.beacontoolsEID, String(Self.beacontoolsTLM.dropLast(2))] {
      XCTAssertNil(ESPresenseID.id(for: try XCTUnwrap(only(frames(h)))), h)
    }
  }

  func testBeaconBytes() throws {
    let b = try XCTUnwrap(BeaconBytes(hex: "0102030405060708090a0b0c0d0e0f10"))
    XCTAssertEqual(b.count, 16)
    XCTAssertEqual(b[0], 1)
    XCTAssertEqual(b[15], 0x10)
    XCTAssertEqual(b.description, "0102030405060708090a0b0c0d0e0f10")
    XCTAssertEqual(BeaconBytes(hex: "0001")?.bytes, [0, 1])
    XCTAssertNotEqual(BeaconBytes(hex: "00"), BeaconBytes(hex: "0000"))
    XCTAssertNil(BeaconBytes(hex: ""))
    XCTAssertNil(BeaconBytes(hex: String(repeating: "00", count: 17)))
  }
}
