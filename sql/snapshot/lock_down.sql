-- An analyst's connection to the snapshot becomes a boundary: no file outside the allowed directories
-- (no ATTACH of the live store, no COPY TO elsewhere, no extension installs), and no setting can be
-- changed back. No params.
set enable_external_access = false;
set lock_configuration = true;
