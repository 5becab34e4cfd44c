// libFuzzer target: HCI event decoding, the AD walker and the iBeacon decoder.

@testable import EarshotCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHCIEvents(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = UnsafeRawBufferPointer(start: data, count: size)
  var decoder = AdvertisingEventDecoder()
  // Feed the input as one H4 packet and as a stream of bare events
  // (the first byte of each chunk says how long it is), so fragment
  // reassembly across events is exercised too.
  _ = decoder.decode(h4: bytes) { r in _ = TrackedBeacon.iBeacon(advertisingData: r.data) }
  var offset = 0
  while offset < size {
    let n = min(Int(bytes[offset]) + 1, size - offset - 1)
    if n <= 0 { break }
    let event = UnsafeRawBufferPointer(rebasing: bytes[(offset + 1)..<(offset + 1 + n)])
    _ = decoder.decode(event: event) { r in
      _ = TrackedBeacon.iBeacon(advertisingData: r.data)
      _ = ReportFormatter.adJSON(r.data)
    }
    offset += n + 1
  }
  _ = TrackedBeacon.iBeacon(advertisingData: bytes)
  _ = TrackedBeacon.iBeacon(manufacturerData: bytes)
  var malformed = false
  _ = LinkLayer.report(bytes, rssi: nil, malformed: &malformed)
  return 0
}
