import EarshotCore

/// The glue between the daemon and its optional parts: each part keeps its
/// own API, the daemon routes events between them.
extension Daemon {
  /// Region monitoring: `status` shows it, `regions` and `ranging`
  /// subscribers and MQTT get its events, and it stops (restoring the
  /// scan, saving the states) when the daemon does.
  public func attach(monitor: AgentMonitor) {
    self.monitor = monitor
    statusSections = monitor.statusSections
    monitor.observe { [unowned self] e in self.monitorEvent(e) }
    stopActions.append { monitor.stop() }
  }

  private func monitorEvent(_ e: MonitorEvent) {
    let line = MonitorEventFormatter.json(e)
    publish(e.kind == .range ? .ranging : .regions, line)
    guard let mqtt else { return }
    switch e.kind {
    case .range:
      for b in e.beacons {
        mqtt.beacon(
          b.id, distance: b.accuracy, proximity: b.proximity.rawValue,
          rssi: b.rssi.map { Int($0.rounded()) }, at: Double(e.t) / 1e6)
      }
    case .state, .enter, .exit:
      mqtt.regionState(e.region, state: e.state.rawValue)
      mqtt.event(line)
    }
  }

  /// MQTT: region states, events, beacons, find-phone state and volume go
  /// out; ring, found, volume and mute come in and go through the same
  /// coordinator and mixer as the control socket's commands. Starts
  /// connecting (in the background, with backoff) and says `offline` when
  /// the daemon stops.
  public func attach(mqtt bridge: MQTTBridge) {
    mqtt = bridge
    find.add(mqttLink)
    mqttLink.onNotice = { [unowned self] id, device in
      // Home Assistant has no one to answer: the link takes the notice.
      self.mqtt?.event(
        ControlProtocol.event(
          "notice",
          [
            ("notice", .int(id)), ("kind", .string("phone_found")),
            ("device", .string(device.name)),
          ]
        ))
      self.find.submit(.noticeResult(id, .accepted))
    }
    bridge.onLog = { [unowned self] in self.log($0) }
    bridge.onCommand = { [unowned self] in self.mqttCommand($0) }
    bridge.findState(find.status.state.rawValue)
    if let v = try? volume?.currentVolume() { bridge.volume(v.level, muted: v.muted) }
    if let monitor {
      for r in monitor.regionStates { bridge.regionState(r.region, state: r.state.rawValue) }
    }
    bridge.start()
    stopActions.append { bridge.close() }
  }

  private func mqttCommand(_ command: MQTTCommand) {
    switch command {
    case .ring:
      let reply = find.submit(.deviceStart(mqttLink.device))
      log("mqtt: ring: \(reply.map(ControlProtocol.json)?.encoded ?? "queued")")
    case .found:
      if find.submit(.found) == .notRinging { log("mqtt: found: nothing is ringing") }
    case .setVolume(let level):
      mqttVolume("volume \(Int((level * 100).rounded()))") { $0.level = level }
    case .setMute(let muted):
      mqttVolume(muted ? "mute" : "unmute") { $0.muted = muted }
    }
  }

  private func mqttVolume(_ what: String, _ change: (inout VolumeSetting) -> Void) {
    do {
      _ = try changeVolume(change)
    } catch let e as ControlError {
      log("mqtt: \(what) ignored: \(e.message)")
    } catch {
      log("mqtt: \(what): \(error)")
    }
  }

  /// Find-phone's course in the proximity log: started, then found or
  /// stopped (with why).
  func recordFind(_ status: FindStatus) {
    defer { lastFindState = status.state }
    guard let proximityLog, status.state != lastFindState else { return }
    let t = Clock.realtimeMicros()
    let device = status.requesters.map(\.description).joined(separator: " ")
    if status.state == .ringing {
      proximityLog.record(.findPhone(FindPhoneLogEvent(t: t, kind: .started, device: device)))
    } else if status.state == .idle, lastFindState != .recovering {
      let found = status.lastEnd == .found
      proximityLog.record(
        .findPhone(
          FindPhoneLogEvent(
            t: t, kind: found ? .found : .stopped, device: device,
            detail: status.lastEnd?.rawValue)))
    }
  }
}
