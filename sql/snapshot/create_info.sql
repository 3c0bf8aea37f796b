-- Creates the snapshot's one-row description table (filled by insert_info.sql). No params.
create table snapshot_info (
    snapshot_id      varchar not null,
    created_at       timestamp not null,
    run_id           varchar,
    store            varchar not null,
    archive_dir      varchar not null,
    include_private  boolean not null,
    shards           integer not null
)
