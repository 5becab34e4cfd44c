// libFuzzer target: btsnoop, pcap and pcapng readers and the replay path.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCaptures(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = UnsafeRawBufferPointer(start: data, count: size)
  var replay = CaptureReplay()
  var merger = ScanResponseMerger(capacity: 8)
  try? replay.run(bytes) { _, r in
    merger.observe(r) { _ in }
    _ = IBeacon.decode(advertisingData: r.data)
  }
  return 0
}
