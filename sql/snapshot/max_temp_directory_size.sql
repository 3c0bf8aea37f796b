-- Caps the disk an analyst's SQL on the snapshot may spill to (DuckDB's default is 90% of the free
-- space); set before the configuration is locked. Params: $size (a size such as '4294967296B').
set max_temp_directory_size = $size
