/// The RSSI field of an advertising report, and its "not available" value:
/// the one place that decides which raw values are measurements.
///
/// The Core Specification (Vol 4, Part E) gives every report type the same
/// field: a signed byte, range -127...+20 dBm, 127 (0x7F) = "RSSI is not
/// available". LE Advertising Report: 7.7.65.2; LE Directed Advertising
/// Report: 7.7.65.11; LE Extended Advertising Report: 7.7.65.13.
///
/// Legacy reports also read -128 (0x80) as not available. It lies outside
/// the range the spec allows, so it is never a measurement, and as -128 dBm
/// it would pass for the weakest signal possible and drag the distance
/// filter; the decoder has always dropped it for legacy reports, and that
/// stays. Directed and extended reports keep to the spec's one sentinel
/// (unchanged too): captures decoded before give the same values.
public enum ReportRSSI {
  /// 127: "RSSI is not available", in every report type.
  public static let notAvailable: Int8 = 127

  /// The report types, each with its rule.
  public enum Report: Sendable {
    case legacy
    case directed
    case extended
  }

  /// The measurement in a raw RSSI byte, or `nil` when it is not one.
  @inlinable public static func decode(_ raw: Int8, in report: Report) -> Int8? {
    if raw == notAvailable { return nil }
    if report == .legacy && raw == Int8.min { return nil }
    return raw
  }

  /// The raw byte for a report: the sentinel when there is no measurement.
  @inlinable public static func encode(_ rssi: Int8?) -> Int8 {
    rssi ?? notAvailable
  }
}
