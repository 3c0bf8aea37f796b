-- Returns one row (max_rowid): the highest DuckDB rowid of the facts table (any tenant: rowids are
-- per table); an on-disk index generation covers the rows up to it. No params.
select max(f.rowid) as max_rowid
from facts as f
