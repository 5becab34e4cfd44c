import EarshotCore

/// `--pace N` and `--start-at T` for the commands that replay a capture
/// (`run`, `monitor`).
let paceOption = Option.value(
  "pace", "N", "With --input: replay at N times capture time (1 = real time; default: at once)")
let startAtOption = Option.value(
  "start-at", "T", "With --pace: play the capture's first record at Unix time T (default: now)")

struct ReplayPacing {
  var pace: Double
  var startAt: WallTime?

  /// nil without --pace.
  init?(_ args: Arguments) throws {
    guard let pace = try args.double("pace") else {
      if args.value("start-at") != nil { throw UsageError("--start-at needs --pace") }
      return nil
    }
    guard args.value("input") != nil else { throw UsageError("--pace needs --input CAPTURE") }
    guard pace > 0, pace <= 1e6 else {
      throw UsageError("--pace expects a factor above 0 (1 = real time), got '\(pace)'")
    }
    self.pace = pace
    if let t = try args.double("start-at") {
      guard t >= 0, t < 1e11 else { throw UsageError("--start-at expects Unix seconds") }
      startAt = WallTime(seconds: t)
    }
  }
}
