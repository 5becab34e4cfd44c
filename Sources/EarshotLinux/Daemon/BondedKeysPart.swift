import EarshotCore

/// Bonded devices for the region monitor: their keys are read from
/// `source` (BlueZ's store, or the keys file earshot-keys.service writes
/// for an unprivileged agent) and followed, so a device paired or removed
/// while the agent runs counts (or stops counting) without a restart. A
/// source that cannot be read is logged once, with what to run or grant;
/// regions keep working (beacons, identity addresses, keys in the config).
extension Daemon {
  public func follow(bondedKeys source: BondedKeysSource) throws {
    precondition(bondedKeys == nil, "one bonded-keys source per agent")
    let follower = BondedKeysFollower(
      source: source, loop: loop,
      changed: { [unowned self] set in
        for problem in set.problems { self.log("bonded keys: \(problem)") }
        self.monitor?.updateBondedKeys(set.keys)
        let withKey = set.keys.filter { $0.irk != nil }.count
        self.log(
          "bonded keys: \(set.keys.count) device(s) from \(source), \(withKey) with an IRK")
      },
      failed: { [unowned self] error in
        self.log(
          "bonded keys: \(error); until then regions naming devices match their identity "
            + "addresses only (beacon regions are not affected)")
      })
    bondedKeys = follower
    statusSections[.devices] = { [unowned self] in self.bondedDevicesStatus() }
    try follower.start()
  }

  /// Each bonded device: identity, type, whether it has an IRK, its name,
  /// and when the monitor last heard it (unix seconds; null if not since
  /// the agent started).
  func bondedDevicesStatus() -> JSONValue {
    let keys = bondedKeys?.current?.keys ?? []
    let now = monitor?.now
    return .array(
      keys.map { key in
        var fields: [(String, JSONValue)] = [
          ("address", .string(key.identity.description)),
          ("type", .string(key.identityType.rawValue)),
          ("irk", .bool(key.irk != nil)),
          ("name", key.name.map { .string($0) } ?? .null),
        ]
        let seen = monitor?.driver.monitor.lastSeen(device: key.identity)
        fields.append(
          ("last_seen", seen.map { .number(monitor!.shown($0).seconds) } ?? .null))
        if let seen, let now {
          fields.append(
            ("seconds_ago", .number((Double(now.micros - seen.micros) / 1e5).rounded() / 10)))
        }
        return .object(fields)
      })
  }
}
