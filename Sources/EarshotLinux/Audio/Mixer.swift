import CALSA
import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// A mixer control (`Master` on card `default` unless told otherwise), on
/// the 0…1 scale alsamixer shows (see `VolumeScale`). Works with hardware
/// cards (dB ranges) and with the PulseAudio/PipeWire ALSA plugins (raw
/// range only).
///
/// Changes made by anyone (amixer, pactl, a desktop applet) arrive on
/// `pollDescriptors()`; `handleReady(_:)` returns the new state when the
/// volume or mute changed.
public final class Mixer {
  public struct Failure: Error, CustomStringConvertible {
    public let description: String
  }

  public let card: String
  public let control: String
  public let scale: VolumeScale
  /// False when the control has no mute switch.
  public let canMute: Bool

  /// True for a sound server's control plugin (pulse, pipewire), whose
  /// copy of the volumes can lag the server: reads then ask the server
  /// through a fresh connection (see `state()`).
  public let readsFresh: Bool

  private let handle: OpaquePointer
  private let element: OpaquePointer
  private var reported: VolumeState?

  /// `card` is an ALSA ctl name (`default`, `hw:0`, `pulse`) or a card
  /// number. The control is a simple-mixer name such as `Master`, `PCM`,
  /// `Speaker`, optionally with an index: `Headphone,1`.
  public init(card: String = "default", control: String = "Master") throws {
    let ctl = card.allSatisfy(\.isNumber) && !card.isEmpty ? "hw:\(card)" : card
    self.card = ctl
    self.control = control
    let (h, elem) = try LibraryThreads.withSignalsBlocked { try Self.open(ctl, control) }
    handle = h
    element = elem
    var lo = 0
    var hi = 0
    snd_mixer_selem_get_playback_volume_range(elem, &lo, &hi)
    var dbLo = 0
    var dbHi = 0
    let hasDB = snd_mixer_selem_get_playback_dB_range(elem, &dbLo, &dbHi) == 0
    scale = VolumeScale(raw: lo...max(lo, hi), decibels: hasDB && dbLo < dbHi ? dbLo...dbHi : nil)
    canMute = snd_mixer_selem_has_playback_switch(elem) != 0
    var hctl: OpaquePointer?
    readsFresh =
      snd_mixer_get_hctl(h, ctl, &hctl) == 0 && hctl != nil
      && snd_ctl_type(snd_hctl_ctl(hctl)) == SND_CTL_TYPE_EXT
  }

  /// A mixer handle with the control found, or why not.
  private static func open(_ ctl: String, _ control: String) throws -> (
    OpaquePointer, OpaquePointer
  ) {
    var h: OpaquePointer?
    var e = snd_mixer_open(&h, 0)
    guard e == 0, let h else { throw Failure(description: "cannot open a mixer: \(Self.text(e))") }
    e = snd_mixer_attach(h, ctl)
    if e == 0 { e = snd_mixer_selem_register(h, nil, nil) }
    if e == 0 { e = snd_mixer_load(h) }
    guard e == 0 else {
      snd_mixer_close(h)
      throw Failure(
        description:
          "cannot open the mixer of card '\(ctl)': \(Self.text(e)) ('aplay -l' lists cards; for 'default', is the sound server running?)"
      )
    }
    var name = control
    var index: UInt32 = 0
    if let comma = control.lastIndex(of: ","),
      let i = UInt32(control[control.index(after: comma)...])
    {
      name = String(control[..<comma])
      index = i
    }
    var sid: OpaquePointer?
    snd_mixer_selem_id_malloc(&sid)
    defer { snd_mixer_selem_id_free(sid) }
    snd_mixer_selem_id_set_name(sid, name)
    snd_mixer_selem_id_set_index(sid, index)
    guard let elem = snd_mixer_find_selem(h, sid), snd_mixer_selem_has_playback_volume(elem) != 0
    else {
      let names = Self.playbackControls(h)
      snd_mixer_close(h)
      throw Failure(
        description:
          "card '\(ctl)' has no playback volume control '\(control)'; it has: "
          + (names.isEmpty ? "none" : names.joined(separator: ", ")))
    }
    return (h, elem)
  }

  deinit { snd_mixer_close(handle) }

  /// The volume (the loudest channel) and whether every channel is muted.
  ///
  /// On a sound server's plugin this is read through a fresh connection:
  /// PipeWire 0.3.65's ALSA control plugin leaves the right channel of a
  /// long-lived handle at its old value when the volume is changed
  /// through another ALSA client, and sends no further event, so the
  /// loudest channel of our own copy would hide every decrease. A fresh
  /// connection costs a few milliseconds and reads what the server has.
  public func state() -> VolumeState {
    if readsFresh, let s = freshState() { return s }
    return cachedState()
  }

