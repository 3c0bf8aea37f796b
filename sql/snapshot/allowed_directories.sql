-- The only directories an analyst's SQL on the snapshot may read (the snapshot's own folder and the
-- archive root its `archive` link points at); set before external access is switched off.
-- Params: $dirs (absolute paths, each ending in '/').
set allowed_directories = $dirs
