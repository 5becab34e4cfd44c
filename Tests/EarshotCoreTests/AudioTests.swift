import EarshotTestSupport
import XCTest

@testable import EarshotCore

final class PatternSynthTests: XCTestCase {
  let rate = 48_000

  func render(_ pattern: SoundPattern, frames: Int, channels: Int = 1, block: Int = 480)
    -> [Int16]
  {
    var synth = PatternSynth(pattern: pattern, sampleRate: rate)
    var out = [Int16](repeating: 0, count: frames * channels)
    out.withUnsafeMutableBufferPointer { buf in
      var done = 0
      while done < frames {
        let n = min(block, frames - done)
        let slice = UnsafeMutableBufferPointer(rebasing: buf[(done * channels)...])
        synth.fill(slice, frames: n, channels: channels)
        done += n
      }
    }
    return out
  }

  func dominant(_ s: ArraySlice<Int16>) -> Double {
    SignalMeasure.dominantFrequency(s, sampleRate: rate, range: 300...2500, step: 5)
  }

  func testRingAlternatesTwoTonesAMajorThirdApartThenRests() {
    let s = render(.ring(frequency: 800), frames: 2 * rate)
    // 50 ms slices, skipping 5 ms at each edge where the tones change.
    XCTAssertEqual(dominant(s[240..<2160]), 800, accuracy: 10)
    XCTAssertEqual(dominant(s[2640..<4560]), 1000, accuracy: 10)
    XCTAssertEqual(dominant(s[5040..<6960]), 800, accuracy: 10)
    XCTAssertGreaterThan(SignalMeasure.rms(s[0..<57_600]), 0.4)
    XCTAssertEqual(SignalMeasure.rms(s[57_700..<96_000]), 0)
    XCTAssertEqual(
      PatternSynth(pattern: .ring(frequency: 800), sampleRate: rate).loopFrames, 96_000)
  }

  func testRingFrequencyIsConfigurable() {
    let s = render(.ring(frequency: 600), frames: rate / 2)
    XCTAssertEqual(dominant(s[240..<2160]), 600, accuracy: 10)
    XCTAssertEqual(dominant(s[2640..<4560]), 750, accuracy: 10)
  }

  func testChirpRisesFromTheFrequencyToTwiceIt() {
    let s = render(.chirp(frequency: 1000), frames: rate)
    let early = dominant(s[480..<4800])  // 10-100 ms
    let middle = dominant(s[10_800..<13_200])  // around 250 ms
    let late = dominant(s[19_200..<23_520])  // 400-490 ms
    XCTAssertGreaterThan(early, 990)
    XCTAssertLessThan(early, 1250)
    XCTAssertEqual(middle, 1500, accuracy: 60)
    XCTAssertGreaterThan(late, 1750)
    XCTAssertLessThan(late, 2010)
    XCTAssertEqual(SignalMeasure.rms(s[24_100..<36_000]), 0)  // the pause
  }

  func testBeepIsOneSteadyTone() {
    let s = render(.beep(frequency: 440), frames: rate)
    XCTAssertEqual(dominant(s[480..<4800]), 440, accuracy: 5)
  }

  func testBlockSizeDoesNotChangeTheSound() {
    let whole = render(.ring(frequency: 800), frames: 20_000, block: 20_000)
    let blocks = render(.ring(frequency: 800), frames: 20_000, block: 137)
    XCTAssertEqual(whole, blocks)
  }

  func testLoopsExactly() {
    for pattern in [
      SoundPattern.ring(frequency: 800), .chirp(frequency: 900), .beep(frequency: 700),
    ] {
      let loop = PatternSynth(pattern: pattern, sampleRate: rate).loopFrames
      let s = render(pattern, frames: 2 * loop)
      XCTAssertEqual(Array(s[0..<loop]), Array(s[loop...]), pattern.name)
    }
  }

  func testEveryChannelGetsTheSameSample() {
    let s = render(.chirp(frequency: 1000), frames: 4800, channels: 2)
    for i in stride(from: 0, to: s.count, by: 2) { XCTAssertEqual(s[i], s[i + 1]) }
    XCTAssertNotEqual(s.max(), 0)
  }

