/// The bytes `earshot simulate house` writes: a btsnoop capture per
/// receiver and the ground truth as JSON lines. Pure; the shell writes them.
public enum HouseCapture {
  /// The btsnoop header and a first record at the house's start (HCI
  /// Command Complete for LE Set Scan Enable, which readers pass over), so
  /// every receiver's capture starts at the same moment and paced replays
  /// of them stay in step.
  public static func header(_ house: House) -> [UInt8] {
    let scanEnabled: [UInt8] = [0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00]
    return BtsnoopWriter.header
      + scanEnabled.withUnsafeBytes { BtsnoopWriter.record(event: $0, micros: house.start.micros) }
  }

  /// One report as a legacy advertising report (ADV_NONCONN_IND) record.
  public static func record(_ house: House, _ r: House.Report) -> [UInt8] {
    let b = house.beacons[r.beacon]
    var c = SyntheticCapture()
    c.appendBeacon(
      micros: r.t.micros, beacon: TrackedBeacon(id: b.id, measuredPower: b.power),
      address: b.address,
      rssi: r.rssi)
    return Array(c.bytes[BtsnoopWriter.header.count...])
  }

  /// truth.jsonl: {"t":T,"beacon":"UUID:MAJOR:MINOR","name":N,"room":R|null}
  /// per change, t in Unix seconds.
  public static func truthLines(_ house: House) -> [String] {
    house.truth().map { c in
      var j = JSONLine()
      j.addRaw("t", ReportFormatter.seconds(house.time(c.t).micros))
      j.add("beacon", house.beacons[c.beacon].id.description)
      j.add("name", house.beacons[c.beacon].name)
      if let room = c.room { j.add("room", room) } else { j.addRaw("room", "null") }
      return j.line
    }
  }
}
