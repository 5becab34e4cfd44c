/// The one vocabulary of what devices and users ask the agent to do,
/// whatever carried the request (the control socket, the BLE link, MQTT,
/// the CLI through the socket). Each transport's adapter maps its wire
/// format to a `DeviceRequest` and the `RequestOutcome` back to its wire;
/// the agent performs requests without knowing where they came from.
///
/// A new command is a case here, its handling in the agent's `perform`,
/// and a line in each adapter's mapping that carries it.
public enum DeviceRequest: Equatable, Sendable {
  /// The agent's status: every part's section.
  case status
  case findStatus
  /// Ring this laptop; only a device can ask (it hears how the ring ends).
  case findStart
  /// Ring at the user's own volume, unmuted, without the raise (a Find Me
  /// locator's "mild alert"); a `findStart` from anyone raises it.
  case findStartMild
  /// The device withdraws its request (not a "found").
  case findStop
  /// The user found the laptop: silence, restore, then the phone-found notice.
  case found
  /// A device's answer to a phone-found notice it was sent.
  case noticeResult(NoticeID, NoticeResult)
  case volumeGet
  /// Setting a level also unmutes, as desktop volume applets do.
  case volumeSet(Double)
  case volumeMute(Bool)
  /// A remote-shutter event by its wire value (enter 1, capture 2, exit 0);
  /// answered once the camera has done it.
  case shutter(Int)
  /// Play a title from the media library; answered by its completion.
  case mediaPlay(title: String)
  case mediaPause
  case mediaResume
  case mediaStop
  /// Write Alert Level to a tag's (or a bonded device's) Immediate Alert
  /// service: `target` is a `[tag "NAME"]` name or an address.
  case ring(target: String, level: AlertLevel)
  /// The tracker watch: trust a tracker for a while (nil: until cleared), or clear it.
  case trackerTrust(TrackerNumber, for: Duration?)
  case trackerClear(TrackerNumber)
  /// A tracker's evidence (nil: every tracker kept's).
  case trackerEvidence(TrackerNumber?)
  /// Ring, silence or identify a tracker the watch keeps, through BlueZ.
  case trackerSound(TrackerNumber, TrackerSoundMode)
}

/// Who asks: a device (one that can ring the laptop and answer notices) or
/// someone who is not one (the user's CLI, a home-automation button).
public struct Requester: Equatable, Sendable, CustomStringConvertible {
  /// The device this requester speaks for; nil when it speaks for none.
  public var device: DeviceID?
  /// How logs name it: "socket client 4", "ble AA:BB:CC:DD:EE:FF", "mqtt".
  public var name: String

  public init(device: DeviceID?, name: String) {
    self.device = device
    self.name = name
  }

  public init(device: DeviceID) {
    self.init(device: device, name: device.description)
  }

  public var description: String { name }
}

/// What became of a request: exactly one per request, possibly later
/// (shutter, media play).
public enum RequestOutcome: Equatable, Sendable {
  /// `status`: the sections in their fixed order.
  case status(JSONValue)
  /// find start or stop: the coordinator's reply (nil when it was queued
  /// behind the step under way) and its status afterwards.
  case find(FindReply?, FindStatus)
  case findStatus(FindStatus)
  /// `found`: what the coordinator does now (`.stopping(devices)` names who
  /// gets the notice; nil when queued) and its status afterwards.
  case found(FindReply?, FindStatus)
  case noticeRecorded(NoticeID)
  /// The volume now (after a change, as the mixer reads it back).
  case volume(VolumeSetting)
  /// The state the camera reached for shutter event `event`.
  case shutter(event: Int, state: ShutterState, photo: String?)
  /// A play request's one completion.
  case mediaCompleted(MediaRequestID, MediaResponse, MediaItem?)
  /// pause, resume, stop: what the player does now.
  case media(MediaCoordinator.Phase?)
  /// `ring`: the level was written to `device` (the address rung).
  case rang(target: String, device: BDAddress, level: AlertLevel)
  /// The trackers kept after a trust or a clear (as `status` lists them),
  /// or their evidence.
  case trackers(JSONValue)
  /// A tracker rang, was silenced or said who it is (`line` says so).
  case trackerSound(TrackerNumber, TrackerSoundOutcome, line: String)
  case refused(RequestError)
}

/// Why a request was refused. Codes are stable (transports map them to
/// their own status values); messages say what to do.
public struct RequestError: Error, Equatable, Sendable {
  public enum Code: String, CaseIterable, Sendable {
    /// Find-phone owns the volume while it rings.
    case busy
    /// The part is not set up in this agent (no mixer, camera or library).
    case unavailable
    /// Only a device can ask this.
    case notADevice = "not_registered"
    case notRinging = "not_ringing"
    case unknownNotice = "unknown_notice"
    case unknownEvent = "unknown_event"
    case failed
  }
  public var code: Code
  public var message: String

  public init(_ code: Code, _ message: String) {
    self.code = code
    self.message = message
  }
}

/// What the agent tells its transports about, in the order it happens.
public enum AgentEvent: Sendable {
  case find(FindStatus)
  /// What became of a phone-found notice.
  case noticeResult(NoticeID, DeviceID, NoticeResult)
  /// The volume changed (by find-phone, a request, or anyone else).
  case volume(VolumeSetting)
  case monitor(MonitorEvent)
  /// A key-finder tag was lost, came back, pressed, refused...
  case tag(TagEvent)
  /// A reload applied these regions (what the agent monitors from now on).
  case reloaded(regions: [RegionConfig])
  /// A beacon of a region told its battery and temperature (Eddystone-TLM;
  /// the reading's `t` is wall time), at most once a minute per beacon.
  case telemetry(TrackedID, BeaconTelemetry)
  /// A tracker the watch found to follow the laptop (once per tracker).
  case trackerFollowing(TrackerRow)
  /// The user trusted or cleared a tracker: the ones following may differ.
  case trackersChanged
}
