"""installer/trim_icu.py: Qt answers the same with the trimmed ICU data (a third of it)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import PySide6
import pytest

ROOT = Path(__file__).resolve().parents[2]
QT_LIB = Path(PySide6.__file__).parent / "Qt" / "lib"

_spec = importlib.util.spec_from_file_location("trim_icu", ROOT / "installer" / "trim_icu.py")
trim_icu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(trim_icu)

# What Qt asks ICU for: collation, legacy codecs, case mapping, time zones.
QT_ICU_PROBE = r"""
import json
from PySide6.QtCore import QCollator, QDateTime, QLocale, QStringDecoder, QTimeZone
words = ["zebra", "Äpfel", "apple", "Bär", "ähnlich", "Zoo", "ö", "o", "p", "ı", "i"]
out = {f"collate {loc}": sorted(words, key=QCollator(QLocale(loc)).sortKey)
       for loc in ("de_DE", "sv_SE", "tr_TR", "ja_JP")}
out["codecs"] = sorted(QStringDecoder.availableCodecs())
out["shift_jis"] = QStringDecoder("Shift_JIS").isValid()
out["upper tr"] = QLocale("tr_TR").toUpper("istanbul")
berlin = QTimeZone(b"Europe/Berlin")
out["zone"] = [berlin.offsetFromUtc(QDateTime.fromSecsSinceEpoch(1700000000)),
               berlin.displayName(QTimeZone.TimeType.StandardTime,
                                  QTimeZone.NameType.LongName, QLocale("de_DE"))]
out["number de"] = QLocale("de_DE").toString(1234567.5, "f", 1)
out["icu data"] = [line.split()[-1] for line in open("/proc/self/maps")
                   if "libicudata" in line][0]
print(json.dumps(out))
"""

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the Linux bundle's ICU")


def qt_answers(library_dir: Path | None) -> dict:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    if library_dir is not None:  # found before the RUNPATH of PySide6's QtCore
        env["LD_LIBRARY_PATH"] = str(library_dir)
    proc = subprocess.run([sys.executable, "-c", QT_ICU_PROBE], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def trimmed(tmp_path_factory) -> Path:
    assert not trim_icu.missing_tools(), "Debian: apt-get install icu-devtools gcc"
    (source,) = QT_LIB.glob("libicudata.so.*")
    target = trim_icu.trim(source, tmp_path_factory.mktemp("icu"))
    assert target is not None
    return target


@pytest.mark.parametrize(("item", "dropped"), [
    ("coll/de.res", False), ("coll/ucadata.icu", False), ("zone/de.res", False),
    ("ibm-943_P15A-2003.cnv", False), ("cnvalias.icu", False), ("nfkc.nrm", False),
    ("root.res", False), ("pool.res", False), ("zoneinfo64.res", False),
    ("de.res", True), ("en_US.res", True), ("lang/de.res", True), ("unit/de.res", True),
    ("brkitr/cjdict.dict", True), ("translit/root.res", True), ("unames.icu", True),
    ("rfc3491.spp", True),
])
def test_what_is_dropped(item, dropped):
    assert trim_icu.dropped(item) is dropped


def test_trimmed_library_is_well_under_half_the_size(trimmed):
    (source,) = QT_LIB.glob("libicudata.so.*")
    assert trimmed.name == source.name
    assert trimmed.stat().st_size < 0.5 * source.stat().st_size
    assert trim_icu.data_symbol(trimmed)[0] == trim_icu.data_symbol(source)[0]


def test_qt_answers_the_same_with_the_trimmed_data(trimmed):
    full, trim = qt_answers(None), qt_answers(trimmed.parent)
    assert full.pop("icu data") != trim.pop("icu data") == str(trimmed)
    assert trim == full
    assert trim["collate sv_SE"][-1] == "ö"  # Swedish sorts ö last: real collation data
    assert trim["shift_jis"] and trim["upper tr"] == "İSTANBUL"