  func testStartsAndStopsWithoutAClick() {
    let s = render(.beep(frequency: 1000), frames: rate / 2)
    XCTAssertEqual(s[0], 0)
    // Largest step of a 1 kHz sine at 0.7 full scale: 0.7·32767·2π·1000/48000 ≈ 3000.
    var biggest = 0
    for i in 1..<s.count { biggest = max(biggest, abs(Int(s[i]) - Int(s[i - 1]))) }
    XCTAssertLessThan(biggest, 3100)
    XCTAssertEqual(s[14_399], 0)  // last frame of the 0.3 s tone is faded out
    XCTAssertLessThanOrEqual(Int(s.map { abs(Int($0)) }.max()!), Int(0.7 * 32767) + 1)
  }

  func testNamedPatternsAndDefaults() {
    XCTAssertEqual(SoundPattern.named("ring"), .ring(frequency: 800))
    XCTAssertEqual(SoundPattern.named("chirp", frequency: 1200), .chirp(frequency: 1200))
    XCTAssertNil(SoundPattern.named("siren"))
    XCTAssertEqual(
      SoundPattern.names.compactMap { SoundPattern.named($0)?.name }, SoundPattern.names)
  }
}

final class GainRampTests: XCTestCase {
  func testRisesInDecibelsThenHolds() {
    let ramp = GainRamp(seconds: 4, startDecibels: -30)
    XCTAssertEqual(ramp.gain(at: 0), 0.031_62, accuracy: 1e-4)
    XCTAssertEqual(20 * log10(ramp.gain(at: 2)), -15, accuracy: 1e-9)
    XCTAssertEqual(ramp.gain(at: 4), 1)
    XCTAssertEqual(ramp.gain(at: 60), 1)
    var last = 0.0
    for t in stride(from: 0.0, through: 5, by: 0.1) {
      XCTAssertGreaterThanOrEqual(ramp.gain(at: t), last)
      last = ramp.gain(at: t)
    }
    XCTAssertEqual(ramp.gain(atFrame: 96_000, sampleRate: 48_000), ramp.gain(at: 2))
  }

  func testZeroLengthRampIsFullGain() {
    XCTAssertEqual(GainRamp(seconds: 0).gain(at: 0), 1)
    XCTAssertEqual(GainRamp(seconds: -3).gain(at: 0), 1)
  }

  func testRendererAppliesTheRampAndRewindRestartsIt() {
    let rate = 8000
    var r = AlertRenderer(
      source: .pattern(PatternSynth(pattern: .beep(frequency: 500), sampleRate: rate)),
      channels: 1, ramp: GainRamp(seconds: 2, startDecibels: -20))
    var buf = [Int16](repeating: 0, count: rate * 3)
    buf.withUnsafeMutableBufferPointer { b in
      for i in 0..<30 {
        r.render(into: UnsafeMutableBufferPointer(rebasing: b[(i * 800)...]), frames: 800)
      }
    }
    XCTAssertEqual(r.framesRendered, rate * 3)
    XCTAssertEqual(r.elapsed, 3)
    let quiet = SignalMeasure.rms(buf[80..<2000])  // first beep, at about -20 dB
    let loud = SignalMeasure.rms(buf[20_080..<22_000])  // after the ramp: first beep past 2 s
    XCTAssertEqual(20 * log10(quiet / loud), -19, accuracy: 1.5)
    r.rewind()
    XCTAssertEqual(r.framesRendered, 0)
  }
}

final class SampleLoopTests: XCTestCase {
  func testMonoGoesToEveryChannelAndLoops() {
    var loop = SampleLoop(samples: [1, 2, 3], channels: 1, sampleRate: 8000)!
    var out = [Int16](repeating: 0, count: 14)
    out.withUnsafeMutableBufferPointer { loop.fill($0, frames: 7, channels: 2) }
    XCTAssertEqual(out, [1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3, 1, 1])
  }

