"""The store's tenant tables, read from its catalog, and one tenant's rows in them (counted or deleted)."""

from __future__ import annotations

from engram.errors import StoreError
from engram.store import db

# Tables that hold no tenant's data. Any other table without a user_id column stops an erase: a new
# table must say which tenant a row belongs to, or be added here on purpose.
TENANT_FREE = frozenset({"schema_migrations"})


class UnscopedTable(StoreError):
    """A table of the store has no user_id column and is not known to be tenant-free."""

    code = "unscoped_table"


def tenant_tables(con: db.Connection) -> list[str]:
    """Every base table of the open store with a user_id column, by name.

    UnscopedTable when a table has none and is not in TENANT_FREE: its rows could name the tenant
    and an erase would silently leave them behind.
    """
    found = db.rows(con, "erase/tenant_tables")
    unscoped = sorted(name for name, has_user in found if not has_user and name not in TENANT_FREE)
    if unscoped:
        raise UnscopedTable(f"table: {', '.join(unscoped)} has no user_id column and is not known to be "
                            "tenant-free (engram.erase.catalog.TENANT_FREE); nothing was erased")
    return [name for name, has_user in found if has_user]


def count_rows(con: db.Connection, tables: list[str], user_id: str) -> dict[str, int]:
    """The tenant's rows per table (tables with none included, as 0)."""
    return {t: int(db.rows(con, "erase/count_tenant_rows", table=t, user_id=user_id)[0][0]) for t in tables}


def delete_rows(con: db.Connection, tables: list[str], user_id: str) -> None:
    """Delete the tenant's rows from every table (the caller holds the transaction)."""
    for table in tables:
        con.execute(with_identifier("erase/delete_tenant_rows", "{table}", table, tables), {"user_id": user_id})


def with_identifier(name: str, slot: str, identifier: str, known: list[str]) -> str:
    """Named SQL with one identifier filled in, quoted; only names read from the catalog are accepted."""
    if identifier not in known:
        raise StoreError(f"table: {identifier!r} is not a table of the store's catalog")
    return db.sql(name).replace(slot, quote_identifier(identifier))


def quote_identifier(name: str) -> str:
    """A DuckDB identifier in double quotes (embedded quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'
