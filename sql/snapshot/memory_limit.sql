-- Caps the memory an analyst's SQL on the snapshot may take (DuckDB's default is 80% of RAM); set
-- before the configuration is locked. Params: $limit (a size such as '2GB', checked by analyst_limits).
set memory_limit = $limit
