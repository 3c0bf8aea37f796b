-- Makes relative file paths (the views' parquet files) resolve in the snapshot directory $dir.
-- Params: $dir.
set file_search_path = $dir