  func testStereoStaysStereoAndGainScales() {
    var loop = SampleLoop(samples: [1000, -1000, 2000, -2000], channels: 2, sampleRate: 8000)!
    var out = [Int16](repeating: 0, count: 4)
    out.withUnsafeMutableBufferPointer {
      loop.fill($0, frames: 2, channels: 2, gainStart: 0.5, gainEnd: 0.5)
    }
    XCTAssertEqual(out, [500, -500, 1000, -1000])
  }

  func testRejectsNothingToPlay() {
    XCTAssertNil(SampleLoop(samples: [], channels: 1, sampleRate: 8000))
    XCTAssertNil(SampleLoop(samples: [1], channels: 2, sampleRate: 8000))
    XCTAssertNil(SampleLoop(samples: [1], channels: 0, sampleRate: 8000))
  }
}

final class VolumeScaleTests: XCTestCase {
  func testNoDecibelRangeIsLinearInRawValues() {
    // PulseAudio's ALSA plugin: Master is 0…65536 with no dB information.
    let s = VolumeScale(raw: 0...65536, decibels: nil)
    XCTAssertEqual(s.kind, .raw)
    XCTAssertEqual(s.normalized(raw: 32768), 0.5)
    XCTAssertEqual(s.raw(for: 0.37), 24248)
    XCTAssertEqual(s.raw(for: 1.2), 65536)
    XCTAssertEqual(s.raw(for: -1), 0)
    XCTAssertEqual(VolumeScale(raw: 0...31, decibels: nil).raw(for: 0.5, rounding: .up), 16)
    XCTAssertEqual(VolumeScale(raw: 0...31, decibels: nil).raw(for: 0.5, rounding: .down), 15)
    XCTAssertEqual(VolumeScale(raw: 5...5, decibels: nil).normalized(raw: 5), 0)
  }

  func testAnEmptyDecibelRangeFallsBackToRaw() {
    XCTAssertEqual(VolumeScale(raw: 0...100, decibels: 0...0).kind, .raw)
    XCTAssertEqual(VolumeScale(raw: 0...100, decibels: 100...(-100 + 200)).kind, .raw)
  }

  func testUpTo24DecibelsIsLinearInDecibels() {
    let s = VolumeScale(raw: 0...31, decibels: -2400...0)
    XCTAssertEqual(s.kind, .linearDecibels)
    XCTAssertEqual(s.normalized(decibels: -1200), 0.5)
    XCTAssertEqual(s.normalized(decibels: -2400), 0)
    XCTAssertEqual(s.decibels(for: 0.25), -1800)
    XCTAssertEqual(VolumeScale(raw: 0...31, decibels: -2401...0).kind, .cubic)
  }

  func testWideRangesUseTheCubeRootOfAmplitude() {
    let s = VolumeScale(raw: 0...63, decibels: -6400...0)
    XCTAssertEqual(s.kind, .cubic)
    XCTAssertEqual(s.normalized(decibels: 0), 1)
    XCTAssertEqual(s.normalized(decibels: -6400), 0, accuracy: 1e-12)
    // 10^(-20/60) = 0.4642, stretched over the floor 10^(-64/60) = 0.0858.
    XCTAssertEqual(s.normalized(decibels: -2000), 0.4139, accuracy: 1e-4)
    for v in stride(from: 0.05, through: 1, by: 0.05) {
      XCTAssertEqual(s.normalized(decibels: s.decibels(for: v)), v, accuracy: 0.002)
    }
    XCTAssertEqual(s.decibels(for: 0), -6400)
  }

  func testAMuteMinimumIsNotStretched() {
    let s = VolumeScale(raw: 0...255, decibels: VolumeScale.muteDecibels...0)
    XCTAssertEqual(s.normalized(decibels: -6000), 0.1, accuracy: 1e-12)
    XCTAssertEqual(s.decibels(for: 0.1), -6000)
    XCTAssertEqual(s.decibels(for: 0.5), -1806)
    XCTAssertEqual(s.decibels(for: 0), VolumeScale.muteDecibels)
  }

  func testRoundingDirection() {
    let s = VolumeScale(raw: 0...63, decibels: -6400...0)
    XCTAssertLessThanOrEqual(s.decibels(for: 0.5, rounding: .down), s.decibels(for: 0.5))
    XCTAssertGreaterThanOrEqual(s.decibels(for: 0.5, rounding: .up), s.decibels(for: 0.5))
  }
}

