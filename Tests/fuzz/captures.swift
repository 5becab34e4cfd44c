// libFuzzer target: btsnoop, pcap and pcapng readers and the replay path.
// Properties checked on every input:
// - read from memory and streamed in pieces of changing size, a capture
//   gives the same reports, the same ending and the same error;
// - the streaming reader's buffer never holds more than its fixed size, and
//   a pcapng section never describes more than `maxInterfaces`;
// - the records read, re-encoded in a container and byte order that can
//   hold them (each input picks one), give the same reports again.

@testable import EarshotCore

/// What a report says, comparable, with its timestamp.
struct Seen: Equatable {
  var micros: Int64
  var report: Fields

  struct Fields: Equatable {
    var pdu: String
    var address: UInt64
    var addressType: UInt8
    var direct: UInt64?
    var rssi: Int8?
    var txPower: Int8?
    var phys: UInt16
    var sid: UInt8?
    var status: UInt8
    var data: [UInt8]
  }

  init(_ t: Int64, _ r: AdvertisingReport) {
    micros = t
    report = Fields(
      pdu: r.pdu.name, address: r.address.raw, addressType: r.addressType.rawValue,
      direct: r.directAddress?.raw, rssi: r.rssi, txPower: r.txPower,
      phys: UInt16(r.primaryPHY) << 8 | UInt16(r.secondaryPHY), sid: r.sid,
      status: r.dataStatus.rawValue, data: Array(r.data))
  }
}

/// A record copied out of the reader's buffer.
enum Owned {
  case event([UInt8])
  case command([UInt8])
  case sniffed([UInt8], Int8?, LinkLayerCRC)
}

func replay(_ reader: inout CaptureReader, merge: Bool = false) -> (
  seen: [Seen], truncated: Bool, error: CaptureError?
) {
  var seen: [Seen] = []
  var merger = ScanResponseMerger(capacity: 8)
  var replay = CaptureReplay()
  var error: CaptureError?
  do {
    try replay.run(&reader) { t, r in
      seen.append(Seen(t, r))
      if merge {
        merger.observe(r) { _ in }
        _ = TrackedBeacon.iBeacon(advertisingData: r.data)
      }
    }
  } catch let e as CaptureError {
    error = e
  } catch {
    preconditionFailure("a reader over memory threw \(error)")
  }
  return (seen, replay.truncated, error)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCaptures(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = UnsafeRawBufferPointer(start: data, count: size)

  // From memory, keeping copies of the records for re-encoding.
  guard var reader = try? CaptureReader(bytes) else {
    // Not a capture: streaming must say the same.
    var rest = bytes
    precondition(
      (try? CaptureReader(source: { buffer in
        let n = min(buffer.count, rest.count)
        buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: rest[..<n]))
        rest = UnsafeRawBufferPointer(rebasing: rest[n...])
        return n
      })) == nil)
    return 0
  }
  var records: [(Int64, Owned)] = []
  var copy = try! CaptureReader(bytes)  // a copy of `reader` would share its position
  while let r = copy.next() {
    switch r.packet {
    case .hciEvent(let e): records.append((r.timestamp, .event(Array(e))))
    case .hciCommand(let c): records.append((r.timestamp, .command(Array(c))))
    case .linkLayer(let p, let rssi, _, let crc):
      records.append((r.timestamp, .sniffed(Array(p), rssi, crc)))
    case .unreadableLinkLayer, .other: break
    }
  }
  let memory = replay(&reader, merge: true)
  precondition(reader.bufferCapacity == 0 && reader.bufferHighWater == 0)
  precondition(reader.interfaceCount <= CaptureReader.maxInterfaces)

  // Streamed in pieces of 1 to 97 bytes, changing with every read.
  var rest = bytes
  var piece = size % 97
  var streamed = try! CaptureReader(source: { buffer in
    piece = (piece * 31 + 7) % 97
    let n = min(buffer.count, rest.count, piece + 1)
    buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: rest[..<n]))
    rest = UnsafeRawBufferPointer(rebasing: rest[n...])
    return n
  })
  let stream = replay(&streamed)
  precondition(stream.seen == memory.seen, "streaming gives other reports")
  precondition(stream.truncated == memory.truncated && stream.error == memory.error)
  precondition(streamed.bufferCapacity == CaptureReader.streamBufferBytes)
  precondition(streamed.bufferHighWater <= CaptureReader.streamBufferBytes)
  precondition(streamed.interfaceCount <= CaptureReader.maxInterfaces)

  // Re-encoded in every container that holds these records.
  let hci = records.contains {
    if case .sniffed = $0.1 { false } else { true }
  }
  let sniffed = records.contains {
    if case .sniffed = $0.1 { true } else { false }
  }
  // One container per input, and HCI as link type 187 or 201: the input's
  // length picks them, so the fuzzer's mutations visit all of them at a
  // seventh of the cost.
  let h4: UInt32 = size / 7 % 2 == 0 ? 187 : 201
  for container in [CaptureContainer.allCases[size % CaptureContainer.allCases.count]] {
    let linkTypes: [UInt32]
    switch container {
    case .btsnoop: linkTypes = sniffed ? [] : [187]
    case .pcap: linkTypes = hci && sniffed ? [] : sniffed ? [256] : [h4]
    case .pcapng: linkTypes = [h4]
    }
    for linkType in linkTypes {
      var writer = CaptureWriter(container: container, linkType: linkType)
      for (t, record) in records {
        let ok: Bool
        switch record {
        case .event(let e):
          ok = e.withUnsafeBytes {
            writer.append(CaptureRecord(timestamp: t, packet: .hciEvent($0)))
          }
        case .command(let c):
          ok = c.withUnsafeBytes {
            writer.append(CaptureRecord(timestamp: t, packet: .hciCommand($0)))
          }
        case .sniffed(let p, let rssi, let crc):
          ok = p.withUnsafeBytes {
            writer.append(CaptureRecord(timestamp: t, packet: .linkLayer($0, rssi: rssi, crc: crc)))
          }
        }
        precondition(ok, "\(container) refused a record")
      }
      var again: [Seen] = []
      writer.bytes.withUnsafeBytes { raw in
        var reader = try! CaptureReader(raw)
        let result = replay(&reader)
        precondition(result.error == nil && !result.truncated, "\(container): \(result)")
        again = result.seen
      }
      precondition(again.count == memory.seen.count, "\(container) \(linkType): other reports")
      for (a, b) in zip(memory.seen, again) {
        precondition(a.report == b.report, "\(container) \(linkType): \(a) became \(b)")
        precondition(
          !container.holds(micros: a.micros) || a.micros == b.micros,
          "\(container) \(linkType): time \(a.micros) became \(b.micros)")
      }
    }
  }
  return 0
}