  /// This handle's own copy of the state (hardware cards, or when a fresh
  /// connection cannot be made).
  private func cachedState() -> VolumeState {
    Self.read(element, scale: scale, canMute: canMute)
  }

  private func freshState() -> VolumeState? {
    guard
      let (h, e) = try? LibraryThreads.withSignalsBlocked({ try Self.open(card, control) })
    else { return nil }
    defer { snd_mixer_close(h) }
    return Self.read(e, scale: scale, canMute: canMute)
  }

  private static func read(_ element: OpaquePointer, scale: VolumeScale, canMute: Bool)
    -> VolumeState
  {
    var loudest = 0.0
    var anyOn = false
    for ch in channels(element) {
      if scale.kind == .raw {
        var v = 0
        if snd_mixer_selem_get_playback_volume(element, ch, &v) == 0 {
          loudest = max(loudest, scale.normalized(raw: v))
        }
      } else {
        var db = 0
        if snd_mixer_selem_get_playback_dB(element, ch, &db) == 0 {
          loudest = max(loudest, scale.normalized(decibels: db))
        }
      }
      if canMute {
        var on: Int32 = 1
        if snd_mixer_selem_get_playback_switch(element, ch, &on) == 0, on != 0 { anyOn = true }
      }
    }
    return VolumeState(volume: loudest, muted: canMute && !anyOn)
  }

  /// Sets every channel to `volume` (0…1) and unmutes, as desktop volume
  /// applets do (`unmute: false` leaves the switch alone, for restoring a
  /// saved muted state without a blip). Returns the state read back.
  @discardableResult
  public func setVolume(
    _ volume: Double, rounding: VolumeScale.Rounding = .nearest, unmute: Bool = true
  ) throws -> VolumeState {
    let v = min(max(volume, 0), 1)
    try writing { element in
      var e: Int32
      switch scale.kind {
      case .raw:
        e = snd_mixer_selem_set_playback_volume_all(element, scale.raw(for: v, rounding: rounding))
      case .linearDecibels, .cubic:
        e = snd_mixer_selem_set_playback_volume_all(
          element, rawStep(element, for: v, rounding: rounding))
      }
      if e == 0, canMute, unmute { e = snd_mixer_selem_set_playback_switch_all(element, 1) }
      guard e == 0 else { throw failure("set the volume of", e) }
    }
    return remember(state())
  }

  public func setMuted(_ muted: Bool) throws -> VolumeState {
    guard canMute else {
      throw Failure(description: "control '\(control)' on card '\(card)' has no mute switch")
    }
    try writing { element in
      let e = snd_mixer_selem_set_playback_switch_all(element, muted ? 0 : 1)
      guard e == 0 else { throw failure(muted ? "mute" : "unmute", e) }
    }
    return remember(state())
  }

  /// Runs a change on a handle whose copy of the state is the server's.
  /// ALSA's simple mixer writes every control of the element, the volume
  /// too when only the switch changed: through a handle whose volume is
  /// stale (PipeWire, or events not yet handled), a mute would put the old
  /// volume back. On a sound server's plugin the change therefore goes
  /// through a fresh connection; this handle then only listens.
  private func writing(_ change: (OpaquePointer) throws -> Void) throws {
    guard readsFresh else { return try change(element) }
    let (h, e) = try LibraryThreads.withSignalsBlocked { try Self.open(card, control) }
    defer { snd_mixer_close(h) }
    try change(e)
  }

  /// Whether the card's headphone jack control reports something plugged
  /// in; nil when the card has no such control (plugins, most USB cards).
  public func headphoneJackPlugged() -> Bool? {
    var ctl: OpaquePointer?
    guard snd_ctl_open(&ctl, card, Int32(SND_CTL_NONBLOCK)) == 0, let ctl else { return nil }
    defer { snd_ctl_close(ctl) }
    var id: OpaquePointer?
    var value: OpaquePointer?
    snd_ctl_elem_id_malloc(&id)
    snd_ctl_elem_value_malloc(&value)
    defer {
      snd_ctl_elem_id_free(id)
      snd_ctl_elem_value_free(value)
    }
    // The names HD-Audio and ASoC drivers give their jack controls.
    for name in ["Headphone Jack", "Front Headphone Jack", "Headphone Mic Jack", "Headset Jack"] {
      snd_ctl_elem_id_clear(id)
      snd_ctl_elem_id_set_interface(id, SND_CTL_ELEM_IFACE_CARD)
      snd_ctl_elem_id_set_name(id, name)
      snd_ctl_elem_value_set_id(value, id)
      if snd_ctl_elem_read(ctl, value) == 0 {
        return snd_ctl_elem_value_get_boolean(value, 0) != 0
      }
    }
    return nil
  }

