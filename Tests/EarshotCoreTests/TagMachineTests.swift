import XCTest

@testable import EarshotCore

private let all = TagFeatures(button: true, immediateAlert: true, linkLoss: true, battery: true)

/// Drives one tag's machine with an injected clock.
private struct TagDrive {
  var m: TagMachine
  var now = MonotonicTime.zero + .seconds(500)

  init(_ edit: (inout TagConfig) -> Void = { _ in }) {
    var c = TagConfig(name: "keys", line: 1)
    c.address = BDAddress("AA:BB:CC:DD:EE:01")
    edit(&c)
    m = TagMachine(config: c)
  }

  @discardableResult
  mutating func on(_ i: TagInput) -> [TagAction] { m.handle(i, now: now) }

  mutating func wait(_ seconds: Int) { now += .seconds(seconds) }

  /// Connected with every service.
  @discardableResult
  mutating func up(_ f: TagFeatures = all) -> [TagAction] {
    on(.start)
    return on(.connected(f))
  }
}

private func requests(_ a: [TagAction]) -> [DeviceRequest] {
  a.compactMap { if case .request(let r) = $0 { r } else { nil } }
}
private func events(_ a: [TagAction]) -> [TagEvent.Kind] {
  a.compactMap { if case .event(let e) = $0 { e.kind } else { nil } }
}
private func timer(_ a: [TagAction]) -> MonotonicTime? {
  a.compactMap { if case .timer(.arm(_, let t)) = $0 { t } else { nil } }.last
}
private func logs(_ a: [TagAction]) -> [String] {
  a.compactMap { if case .log(let s) = $0 { s } else { nil } }
}

final class TagMachineTests: XCTestCase {
  func testStartConnectsThenSubscribesReadsBatteryAndWritesLinkLossWhenConfigured() {
    var d = TagDrive { $0.linkLossAlert = .high }
    XCTAssertEqual(d.on(.start), [.connect])
    XCTAssertEqual(d.m.phase, .connecting)
    let a = d.on(.connected(all))
    XCTAssertEqual(d.m.phase, .connected)
    XCTAssertTrue(a.contains(.startNotify))
    XCTAssertTrue(a.contains(.writeAlertLevel(.linkLoss, .high)))
    XCTAssertTrue(a.contains(.readBattery))
    XCTAssertEqual(events(a), [.connected], "a first connect is no tag_back")
    // Without link_loss_alert the Link Loss service is left alone.
    var plain = TagDrive()
    XCTAssertFalse(plain.up().contains(.writeAlertLevel(.linkLoss, .high)))
    XCTAssertFalse(plain.up().contains { if case .writeAlertLevel = $0 { true } else { false } })
  }

  func testConnectFailuresBackOffDoublingAndBounded() {
    var d = TagDrive()
    d.on(.start)
    var delays: [Double] = []
    for _ in 0..<12 {
      let a = d.on(.connectFailed("le-connection-abort-by-local"))
      XCTAssertEqual(d.m.phase, .waiting)
      guard let at = timer(a) else { return XCTFail("no retry armed: \(a)") }
      delays.append(d.now.seconds(until: at))
      // Early firings change nothing; the deadline connects again.
      XCTAssertEqual(d.on(.timerFired), [])
      d.now = at
      XCTAssertEqual(d.on(.timerFired), [.connect])
      XCTAssertEqual(d.m.phase, .connecting)
    }
    XCTAssertEqual(delays, [1, 2, 4, 8, 16, 32, 60, 60, 60, 60, 60, 60])
    // A success starts over from the shortest wait.
    d.on(.connected(all))
    let a = d.on(.disconnected("timeout"))
    XCTAssertEqual(timer(a).map { d.now.seconds(until: $0) }, 1)
  }

  func testFailureLogsThinOutForATagThatStaysAway() {
    var d = TagDrive()
    d.on(.start)
    var lines = 0
    for _ in 0..<30 {
      let a = d.on(.connectFailed("not in reach"))
      lines += logs(a).count
      d.now = d.m.retryAt!
      d.on(.timerFired)
    }
    XCTAssertEqual(lines, 3 + 3, "the first three, then attempts 10, 20, 30")
  }

  func testBackoffGrowthHasNoOverflowAfterManyFailures() {
    var b = TagBackoff(initial: 1, ceiling: 60)
    var last = 0.0
    for _ in 0..<200 { last = b.next() }
    XCTAssertEqual(last, 60)
    XCTAssertEqual(b.failures, 200)
  }

