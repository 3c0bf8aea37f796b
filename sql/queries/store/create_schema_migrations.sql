-- Creates the table that records which sql/schema files were applied. No params.
create table if not exists schema_migrations (
    version    varchar primary key,
    checksum   varchar not null,
    applied_at timestamp not null default current_timestamp
)
