-- Thought DB graph patches: one row per applied patch, and the before/after image of every row it
-- created or changed, so `engram patch rollback` can restore the exact prior state. Idempotent.

create table if not exists graph_patches (
    id             varchar not null,
    user_id        varchar not null,
    status         varchar not null,    -- applied | rolled_back
    source         varchar,             -- file name, 'llm', ...
    created_at     timestamp not null,
    rolled_back_at timestamp,
    ops            json not null,
    primary key (user_id, id)
);

create table if not exists graph_patch_changes (
    patch_id   varchar not null,
    user_id    varchar not null,
    seq        integer not null,
    table_name varchar not null,        -- facts | fact_sources | nodes | edges
    row_key    varchar not null,
    before     json,                    -- null: the patch created the row
    after      json,                    -- null: the patch removed the row
    primary key (user_id, patch_id, seq)
);
