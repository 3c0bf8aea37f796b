"""One clock: the store holds naive UTC timestamps; every run id is made here."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime

from engram.errors import InvalidInput


def now() -> datetime:
    """The current moment as naive UTC (the store's convention), never local time."""
    return datetime.now(UTC).replace(tzinfo=None)


def as_naive_utc(value: datetime | str | None, field: str = "as_of") -> datetime | None:
    """A datetime or ISO-8601 string as naive UTC (naive input is taken as UTC); None stays None.

    Anything else, or a string that does not parse, raises InvalidInput naming the field.
    """
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError as exc:
            raise InvalidInput(f"{field}: not an ISO-8601 timestamp: {value[:40]!r}") from exc
    if not isinstance(value, datetime):
        raise InvalidInput(f"{field}: expected an ISO-8601 timestamp, got {type(value).__name__}")
    try:
        return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
    except OverflowError as exc:  # 0001-01-01 with a positive offset, 9999-12-31 with a negative one
        raise InvalidInput(f"{field}: {value.isoformat()} is outside the representable range") from exc


def naive_utc_or_now(value: datetime | str | None, field: str = "as_of") -> datetime:
    """as_naive_utc, with now() for None."""
    moment = as_naive_utc(value, field)
    return now() if moment is None else moment


# The logical times a consolidation run accepts: a run reaches ENGRAM_RETENTION_DAYS (<= 3650) and the
# recluster window back from as_of, and Python's dates end at 9999-12-31, so both ends keep a margin.
# Only a run's as_of is held to it: 9999-12-31 stays a valid valid_to or search as_of elsewhere.
AS_OF_MIN = datetime(1900, 1, 1)
AS_OF_MAX = datetime(9998, 12, 31, 23, 59, 59)


def run_as_of(value: datetime | str | None, option: str = "--as-of") -> datetime:
    """naive_utc_or_now for a consolidation run, refused (InvalidInput naming as_of) outside AS_OF_MIN..AS_OF_MAX."""
    moment = naive_utc_or_now(value)
    if not AS_OF_MIN <= moment <= AS_OF_MAX:
        raise InvalidInput(f"as_of: {option} {moment.isoformat()} is outside the accepted range "
                           f"{AS_OF_MIN.date().isoformat()} .. {AS_OF_MAX.date().isoformat()} (UTC)")
    return moment


def run_id(kind: str, moment: datetime | None = None, key: str | None = None) -> str:
    """A run id `<kind>-<YYYYmmddTHHMMSS>-<8 hex>`.

    With `key` the suffix is derived from it, so the same (kind, key) always gives the same id (a
    nightly run re-run for the same as_of resumes its run); without, it is random (a run by hand).
    """
    from engram.text.normalize import stable_id

    moment = naive_utc_or_now(moment)
    suffix = stable_id("r", key)[-8:] if key is not None else uuid.uuid4().hex[:8]
    return f"{kind}-{moment:%Y%m%dT%H%M%S}-{suffix}"


def readable(value: datetime | date, minutes: bool = False) -> str:
    """A day as a reader writes it ('7 May 2023'; with `minutes`, '7 May 2023 13:56' unless it is midnight):
    fewer tokens than ISO 8601, and the words a question about it uses."""
    day = f"{value.day} {value:%B %Y}"
    if minutes and isinstance(value, datetime) and value.time() != datetime.min.time():
        return f"{day} {value:%H:%M}"
    return day
