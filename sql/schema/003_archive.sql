-- The verified parquet archive: a manifest of every export file and an index of archived rows.
-- Idempotent. Rows leave the live tables only through a finalized export (see engram/archive.py).

-- When an episode's status last changed (mark-removal sets it); retention falls back to ingested_at.
alter table episodes add column if not exists status_changed_at timestamp;

-- One row per parquet file ever written (the manifest; also written as json under archive_dir/_manifest).
create table if not exists archive_exports (
    export_id      varchar not null primary key,
    batch_id       varchar not null,     -- run_id + tenant: the files of a batch are finalized together
    run_id         varchar not null,
    user_id        varchar not null,
    table_name     varchar not null,     -- episodes | facts | fact_sources
    partition_date date not null,        -- the archive date (as_of) of the export
    path           varchar not null,     -- relative to archive_dir
    status         varchar not null,     -- writing | exported | finalized | abandoned
    row_count      bigint,               -- rows in the file, read back
    content_hash   varchar,              -- engram.archive_hash digest of the rows, read back
    file_sha256    varchar,
    file_bytes     bigint,
    finalized_rows bigint,               -- rows removed from the live table by this export
    created_at     timestamp not null,
    verified_at    timestamp,
    finalized_at   timestamp,
    note           varchar
);

-- One row per archived row and export; restored_at is set when restore brings the row back.
-- A row is "archived" when it has a row here with restored_at null (and is not live).
create table if not exists archive_rows (
    user_id        varchar not null,
    table_name     varchar not null,
    row_id         varchar not null,     -- id; for fact_sources: fact_id, episode_id, relation joined by chr(31)
    export_id      varchar not null,
    parent_id      varchar,              -- fact_sources: the fact_id
    archived_at    timestamp not null,
    restored_at    timestamp,
    restore_run_id varchar,
    primary key (user_id, table_name, row_id, export_id)
);
