"""The DB seam: the only module that imports duckdb. Named SQL from sql/, $params only."""

from __future__ import annotations

import hashlib
import logging
import os
import random
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

if TYPE_CHECKING:  # a CLI search never needs polars: importing it costs ~0.2 s of a cold start
    import polars as pl

from engram.errors import EngramError, StoreError
from engram.store import presence
from engram.store.presence import missing_store_error

# engram.sql is the repo's sql/ folder (mapped by pyproject's package-dir), in a checkout and in a wheel
SQL_DIR = Path(resources.files("engram.sql"))

Connection = duckdb.DuckDBPyConnection
log = logging.getLogger(__name__)


@cache
def sql(name: str | Path) -> str:
    """The text of sql/<name>.sql; a Path names a file outside the package (the benchmarks' own SQL)."""
    path = name if isinstance(name, Path) else SQL_DIR / f"{name}.sql"
    if not path.is_file():
        raise StoreError(f"named SQL not found: {name} (looked in {SQL_DIR})")
    return path.read_text()


def _is_lock_error(exc: Exception) -> bool:
    text = str(exc).lower()
    return "could not set lock" in text or "conflicting lock" in text or "database is locked" in text


@contextmanager
def connect(
    path: Path | str, read_only: bool = False, lock_timeout_s: float = 30.0
) -> Iterator[Connection]:
    """Open the store, waiting (bounded, with jittered backoff) while another process holds it.

    A file that exists but is not a DuckDB database raises StoreError; it is never recreated.
    """
    path = Path(path)
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    elif not path.exists():
        raise StoreError(f"store not found: {path} (run `engram init` first)")
    creating = not read_only and not path.exists()
    deadline = time.monotonic() + lock_timeout_s
    delay = 0.02
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only)
            break
        except duckdb.Error as exc:
            if _is_lock_error(exc) and time.monotonic() < deadline:
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 0.2)  # short: a waiting reader should get in soon after a commit
                continue
            if _is_lock_error(exc):
                raise StoreError(
                    f"store {path} is locked by another process for more than {lock_timeout_s}s"
                ) from exc
            full = "no space left" in str(exc).lower()
            if full and creating and _is_empty_file(path):  # the disk filled as it was created: leave no 0-byte store
                path.unlink(missing_ok=True)
            if _is_empty_file(path) and not full:  # a crash before the first write, or a truncated copy
                raise StoreError(f"cannot open store {path}: the file is empty (0 bytes), not a DuckDB database; "
                                 "restore it from a backup, or remove it and ingest again") from exc
            raise StoreError(f"cannot open store {path}: {exc}") from exc
    try:
        yield con
    finally:
        con.close()


def _is_empty_file(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size == 0
    except OSError:
        return False


def is_lock_timeout(exc: BaseException) -> bool:
    """Whether exc is connect's StoreError for a store another process kept locked past the wait."""
    return isinstance(exc, StoreError) and isinstance(exc.__cause__, duckdb.Error) and _is_lock_error(exc.__cause__)


def is_driver_error(exc: BaseException) -> bool:
    """Whether exc comes from DuckDB itself (for callers that may not import duckdb)."""
    return isinstance(exc, duckdb.Error)


@contextmanager
def transaction(con: Connection) -> Iterator[Connection]:
    """One DuckDB transaction: committed on success, rolled back on any error."""
    con.execute("begin transaction")
    try:
        yield con
    except BaseException:
        con.execute("rollback")
        raise
    con.execute("commit")


def query(con: Connection, name: str, **params: Any) -> pl.DataFrame:
    """Run a named query and return its rows as a polars DataFrame."""
    return con.sql(sql(name), params=params or None).pl()


def query_arrow(con: Connection, name: str, **params: Any) -> pa.Table:
    """Run a named query and return its rows as an Arrow table."""
    return con.sql(sql(name), params=params or None).to_arrow_table()


def query_batches(con: Connection, name: str, batch_size: int = 65_536, **params: Any) -> pa.RecordBatchReader:
    """Run a named query and stream its rows as Arrow record batches (no full copy in memory)."""
    return con.sql(sql(name), params=params or None).to_arrow_reader(batch_size)


ANALYST_STATEMENTS = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}


