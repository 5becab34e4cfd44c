/// The client's side of an encrypted ESPHome API connection, as
/// aioesphomeapi does it: for tests and `earshot bench` (Home Assistant
/// is the real client). Bytes in, messages out.
public struct ESPHomeNoiseClient {
  public enum Failure: Error, Equatable {
    case refused(String)
    case protocolError(String)
  }

  private let crypto: NoiseCrypto
  private var handshake: NoiseInitiatorHandshake
  private var decoder = ESPHomeFrameDecoder(framing: .noise, maxFrame: 65535)
  private var sawServerHello = false
  private var send: NoiseCipherState?
  private var receive: NoiseCipherState?
  /// The name the server said in its hello.
  public private(set) var serverName: String?

  public init(crypto: NoiseCrypto, psk: [UInt8]) {
    self.crypto = crypto
    handshake = NoiseInitiatorHandshake(
      crypto: crypto, psk: psk, prologue: Array("NoiseAPIInit".utf8) + [0, 0])
  }

  public var isReady: Bool { send != nil }

  private static func frame(_ payload: [UInt8]) -> [UInt8] {
    [0x01, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
  }

  /// The first bytes: an empty hello frame, then the handshake's first message.
  public mutating func start() -> [UInt8] {
    [0x01, 0x00, 0x00] + Self.frame([0x00] + handshake.start())
  }

  /// One message, sealed and framed.
  public mutating func message(_ type: UInt32, _ body: [UInt8] = []) -> [UInt8] {
    let plain =
      [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(body.count >> 8), UInt8(body.count & 0xFF)]
      + body
    return Self.frame(send!.encrypt(crypto, plain))
  }

  /// The server's bytes: the messages they complete, as (type, body).
  public mutating func receive(_ bytes: some Collection<UInt8>) throws(Failure) -> [(
    UInt32, [UInt8]
  )] {
    let frames: [ESPHomeFrame]
    do { frames = try decoder.push(bytes) } catch { throw .protocolError(error.description) }
    var out: [(UInt32, [UInt8])] = []
    for case .noise(let payload) in frames {
      if !sawServerHello {
        sawServerHello = true
        let name = payload.dropFirst().prefix { $0 != 0 }
        serverName = String(decoding: name, as: UTF8.self)
      } else if send == nil {
        guard payload.first == 0x00 else {
          throw .refused(String(decoding: payload.dropFirst(), as: UTF8.self))
        }
        do { (send, receive) = try handshake.finish(Array(payload.dropFirst())) } catch {
          throw .protocolError(error.description)
        }
      } else {
        guard let plain = receive!.decrypt(crypto, payload), plain.count >= 4 else {
          throw .protocolError("a frame failed to decrypt")
        }
        out.append((UInt32(plain[0]) << 8 | UInt32(plain[1]), Array(plain[4...])))
      }
    }
    return out
  }
}