  func testAPressRingsTheLaptopAsTheTagThroughTheCoordinator() {
    var d = TagDrive()
    d.up()
    let a = d.on(.notification([0x01]))
    XCTAssertEqual(requests(a), [.findStart])
    XCTAssertEqual(events(a), [.button])
    XCTAssertEqual(d.m.requester.device, DeviceID(link: "tag", name: "keys"))
    // The coordinator sees a device start from tag:keys.
    var find = FindPhoneCoordinator()
    let step = find.handle(.deviceStart(d.m.requester.device!), now: d.now)
    XCTAssertEqual(step.reply, .ringing)
    XCTAssertEqual(find.status.requesters.map(\.description), ["tag:keys"])
    // The second press (while ringing for it) is found: the tag gets the notice.
    d.on(.ringing(true))
    let second = d.on(.notification([0x01]))
    XCTAssertEqual(requests(second), [.found])
    let found = find.handle(.found, now: d.now)
    XCTAssertEqual(found.reply, .stopping(notify: [DeviceID(link: "tag", name: "keys")]))
  }

  func testSecondPressStopOrIgnore() {
    var stop = TagDrive { $0.secondPress = .stop }
    stop.up()
    stop.on(.ringing(true))
    XCTAssertEqual(requests(stop.on(.notification([1]))), [.findStop])
    var ignore = TagDrive { $0.secondPress = .ignore }
    ignore.up()
    ignore.on(.ringing(true))
    let a = ignore.on(.notification([1]))
    XCTAssertEqual(requests(a), [])
    XCTAssertEqual(events(a), [.button])
    XCTAssertEqual(logs(a).count, 1)
    // Once the ring is over, a press rings again.
    ignore.on(.ringing(false))
    XCTAssertEqual(requests(ignore.on(.notification([1]))), [.findStart])
  }

  func testWrongLengthNotificationIsOneEventAndNoRing() {
    var d = TagDrive()
    d.up()
    for bytes in [[], [1, 2], [UInt8](repeating: 7, count: 600)] as [[UInt8]] {
      let a = d.on(.notification(bytes))
      XCTAssertEqual(requests(a), [], "\(bytes.count) bytes must not ring")
      XCTAssertEqual(events(a), [.badNotification])
      XCTAssertEqual(logs(a).count, 1)
      XCTAssertLessThan(logs(a)[0].utf8.count, 200, "bounded whatever the tag sends")
    }
    // A wrong length while ringing stops nothing either.
    d.on(.ringing(true))
    XCTAssertEqual(requests(d.on(.notification([1, 1]))), [])
  }

  func testLostAndBackAreEventsWithOptionalAlert() {
    var d = TagDrive { $0.onLost = .alert }
    d.up()
    d.wait(10)
    let lost = d.on(.disconnected("link supervision timeout"))
    XCTAssertEqual(events(lost), [.lost])
    XCTAssertEqual(requests(lost), [.findStart], "on_lost = alert rings the laptop")
    XCTAssertEqual(d.m.phase, .waiting)
    d.on(.ringing(true))
    // Retries until it is back.
    d.now = d.m.retryAt!
    XCTAssertEqual(d.on(.timerFired), [.connect])
    d.on(.connectFailed("not in reach"))
    d.now = d.m.retryAt!
    d.on(.timerFired)
    let back = d.on(.connected(all))
    XCTAssertEqual(events(back), [.back])
    XCTAssertEqual(requests(back), [.findStop], "its return withdraws the loss alert")
    XCTAssertTrue(back.contains(.startNotify), "subscribed again after a reconnect")
    // on_lost = none: events only.
    var quiet = TagDrive()
    quiet.up()
    XCTAssertEqual(requests(quiet.on(.disconnected("gone"))), [])
  }

  func testRingNeedsAConnectedTagWithImmediateAlert() {
    var d = TagDrive()
    guard case .failure(let e) = d.m.ring(.high) else { return XCTFail("idle tag rang") }
    XCTAssertEqual(e.code, .unavailable)
    XCTAssertTrue(e.message.contains("not connected"), e.message)
    d.up()
    XCTAssertEqual(try d.m.ring(.high).get(), .writeAlertLevel(.immediateAlert, .high))
    XCTAssertEqual(try d.m.ring(.none).get(), .writeAlertLevel(.immediateAlert, .none))
    d.on(.written(.immediateAlert, .high, error: nil))
    XCTAssertEqual(d.m.alertLevel, .high)
    var bare = TagDrive()
    bare.up(TagFeatures(button: true, immediateAlert: false, linkLoss: false, battery: false))
    guard case .failure(let e2) = bare.m.ring(.high) else { return XCTFail("rang without 0x1802") }
    XCTAssertTrue(e2.message.contains("0x1802"), e2.message)
  }