  /// The descriptors to poll for changes (POLLIN).
  public func pollDescriptors() -> [pollfd] {
    let n = snd_mixer_poll_descriptors_count(handle)
    guard n > 0 else { return [] }
    var fds = [pollfd](repeating: pollfd(), count: Int(n))
    let got = fds.withUnsafeMutableBufferPointer {
      snd_mixer_poll_descriptors(handle, $0.baseAddress, UInt32(n))
    }
    return Array(fds.prefix(Int(max(got, 0))))
  }

  /// Processes pending mixer events; returns the new state if the volume
  /// or mute differs from the last one reported (by this method or by a
  /// set through this object), nil otherwise.
  public func handleReady(_ fds: [pollfd]) throws -> VolumeState? {
    var fds = fds
    var revents: UInt16 = 0
    _ = fds.withUnsafeMutableBufferPointer {
      snd_mixer_poll_descriptors_revents(handle, $0.baseAddress, UInt32($0.count), &revents)
    }
    if revents & UInt16(POLLERR | POLLHUP) != 0 {
      throw Failure(description: "the mixer of card '\(card)' went away (sound server stopped?)")
    }
    let e = snd_mixer_handle_events(handle)
    guard e >= 0 else { throw failure("read events from", e) }
    return recheck()
  }

  /// The state, when it differs from the one last reported. A sound
  /// server applies a change a channel at a time and its events can come
  /// together: a read between them sees the change half done (the loudest
  /// channel still at its old level), so a watcher reads once more when
  /// the events have settled.
  public func recheck() -> VolumeState? {
    let now = state()
    if now == reported { return nil }
    reported = now
    return now
  }

  /// Marks `s` as already reported, so the watcher does not echo our own
  /// change back; returns it.
  @discardableResult
  public func remember(_ s: VolumeState) -> VolumeState {
    reported = s
    return s
  }

  /// The raw step whose dB value maps nearest to `volume` (or the next
  /// step up or down), so reading back gives what alsamixer would show.
  private func rawStep(_ element: OpaquePointer, for volume: Double, rounding: VolumeScale.Rounding)
    -> Int
  {
    let target = scale.decibels(for: volume, rounding: rounding)
    var down = 0
    var up = 0
    snd_mixer_selem_ask_playback_dB_vol(element, target, -1, &down)
    snd_mixer_selem_ask_playback_dB_vol(element, target, 1, &up)
    switch rounding {
    case .down: return down
    case .up: return up
    case .nearest:
      var dbDown = 0
      var dbUp = 0
      snd_mixer_selem_ask_playback_vol_dB(element, down, &dbDown)
      snd_mixer_selem_ask_playback_vol_dB(element, up, &dbUp)
      let errDown = abs(scale.normalized(decibels: dbDown) - volume)
      let errUp = abs(scale.normalized(decibels: dbUp) - volume)
      return errUp < errDown ? up : down
    }
  }

  private static func channels(_ element: OpaquePointer) -> [snd_mixer_selem_channel_id_t] {
    if snd_mixer_selem_is_playback_mono(element) != 0 { return [SND_MIXER_SCHN_MONO] }
    var out: [snd_mixer_selem_channel_id_t] = []
    for raw in 0...SND_MIXER_SCHN_LAST.rawValue {
      let ch = snd_mixer_selem_channel_id_t(rawValue: raw)
      if snd_mixer_selem_has_playback_channel(element, ch) != 0 { out.append(ch) }
    }
    return out
  }

  private func failure(_ action: String, _ e: Int32) -> Failure {
    Failure(description: "cannot \(action) '\(control)' on card '\(card)': \(Self.text(e))")
  }

  static func text(_ e: Int32) -> String { String(cString: snd_strerror(e)) }

  static func playbackControls(_ h: OpaquePointer) -> [String] {
    var names: [String] = []
    var elem = snd_mixer_first_elem(h)
    while let e = elem {
      if snd_mixer_selem_has_playback_volume(e) != 0, let n = snd_mixer_selem_get_name(e) {
        let index = snd_mixer_selem_get_index(e)
        names.append(String(cString: n) + (index == 0 ? "" : ",\(index)"))
      }
      elem = snd_mixer_elem_next(e)
    }
    return names
  }
}
