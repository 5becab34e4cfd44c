import EarshotCore

extension MonitorEvent {
  /// An event as a replay decides it: at capture time `t`, shown at it.
  public init(
    capture t: Int64, kind: Kind, region: String, state: RegionState, beacons: [RangedBeacon]
  ) {
    self.init(
      decided: DecisionTime(micros: t), shown: WallTime(micros: t), kind: kind, region: region,
      state: state, beacons: beacons)
  }
}
