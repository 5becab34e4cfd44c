import EarshotCore
import EarshotLinux

/// The bench's Bluetooth proxy stage: capture read + decode, each report
/// made a raw advertisement, batched 16 to a message, and each batch sealed
/// (ChaCha20-Poly1305, libcrypto) and framed for every subscribed client,
/// through the sessions `earshot run` uses. No sockets: the figure is the
/// agent's own cost per forwarded advertisement.
enum BenchESPHome {
  static func stage(bytes: [UInt8], clients: Int, seconds: Double) throws -> BenchRow {
    let crypto = LibcryptoNoise()
    let psk = [UInt8](repeating: 0x42, count: 32)
    let info = ESPHomeDeviceInfo(
      name: "bench", friendlyName: "bench", macAddress: "02:00:00:00:00:01",
      bluetoothMacAddress: "02:00:00:00:00:01", compilationTime: "bench", projectVersion: version,
      encrypted: true)
    var sessions: [ESPHomeSession] = []
    for _ in 0..<clients {
      var s = ESPHomeSession(info: info, serverInfo: "earshot", psk: psk, crypto: crypto)
      var c = ESPHomeNoiseClient(crypto: crypto, psk: psk)
      _ = s.receive(c.start())
      _ = try c.receive(s.takeOutput() ?? [])
      _ = s.receive(c.message(1) + c.message(66, [0x08, 0x01]))
      _ = s.takeOutput()
      guard s.subscribed else { throw CommandFailure("bench: the proxy session did not subscribe") }
      sessions.append(s)
    }
    var written = 0
    func deliver(_ batch: [UInt8]) {
      for i in sessions.indices {
        sessions[i].offer(batch: batch)
        while let out = sessions[i].takeOutput() { written += out.count }
      }
    }
    let row = measure(
      "esphome proxy: \(clients) client\(clients == 1 ? "" : "s")", seconds: seconds
    ) {
      var replay = CaptureReplay()
      var batcher = ESPHomeAdvertisementBatcher()
      var n = 0
      bytes.withUnsafeBytes { raw in
        try? replay.run(raw) { _, report in
          guard report.data.count <= ESPHomeRawAdvertisement.maxData else { return }
          let a = ESPHomeRawAdvertisement(
            address: report.address.raw, rssi: Int32(report.rssi ?? -127),
            addressType: UInt32(report.addressType.rawValue), data: Array(report.data))
          if let batch = batcher.add(a) { deliver(batch) }
          n += 1
        }
      }
      if let batch = batcher.flush() { deliver(batch) }
      return n
    }
    precondition(written > 0)
    return row
  }
}
