-- The only directory an analyst's SQL on the snapshot may read: the snapshot's own folder (its
-- `archive/` holds hard links or filtered copies of the archive files, never a link out); set
-- before external access is switched off. Params: $dirs (absolute paths, each ending in '/').
set allowed_directories = $dirs
