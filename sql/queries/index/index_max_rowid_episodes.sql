-- Returns one row (max_rowid): the highest DuckDB rowid of the episodes table (any tenant: rowids are
-- per table); an on-disk index generation covers the rows up to it. No params.
select max(e.rowid) as max_rowid
from episodes as e
