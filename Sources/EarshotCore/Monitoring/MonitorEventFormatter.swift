/// The JSON lines `earshot monitor` prints:
/// `{"t":1767225630.10,"event":"enter","region":"desk","state":"inside"}`
/// and range lines with the beacons nearest first.
public enum MonitorEventFormatter {
  public static func json(_ e: MonitorEvent) -> String {
    var j = JSONLine()
    j.addRaw("t", JSONLine.format(Double(e.shown.micros) / 1e6, decimals: 2))
    j.add("event", e.kind.rawValue)
    j.add("region", e.region)
    j.add("state", e.state.rawValue)
    if e.kind == .range {
      var s = "["
      for (n, b) in e.beacons.enumerated() {
        if n > 0 { s += "," }
        s += beaconJSON(b)
      }
      j.addRaw("beacons", s + "]")
    }
    return j.line
  }

  public static func beaconJSON(_ b: RangedBeacon) -> String {
    var j = JSONLine()
    switch b.id {
    case .beacon(let id):
      id.addFields(to: &j)
    case .device(let d):
      j.add("device", d.description)
    }
    j.add("address", b.address.description)
    if let r = b.rssi { j.add("rssi", Int(r.rounded())) } else { j.addNull("rssi") }
    if let a = b.accuracy { j.add("accuracy", a, decimals: 2) } else { j.addNull("accuracy") }
    j.add("proximity", b.proximity.rawValue)
    // Devices say where their 1 m power came from (iBeacons carry their own).
    if b.id.device != nil { j.add("power", b.powerSource.rawValue) }
    return j.line
  }
}