class AnalystQueryLimit(EngramError):
    """An analyst's query ran past `engram sql`'s time or memory limit."""

    code = "query_limit"


def run_analyst_query(con: Connection, text: str, timeout_s: float | None = None) -> pa.Table | None:
    """An analyst's own SQL (`engram sql`), run as typed on a read-only snapshot; None for a statement
    that returns no rows. The one place SQL does not come from sql/: the user wrote it.

    Only queries run (select, with, from, describe, show, summarize, explain): a COPY, ATTACH, SET,
    INSTALL or any other statement raises InvalidInput naming it, before anything runs. A query still
    running after timeout_s seconds is interrupted, and one that needs more memory than the
    connection's memory_limit fails: both raise AnalystQueryLimit naming the setting to raise.
    """
    from engram.errors import InvalidInput

    for statement in con.extract_statements(text):
        if statement.type not in ANALYST_STATEMENTS:
            kind = statement.type.name.replace("_STATEMENT", "").lower()
            raise InvalidInput(f"query: only queries run on the read snapshot ({kind} statements do not); "
                               "an operator opens the live store with the duckdb CLI (README, Ad hoc SQL)")
    with _interrupt_after(con, timeout_s) as fired:
        try:
            rel = con.sql(text)
            return None if rel is None else rel.to_arrow_table()
        except duckdb.InterruptException:
            if not fired.is_set():
                raise
            raise AnalystQueryLimit(
                f"query: stopped after {timeout_s:g} s, the limit ENGRAM_SQL_TIMEOUT_S sets; narrow the query "
                "(a where clause, a limit) or raise ENGRAM_SQL_TIMEOUT_S") from None
        except duckdb.OutOfMemoryException as exc:
            raise AnalystQueryLimit(
                f"query: needs more memory than ENGRAM_SQL_MEMORY_LIMIT allows ({str(exc).strip().splitlines()[0]}); "
                "narrow the query or raise ENGRAM_SQL_MEMORY_LIMIT") from None


@contextmanager
def _interrupt_after(con: Connection, timeout_s: float | None) -> Iterator[threading.Event]:
    """Interrupt the connection's running statement after timeout_s seconds (None: never); the event
    says whether it did."""
    fired = threading.Event()
    if timeout_s is None:
        yield fired
        return

    def interrupt() -> None:
        fired.set()
        con.interrupt()

    timer = threading.Timer(timeout_s, interrupt)
    timer.daemon = True
    timer.start()
    try:
        yield fired
    finally:
        timer.cancel()
        timer.join()


def rows(con: Connection, name: str, **params: Any) -> list[tuple]:
    """Run a named query and return its rows as tuples."""
    return con.execute(sql(name), params or None).fetchall()


def execute(con: Connection, name: str, **params: Any) -> None:
    """Run one named statement."""
    con.execute(sql(name), params or None)


@contextmanager
def registered(con: Connection, name: str, frame: pl.DataFrame | pa.Table) -> Iterator[None]:
    """Expose a DataFrame to SQL as `name` for a bulk statement, then unregister it."""
    con.register(name, frame)
    try:
        yield
    finally:
        con.unregister(name)


def migrate(con: Connection) -> list[str]:
    """Apply sql/schema/*.sql in order (idempotent DDL), record versions, refresh views."""
    execute(con, "queries/store/create_schema_migrations")
    applied = {v for (v,) in rows(con, "queries/store/applied_migrations")}
    newly: list[str] = []
    for path in sorted((SQL_DIR / "schema").glob("*.sql")):
        text = path.read_text()
        with transaction(con):
            con.execute(text)  # files are idempotent, so re-running an applied one is harmless
            if path.stem not in applied:
                checksum = hashlib.sha256(text.encode()).hexdigest()
                execute(con, "queries/store/record_migration", version=path.stem, checksum=checksum)
                newly.append(path.stem)
    for path in sorted((SQL_DIR / "views").glob("*.sql")):
        con.execute(path.read_text())
    return newly


