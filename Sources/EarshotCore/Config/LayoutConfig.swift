/// A `[layout "NAME"]` section: a beacon format of the user's own, as an
/// Android Beacon Library layout string. Its rows come after the built-in
/// ones in `Config.beaconClassifier`, so a user's row never changes how a
/// built-in format decodes.
public struct LayoutConfig: Sendable, Equatable {
  public var name: String
  /// Line of the `[layout "NAME"]` header, for messages.
  public var line: Int
  /// The parsed row; `nil` until the `layout` key is read (required).
  public var layout: BeaconLayout? = nil

  public init(name: String, line: Int) {
    self.name = name
    self.line = line
  }
}

extension Config {
  /// Keys of `[layout "NAME"]`.
  public static let layoutKeys: [ConfigKey<LayoutConfig>] = [
    .init(
      "layout",
      "The format as an Android Beacon Library layout string (m:2-3=beac,i:4-19,p:24-24,...): "
        + "m match bytes, s:0-1 a 16-bit service UUID, i identifiers, p the power byte, "
        + "d data, x no identity; docs/beacon-formats.md.",
      set: { l, v in
        do {
          let layout = try BeaconLayout(parsing: try ConfigValue.nonEmpty(v), name: l.name)
          l.layout = layout
          // Known from here on: a [rooms] track later in the file may name it.
          // A layout that cannot be tracked is still a format `scan --all`
          // shows; only running out of kinds is an error here.
          if layout.trackingProblem == nil, case .failure(let e) = TrackedKind.register(layout) {
            throw ConfigValueError(e.reason)
          }
        } catch let e as BeaconLayoutError {
          throw ConfigValueError(e.description)
        }
      },
      show: { $0.layout?.layoutString ?? "" })
  ]

  /// The layout table every beacon frame is classified by: the built-in
  /// rows, then the `[layout "NAME"]` sections in file order.
  public var beaconClassifier: BeaconClassifier {
    layouts.isEmpty ? .standard : BeaconClassifier(custom: layouts.compactMap(\.layout))
  }

  /// The layouts whose beacons can be tracked, each with its kind
  /// (`TrackedKind.register`): what the monitor tries after the built-in
  /// formats. A layout that cannot be tracked is left out (a region that
  /// names it is refused when the config is read).
  public var trackedLayouts: LayoutKinds {
    LayoutKinds(
      layouts.compactMap { section in
        guard let layout = section.layout, case .success(let kind) = TrackedKind.register(layout)
        else { return nil }
        return (layout, kind)
      })
  }

  /// `layout "acme"` -> "acme"; `nil` if the header is not a layout at all.
  static func layoutName(_ header: String) -> NameResult? {
    guard header == "layout" || header.hasPrefix("layout ") || header.hasPrefix("layout\"") else {
      return nil
    }
    let rest = ConfigValue.trim(header.dropFirst("layout".count))
    guard rest.count >= 2, rest.first == "\"", rest.last == "\"" else {
      return .failure("a layout header is [layout \"NAME\"] with the name in double quotes")
    }
    let name = String(rest.dropFirst().dropLast())
    guard !name.isEmpty, name.utf8.count <= 64 else {
      return .failure("a layout name is 1 to 64 bytes")
    }
    for s in name.unicodeScalars where s.value < 0x20 || s == "\"" || s == "\\" || s.value == 0x7F {
      return .failure("a layout name cannot hold quotes, backslashes or control characters")
    }
    if let builtIn = BeaconLayout.builtIn.first(where: {
      $0.name.lowercased() == name.lowercased()
    }) {
      return .failure(
        "'\(name)' is the built-in \(builtIn.name) layout (\(builtIn.layoutString)); "
          + "give yours its own name")
    }
    return .success(name)
  }
}
