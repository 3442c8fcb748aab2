"""Rebuild Qt's libicudata without the ICU data Qt never reads (Linux bundle: 31 → 12 MB).

    python installer/trim_icu.py SOURCE_LIB TARGET_DIR

PySide6's QtCore links ICU, whose data library carries everything ICU can do: locale
display names, units, currencies, transliterators, break dictionaries. Qt uses ICU
only for collation (``QCollator``, file-dialog sorting), legacy text codecs
(``QStringDecoder``), normalisation, case mapping and time-zone names, and formats
dates, numbers and language names from its own CLDR tables. So the data keeps the
collation and zone trees, the converters, normalisation and the resource-bundle core,
and drops the rest (tests/installer/test_trim_icu.py compares Qt's answers).

Needs ``icupkg`` (Debian: icu-devtools) and a C compiler driver (``cc``) to link the
new library; without them :func:`trim` says so and returns None, and the bundle keeps
the full library. The data package format is ICU's own, so ``icupkg`` of another ICU
version handles it.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# Trees and items Qt never reads (see the module docstring).
DROPPED_TREES = ("brkitr", "curr", "lang", "rbnf", "region", "translit", "unit")
DROPPED_ITEMS = ("unames.icu", "uemoji.icu", "ulayout.icu", "confusables.cfu")
# Top-level .res items that are not one locale's data.
KEPT_TOP_LEVEL = {"root", "res_index", "pool", "likelySubtags", "supplementalData",
                  "metadata", "keyTypeData", "icuver", "icustd", "numberingSystems",
                  "plurals", "pluralRanges", "timezoneTypes", "metaZones", "windowsZones",
                  "zoneinfo64", "currencyNumericCodes", "dayPeriods", "genderList",
                  "grammaticalFeatures", "langInfo", "units"}


def missing_tools() -> list[str]:
    return [tool for tool in ("icupkg", "cc", "nm") if shutil.which(tool) is None]


def data_symbol(lib: Path) -> tuple[str, int, int]:
    """(name, file offset, size) of the ``icudtNN_dat`` blob in a libicudata."""
    out = subprocess.run(["nm", "-D", "-S", str(lib)], capture_output=True, text=True,
                         check=True).stdout
    match = re.search(r"^([0-9a-f]+) ([0-9a-f]+) [RD] (icudt\d+_dat)$", out, re.M)
    if match is None:
        raise ValueError(f"{lib}: no icudtNN_dat symbol")
    address, size, name = int(match[1], 16), int(match[2], 16), match[3]
    sections = subprocess.run(["readelf", "-S", "-W", str(lib)], capture_output=True,
                              text=True, check=True).stdout
    for line in sections.splitlines():
        fields = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+"
                          r"([0-9a-f]+)", line)
        if fields:
            start, offset, length = (int(fields[i], 16) for i in (2, 3, 4))
            if start <= address < start + length:
                return name, address - start + offset, size
    raise ValueError(f"{lib}: {name} is in no section")


def dropped(item: str) -> bool:
    """Whether a package item (``coll/de.res``, ``en.res``, …) is left out."""
    if "/" in item:
        return item.split("/", 1)[0] in DROPPED_TREES
    stem, _, suffix = item.rpartition(".")
    if item in DROPPED_ITEMS or suffix == "spp":  # stringprep profiles (IDNA, SASL)
        return True
    return suffix == "res" and stem not in KEPT_TOP_LEVEL  # a locale's display data


def trim(source: Path, target_dir: Path) -> Path | None:
    """Write the trimmed copy of ``source`` into ``target_dir``; None without the tools."""
    if missing := missing_tools():
        print(f"trim_icu: {', '.join(missing)} not found; keeping the full ICU data "
              "(Debian: apt-get install icu-devtools gcc)")
        return None
    name, offset, size = data_symbol(source)
    with source.open("rb") as f:
        f.seek(offset)
        blob = f.read(size)
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / source.name
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        package = work / f"{name[:-4]}l.dat"  # icudt73l: little-endian, as built
        package.write_bytes(blob)
        listing = subprocess.run(["icupkg", "-l", str(package)], capture_output=True,
                                 text=True, check=True).stdout.split()
        remove = work / "remove.txt"
        remove.write_text("\n".join(item for item in listing if dropped(item)) + "\n")
        subprocess.run(["icupkg", "-r", str(remove), str(package)], check=True,
                       capture_output=True)
        asm = work / "data.s"
        asm.write_text(f'\t.section .rodata\n\t.global {name}\n\t.type {name}, @object\n'
                       f'\t.balign 16\n{name}:\n\t.incbin "{package}"\n'
                       f'\t.size {name}, . - {name}\n\t.section .note.GNU-stack,"",@progbits\n')
        subprocess.run(["cc", "-shared", "-nostdlib", f"-Wl,-soname,{source.name}",
                        "-o", str(target), str(asm)], check=True)
    print(f"trim_icu: {target} {target.stat().st_size >> 20} MB "
          f"(was {source.stat().st_size >> 20} MB)")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("target_dir", type=Path)
    args = parser.parse_args(argv)
    return 0 if trim(args.source, args.target_dir) else 1


if __name__ == "__main__":
    sys.exit(main())