_migrated: set[str] = set()  # store paths this process has migrated
_current_schema: set[str] = set()  # stores (path:inode) a reader of this process found fully migrated
_held: dict[str, int] = {}  # store paths held open by held_open (nesting depth)
_held_as: dict[tuple[str, str], str] = {}  # (cwd, db_path as given) -> resolved path, while held


def forget(path: Path | str) -> None:
    """This process removed the store at path on purpose: a later open may create it afresh."""
    presence.forget(path)


@contextmanager
def open_store(settings: Any, read_only: bool = False) -> Iterator[Connection]:
    """Connect to settings.db_path; the first writable connection of a process migrates.

    With ENGRAM_SHARDS > 1 the base path holds no tenant: opening it means a caller forgot to route
    by tenant (engram.store.sharding.for_tenant), so it is refused instead of silently empty.
    """
    if getattr(settings, "shards", 1) > 1 and ".shard-" not in Path(settings.db_path).name:
        raise StoreError(
            f"ENGRAM_SHARDS={settings.shards}: {settings.db_path} is the unsharded path; "
            "open the tenant's shard (engram.store.sharding.for_tenant)"
        )
    if (held := _held_as.get((os.getcwd(), str(settings.db_path)))) and not read_only:
        # held open (so opened, migrated and present): share the open database without the
        # path checks, ~0.3 ms saved on each of the ~40 short connections of a tenant's night; one stat
        # still stops a night whose store was removed (its writes would go to the unlinked file)
        if not os.path.exists(held):
            raise missing_store_error(settings.db_path, "it was removed while engram was using it")
        con = duckdb.connect(held)
        try:
            yield con
        finally:
            con.close()
        return
    resolved = str(Path(settings.db_path).resolve())
    if presence.was_present(resolved) and not Path(settings.db_path).exists():  # never recreate a store deleted mid-run
        raise missing_store_error(settings.db_path, "it was removed while engram was using it")
    with connect(settings.db_path, read_only=read_only, lock_timeout_s=settings.lock_timeout_s) as con:
        if not read_only:
            path = Path(settings.db_path).resolve()
            key = f"{path}:{path.stat().st_ino}"  # a file recreated at the same path migrates again
            if key not in _migrated:
                migrate(con)
                _migrated.add(key)
        presence.note_present(resolved)
        yield con


def open_store_if_free(settings: Any) -> Any:
    """open_store without waiting: a context manager giving None when another process holds the store
    (the night, a writer).

    The hot path takes this instead of queueing behind the night: a writer appends to the inbox
    (engram.store.inbox), a reader answers from what was published (engram.index.published).
    """
    return _unless_held(open_store, settings)


def open_reader_if_free(settings: Any) -> Any:
    """open_reader without waiting: a context manager giving None when another process holds the store."""
    return _unless_held(open_reader, settings)


@contextmanager
def _unless_held(opener: Any, settings: Any) -> Iterator[Connection | None]:
    with ExitStack() as stack:
        try:
            con = stack.enter_context(opener(no_wait(settings)))
        except StoreError as exc:
            if not is_lock_timeout(exc):
                raise
            con = None
        yield con


def no_wait(settings: Any) -> Any:
    """The settings with no lock wait: opening a store another process holds fails at once."""
    return settings.model_copy(update={"lock_timeout_s": 0.0}) if hasattr(settings, "model_copy") else settings