  func testRefusedWritesAndMissingServicesAreOneLineAndAnEvent() {
    var d = TagDrive { $0.linkLossAlert = .mild }
    d.on(.start)
    let a = d.on(
      .connected(TagFeatures(button: false, immediateAlert: true, linkLoss: false, battery: false)))
    XCTAssertEqual(events(a), [.connected, .missing, .missing])
    XCTAssertFalse(a.contains(.startNotify))
    let refused = d.on(.written(.immediateAlert, .high, error: "org.bluez.Error.NotPermitted"))
    XCTAssertEqual(events(refused), [.refused])
    XCTAssertEqual(logs(refused).count, 1)
    XCTAssertNil(d.m.alertLevel, "a refused write does not count as ringing")
    XCTAssertEqual(events(d.on(.notifyFailed("NotSupported"))), [.refused])
  }

  func testServicesThatAppearLaterAreUsed() {
    var d = TagDrive()
    let none = TagFeatures(button: false, immediateAlert: true, linkLoss: false, battery: false)
    XCTAssertFalse(d.up(none).contains(.startNotify))
    let a = d.on(.servicesChanged(all))
    XCTAssertTrue(a.contains(.startNotify), "the button appeared: subscribe")
    XCTAssertTrue(a.contains(.readBattery))
    XCTAssertEqual(d.on(.servicesChanged(all)), [], "nothing new")
    XCTAssertEqual(requests(d.on(.notification([1]))), [.findStart])
    d.on(.disconnected("gone"))
    XCTAssertEqual(d.on(.servicesChanged(none)), [], "not while away")
  }

  func testBatteryLevelIsKeptAndBadValuesAreReported() {
    var d = TagDrive()
    d.up()
    XCTAssertEqual(events(d.on(.battery(.success([87])))), [.battery])
    XCTAssertEqual(d.m.battery, 87)
    XCTAssertEqual(events(d.on(.battery(.success([200])))), [.badNotification])
    XCTAssertEqual(events(d.on(.battery(.failure(TagFailure("NotPermitted"))))), [.refused])
    XCTAssertEqual(d.m.battery, 87)
  }

  func testLateResultsAfterTheLinkDroppedChangeNothing() {
    var d = TagDrive()
    d.up()
    d.on(.disconnected("gone"))
    XCTAssertEqual(d.on(.notification([1])), [])
    XCTAssertEqual(d.on(.connected(all)), [], "a stale connect result while waiting")
    XCTAssertEqual(d.m.phase, .waiting)
  }
}

final class TagConfigTests: XCTestCase {
  private func build(_ lines: [(String, String)], header: String = "tag \"keys\"") throws -> Config
  {
    var doc = ConfigDocument(file: "earshot.conf")
    doc.headers = [SectionHeader(name: header, line: 1)]
    doc.entries = lines.enumerated().map {
      ConfigEntry(section: header, key: $1.0, value: $1.1, line: $0 + 2)
    }
    return try Config.build(doc)
  }

  func testATagSectionWithEveryKey() throws {
    let c = try build([
      ("address", "AA:BB:CC:DD:EE:01"), ("second_press", "stop"), ("on_lost", "alert"),
      ("link_loss_alert", "high"), ("hook_lost", "/bin/echo lost"), ("adapter", "hci1"),
    ])
    XCTAssertEqual(c.tags.count, 1)
    let t = c.tags[0]
    XCTAssertEqual(t.name, "keys")
    XCTAssertEqual(t.address, BDAddress("AA:BB:CC:DD:EE:01"))
    XCTAssertEqual(t.secondPress, .stop)
    XCTAssertEqual(t.onLost, .alert)
    XCTAssertEqual(t.linkLossAlert, .high)
    XCTAssertEqual(t.hookLost, ["/bin/echo", "lost"])
    XCTAssertEqual(t.adapter, "hci1")
    XCTAssertTrue(c.render().contains("[tag \"keys\"]\naddress = AA:BB:CC:DD:EE:01\n"))
  }

  func testBadTagConfigNamesLineAndKey() {
    XCTAssertThrowsError(try build([("address", "nope")])) {
      XCTAssertTrue("\($0)".contains("earshot.conf:2: [tag \"keys\"] address"), "\($0)")
    }
    XCTAssertThrowsError(try build([("second_press", "twice"), ("address", "AA:BB:CC:DD:EE:01")])) {
      XCTAssertTrue("\($0)".contains("found, stop, ignore"), "\($0)")
    }
    XCTAssertThrowsError(try build([("on_lost", "alert")])) {
      XCTAssertTrue("\($0)".contains("a tag needs an address"), "\($0)")
    }
    XCTAssertThrowsError(try build([("address", "AA:BB:CC:DD:EE:01")], header: "tag \"my keys\"")) {
      XCTAssertTrue("\($0)".contains("cannot hold spaces"), "\($0)")
    }
    XCTAssertThrowsError(try build([("colour", "red")])) {
      XCTAssertTrue("\($0)".contains("tag keys: address"), "\($0)")
    }
  }
}
