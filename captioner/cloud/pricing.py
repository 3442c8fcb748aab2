"""Hourly instance prices, for the estimate before deploy and the running cost.

The bundled table is ``resources/prices.json`` (format documented in its ``_format``
key): ``{"currency": "USD", "fallback_region": "us-east-1",
"regions": {"<region>": {"<instance type>": <USD per instance-hour>}}}``. A file of the
same shape at ``<config dir>/prices.json`` overrides entries one by one, so users can
correct a price without copying the whole table. Prices are approximate: the AWS
pricing page is the truth, and a region missing from the table falls back to the
fallback region with ``exact=False``.
"""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captioner.settings import config_dir

log = logging.getLogger(__name__)

PRICES_FILE = "prices.json"


def bundled_prices_path() -> Path:
    """resources/prices.json in a checkout/editable install, or inside a PyInstaller bundle."""
    base = getattr(sys, "_MEIPASS", None)
    if base:
        return Path(base) / "resources" / PRICES_FILE
    return Path(__file__).resolve().parents[2] / "resources" / PRICES_FILE


def user_prices_path() -> Path:
    return config_dir() / PRICES_FILE


@dataclass(frozen=True, slots=True)
class CostEstimate:
    """Estimated hourly cost of a plan: a range when the pool has types of different price."""

    low: float | None
    high: float | None
    currency: str
    exact: bool  # False when some type has no price or the region fell back
    unknown_types: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Price:
    hourly: float  # per instance-hour
    currency: str
    exact: bool  # False: taken from the fallback region


@dataclass
class PriceTable:
    regions: dict[str, dict[str, float]] = field(default_factory=dict)
    currency: str = "USD"
    fallback_region: str = "us-east-1"

    def lookup(self, instance_type: str, region: str) -> Price | None:
        table = self.regions.get(region, {})
        if instance_type in table:
            return Price(table[instance_type], self.currency, True)
        fallback = self.regions.get(self.fallback_region, {})
        if instance_type in fallback:
            return Price(fallback[instance_type], self.currency, region == self.fallback_region)
        return None

    def hourly(self, instance_type: str, region: str) -> float | None:
        price = self.lookup(instance_type, region)
        return price.hourly if price else None

    def pool_range(self, instance_types: tuple[str, ...] | list[str], region: str
                   ) -> tuple[float, float] | None:
        """Cheapest and dearest known price in a pool (any type may win the capacity race)."""
        known = [p for p in (self.hourly(t, region) for t in instance_types) if p is not None]
        return (min(known), max(known)) if known else None

    def merged(self, data: dict[str, Any], source: str) -> PriceTable:
        """A copy with ``data``'s entries laid over this table; bad entries are skipped."""
        regions = {r: dict(t) for r, t in self.regions.items()}
        raw_regions = data.get("regions", {})
        if not isinstance(raw_regions, dict):
            log.warning("! %s: 'regions' is not an object; ignored", source)
            raw_regions = {}
        for region, table in raw_regions.items():
            if not isinstance(table, dict):
                log.warning("! %s: prices for %s are not an object; ignored", source, region)
                continue
            for itype, value in table.items():
                if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
                    regions.setdefault(region, {})[itype] = float(value)
                else:
                    log.warning("! %s: price of %s in %s is not a number; ignored",
                                source, itype, region)
        currency = data.get("currency", self.currency)
        fallback = data.get("fallback_region", self.fallback_region)
        return PriceTable(
            regions=regions,
            currency=currency if isinstance(currency, str) else self.currency,
            fallback_region=fallback if isinstance(fallback, str) else self.fallback_region,
        )


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("! price table %s unreadable (%s); ignored", path, exc)
        return None
    if not isinstance(data, dict):
        log.warning("! price table %s is not an object; ignored", path)
        return None
    return data


def load_prices(bundled: Path | None = None, user: Path | None = None) -> PriceTable:
    """Bundled table overlaid with the user's copy; never raises (an empty table at worst)."""
    table = PriceTable()
    for path in (bundled or bundled_prices_path(), user or user_prices_path()):
        data = _read(path)
        if data is not None:
            table = table.merged(data, str(path))
    return table


def format_cost(amount: float | None, currency: str = "USD") -> str:
    if amount is None:
        return "unknown"
    symbol = "$" if currency == "USD" else f"{currency} "
    return f"{symbol}{amount:,.2f}"


@dataclass(frozen=True, slots=True)
class InstanceOption:
    """One instance type the set-up offers for the pool, with its hourly price if known."""

    instance_type: str
    price: Price | None


def instance_options(prices: PriceTable, region: str,
                     preferred: tuple[str, ...] | list[str] = ()) -> list[InstanceOption]:
    """Every type with a price for ``region`` (or its fallback), cheapest first; the types in
    ``preferred`` (the current pool) come first in their order, priced or not."""
    known = set(prices.regions.get(region, {})) | set(
        prices.regions.get(prices.fallback_region, {}))
    rest = sorted(known - set(preferred),
                  key=lambda t: (prices.hourly(t, region) or 0.0, t))
    return [InstanceOption(t, prices.lookup(t, region)) for t in (*preferred, *rest)]
