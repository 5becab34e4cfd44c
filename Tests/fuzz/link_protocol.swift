// libFuzzer target: the BLE link protocol's decoders (device writes and
// the legacy remote-volume mode); a decoded request must re-encode.

@testable import EarshotCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLinkProtocol(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = Array(UnsafeBufferPointer(start: data, count: size))
  if case .success(let frame) = LinkCodec.decodeRequest(bytes) {
    let again = LinkCodec.decodeRequest(LinkCodec.encode(frame))
    if again != .success(frame) { fatalError("a decoded request does not survive re-encoding") }
  }
  _ = LinkCodec.decodeIncoming(bytes)
  _ = LegacyRemoteVolume.decode(bytes)
  _ = LegacyRemoteVolume.decodeVolume(bytes)
  return 0
}
