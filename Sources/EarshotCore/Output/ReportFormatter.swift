/// Renders advertising reports as Earshot prints them: JSON lines (one per
/// report) or a human table.
public enum ReportFormatter {
  /// Unix seconds with microseconds, from integer microseconds.
  public static func seconds(_ micros: Int64) -> String {
    let sign = micros < 0 ? "-" : ""
    let m = micros.magnitude
    let frac = String(m % 1_000_000)
    return sign + String(m / 1_000_000) + "." + String(repeating: "0", count: 6 - frac.count) + frac
  }

  /// The documented beacon line (iBeacons; AltBeacons and Eddystone-UIDs
  /// with their `format`).
  public static func iBeaconJSON(micros: Int64, report: AdvertisingReport, beacon: TrackedBeacon)
    -> String
  {
    var j = JSONLine()
    j.addRaw("t", seconds(micros))
    j.add("address", report.address.description)
    j.add("address_type", report.addressType.name)
    beacon.id.addFields(to: &j)
    j.add("power", Int(beacon.measuredPower))
    if beacon.isPowerSuspect { j.add("power_suspect", true) }
    if let rssi = report.rssi { j.add("rssi", Int(rssi)) } else { j.addNull("rssi") }
    j.add("event_type", report.pdu.name)
    return j.line
  }

  /// Everything in a report, AD structures decoded, for `--all`.
  /// `merged` is the advertising data a scan response answers, if known.
  public static func reportJSON(
    micros: Int64, report: AdvertisingReport, beacon: TrackedBeacon?,
    merged: UnsafeRawBufferPointer?,
    classifier: BeaconClassifier = .standard
  ) -> String {
    var j = JSONLine()
    j.addRaw("t", seconds(micros))
    j.add("address", report.address.description)
    j.add("address_type", report.addressType.name)
    j.add("event_type", report.pdu.name)
    if let rssi = report.rssi { j.add("rssi", Int(rssi)) } else { j.addNull("rssi") }
    if let tx = report.txPower { j.add("tx_power", Int(tx)) }
    if let sid = report.sid { j.add("sid", Int(sid)) }
    if report.dataStatus != .complete { j.add("data_status", report.dataStatus.name) }
    if let direct = report.directAddress { j.add("direct_address", direct.description) }
    j.addRaw("ad", adJSON(report.data))
    if let merged, merged.count > 0 { j.addRaw("adv_ad", adJSON(merged)) }
    // Every beacon frame in it (telemetry and URLs too), by the layout table.
    let frames = classifier.frames(in: report.data)
    if !frames.isEmpty { j.addRaw("frames", "[" + frames.map(\.json).joined(separator: ",") + "]") }
    if let beacon {
      beacon.id.addFields(to: &j)
      j.add("power", Int(beacon.measuredPower))
      if beacon.isPowerSuspect { j.add("power_suspect", true) }
    }
    return j.line
  }

  /// AD structures as `[{"type":"flags","hex":"06"},...]`; a malformed tail
  /// is shown as `{"malformed":"hex"}` so nothing is hidden.
  public static func adJSON(_ data: UnsafeRawBufferPointer) -> String {
    var s = "["
    var walker = ADWalker(data)
    var consumed = 0
    var first = true
    while let ad = walker.next() {
      if !first { s += "," }
      first = false
      s += "{\"type\":\(JSONLine.quoted(ad.typeName)),"
      if ad.type == ADType.completeLocalName || ad.type == ADType.shortLocalName {
        s += "\"text\":\(JSONLine.quoted(String(decoding: ad.value, as: UTF8.self))),"
      }
      s += "\"hex\":\"\(ad.value.hexString)\"}"
      consumed += ad.value.count + 2
    }
    if walker.isMalformed {
      if !first { s += "," }
      s +=
        "{\"malformed\":\"\(UnsafeRawBufferPointer(rebasing: data[min(consumed, data.count)...]).hexString)\"}"
    }
    return s + "]"
  }

  public static func rejectJSON(micros: Int64, bytes: UnsafeRawBufferPointer, reason: String)
    -> String
  {
    var j = JSONLine()
    j.addRaw("t", seconds(micros))
    j.add("reject", reason)
    j.add("hex", bytes.hexString)
    return j.line
  }

  public static let textHeader =
    "TIME               ADDRESS            RSSI  UUID                                  MAJOR  MINOR  POWER  TYPE"

  public static func text(micros: Int64, report: AdvertisingReport, beacon: TrackedBeacon?)
    -> String
  {
    func pad(_ s: String, _ n: Int) -> String {
      s + String(repeating: " ", count: max(1, n - s.count))
    }
    var s = pad(seconds(micros), 19) + pad(report.address.description, 19)
    s += pad(report.rssi.map { String($0) } ?? "-", 6)
    if let b = beacon, b.id.kind != .iBeacon, b.id.kind != .altBeacon {
      // The fields joined (Eddystone's NAMESPACE:INSTANCE is 33 characters:
      // it fits the UUID column).
      let row = b.id.kind.row
      s +=
        pad(row.fields.indices.map { b.id.text(field: $0) }.joined(separator: ":"), 38)
        + pad("-", 7) + pad("-", 7)
      s += pad(String(b.measuredPower) + (b.isPowerSuspect ? "?" : ""), 7)
    } else if let b = beacon {
      s += pad(b.uuid.description, 38) + pad(String(b.major), 7) + pad(String(b.minor), 7)
      s += pad(String(b.measuredPower) + (b.isPowerSuspect ? "?" : ""), 7)
    } else {
      s += pad("-", 38) + pad("", 7) + pad("", 7) + pad("", 7)
    }
    return s + report.pdu.name
  }
}