@contextmanager
def held_open(settings: Any) -> Iterator[None]:
    """Keep the store open while the block runs (when settings.hold_store_open).

    DuckDB shares one open database among the connections of a process, so the stages' own short
    connections inside the block reuse it instead of reopening the file (about 17-33 ms each, ~40 per
    tenant per night). The price: other processes wait (up to lock_timeout_s) until the block ends,
    so callers hold it for one tenant (or one shard), never for a whole run.
    """
    if not getattr(settings, "hold_store_open", True):
        yield
        return
    key = str(Path(settings.db_path).resolve())
    alias = (os.getcwd(), str(settings.db_path))
    with open_store(settings):
        _held[key] = _held.get(key, 0) + 1
        _held_as[alias] = key
        try:
            yield
        finally:
            _held[key] -= 1
            if not _held[key]:
                del _held[key]
                for name in [a for a, k in _held_as.items() if k == key]:
                    del _held_as[name]


class StoreHold:
    """The store held open across consecutive units of work (tenants), reopened once held max_s.

    Opening the file and checkpointing it on close cost ~50-80 ms, as much as a small tenant's
    stages; a flow pays it once per max_s instead of once per tenant. Each reopen checkpoints the
    WAL into the file and lets a process waiting for the lock in (if it retries in that moment).
    A failed (re)open only loses the speed-up: each unit then opens the store itself, and fails
    or not on its own, so one unit's trouble with the store never stops the others.
    """

    def __init__(self, settings: Any, max_s: float) -> None:
        self.settings, self.max_s = settings, max_s
        self._stack: ExitStack | None = None
        self._since = 0.0

    def __enter__(self) -> StoreHold:
        self._open()
        return self

    def __exit__(self, *exc: object) -> None:
        self._close()

    def _open(self) -> None:
        self._since = time.monotonic()
        stack = ExitStack()
        try:
            stack.enter_context(held_open(self.settings))
        except Exception as exc:  # noqa: BLE001 - see the class docstring; retried at the next renew
            log.warning("store not held across units (%s); each opens it itself", type(exc).__name__)
            return
        self._stack = stack

    def _close(self) -> None:
        stack, self._stack = self._stack, None
        if stack is None:
            return
        try:
            stack.close()
        except Exception as exc:  # noqa: BLE001 - the units' writes are committed; a failed checkpoint loses nothing
            log.warning("closing the held store failed (%s)", type(exc).__name__)

    def renew(self, force: bool = False) -> None:
        """Close and reopen the store once it has been held max_s (or now, with force: after a failure)."""
        if force or time.monotonic() - self._since >= self.max_s:
            self._close()
            self._open()


@contextmanager
def open_reader(settings: Any) -> Iterator[Connection]:
    """A read-only connection when the store exists (many reader processes can share it), else open_store;
    open_store too, once, for a store an older engram wrote (its schema is migrated first).

    Inside held_open the process already holds the store read-write, and DuckDB refuses a read-only
    connection beside it: the reader then shares the held database.
    """
    path = Path(settings.db_path).resolve()
    if path.exists() and str(path) not in _held:
        with connect(settings.db_path, read_only=True, lock_timeout_s=settings.lock_timeout_s) as con:
            current = schema_is_current(con, f"{path}:{path.stat().st_ino}")  # as open_store keys migrations
            if current:
                yield con
        if current:
            return
        # a store last written by an older engram: migrate it once (the queries name its new columns)
    with open_store(settings) as con:
        yield con


def schema_is_current(con: Connection, key: str) -> bool:
    """Whether every sql/schema file has been applied to the store (`key`: its path and inode; the store
    is asked once per key and process)."""
    if key in _migrated or key in _current_schema:
        return True
    try:
        applied = {v for (v,) in rows(con, "queries/store/applied_migrations")}
    except duckdb.CatalogException:  # no schema_migrations table: a store older than migrations
        return False
    current = all(p.stem in applied for p in (SQL_DIR / "schema").glob("*.sql"))
    if current:
        _current_schema.add(key)
    return current
