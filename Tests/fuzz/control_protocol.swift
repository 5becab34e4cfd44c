// libFuzzer target: the control socket's line framer, JSON parser and
// request decoder, as bytes arrive from a client in arbitrary chunks.

@testable import EarshotCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzControlProtocol(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = UnsafeRawBufferPointer(start: data, count: size)
  var framer = LineFramer(limit: 4096)
  // The first byte picks the chunk size, so line ends fall anywhere.
  let chunk = max(1, Int(bytes.first ?? 1) % 64)
  var offset = 0
  while offset < size {
    let end = min(size, offset + chunk)
    for item in framer.push(UnsafeRawBufferPointer(rebasing: bytes[offset..<end])) {
      if case .line(let line) = item { _ = ControlProtocol.parse(line: line) }
    }
    offset = end
  }
  _ = try? JSONParser.parse(Array(bytes))
  return 0
}