final class VolumeChangeTests: XCTestCase {
  func testParsesAbsoluteAndRelativeValues() {
    XCTAssertEqual(VolumeChange.parse("0.37"), .absolute(0.37))
    XCTAssertEqual(VolumeChange.parse("1"), .absolute(1))
    guard case .absolute(let p) = VolumeChange.parse("37%") else { return XCTFail() }
    XCTAssertEqual(p, 0.37, accuracy: 1e-12)
    guard case .relative(let up) = VolumeChange.parse("+5%") else { return XCTFail() }
    XCTAssertEqual(up, 0.05, accuracy: 1e-12)
    guard case .relative(let down) = VolumeChange.parse("-5%") else { return XCTFail() }
    XCTAssertEqual(down, -0.05, accuracy: 1e-12)
    XCTAssertEqual(VolumeChange.parse("-0.1"), .relative(-0.1))
  }

  func testRejectsWhatIsNotAVolume() {
    for bad in ["", "%", "+", "-", "1.5", "150%", "abc", "1e3", "0.3.1", " 0.3", "nan", "inf"] {
      XCTAssertNil(VolumeChange.parse(bad), bad)
    }
  }

  func testAppliesAndClamps() {
    XCTAssertEqual(VolumeChange.relative(0.05).applied(to: 0.98), 1)
    XCTAssertEqual(VolumeChange.relative(-0.05).applied(to: 0.02), 0)
    XCTAssertEqual(VolumeChange.relative(0.25).applied(to: 0.5), 0.75)
    XCTAssertEqual(VolumeChange.absolute(0.2).applied(to: 0.9), 0.2)
    XCTAssertEqual(VolumeChange.relative(0.05).rounding(from: 0.5), .up)
    XCTAssertEqual(VolumeChange.relative(-0.05).rounding(from: 0.5), .down)
  }

  func testStatePrintsAsOneJSONLine() {
    XCTAssertEqual(
      VolumeState(volume: 0.37, muted: false).jsonLine, #"{"volume":0.37,"muted":false}"#)
    XCTAssertEqual(VolumeState(volume: 1, muted: true).jsonLine, #"{"volume":1.00,"muted":true}"#)
  }
}

final class SignalMeasureTests: XCTestCase {
  func testLevelAndOnset() {
    var s = [Int16](repeating: 0, count: 1000)
    for i in 500..<1000 { s[i] = i % 2 == 0 ? 16384 : -16384 }
    XCTAssertEqual(SignalMeasure.onset(s[...], threshold: 0.1), 500)
    XCTAssertNil(SignalMeasure.onset(s[0..<500], threshold: 0.1))
    XCTAssertEqual(SignalMeasure.rms(s[500...]), 0.5)
    XCTAssertEqual(SignalMeasure.dbfs(s[500...]), -6.02, accuracy: 0.01)
    XCTAssertEqual(SignalMeasure.dbfs(s[0..<500]), -.infinity)
  }
}

final class ResampleTests: XCTestCase {
  func testKeepsTheFrequencyAndTheDuration() {
    var synth = PatternSynth(pattern: .beep(frequency: 1320), sampleRate: 44_100)
    var s = [Int16](repeating: 0, count: 13_230)  // 0.3 s: the beep's tone
    s.withUnsafeMutableBufferPointer { synth.fill($0, frames: 13_230, channels: 1) }
    let out = Resample.linear(s, channels: 1, from: 44_100, to: 48_000)
    XCTAssertEqual(out.count, 14_400)
    XCTAssertEqual(
      SignalMeasure.dominantFrequency(out[480..<4800], sampleRate: 48_000, range: 1200...1450), 1320
    )
  }

  func testStereoChannelsStaySeparateAndSameRateIsACopy() {
    let s: [Int16] = [0, 100, 1000, 1100]
    XCTAssertEqual(
      Resample.linear(s, channels: 2, from: 8000, to: 16_000),
      [0, 100, 500, 600, 1000, 1100, 1000, 1100])
    XCTAssertEqual(Resample.linear(s, channels: 2, from: 8000, to: 8000), s)
  }
}
