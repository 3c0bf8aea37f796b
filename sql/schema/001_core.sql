-- Core tables of engram. Idempotent: every statement is "if not exists".
-- Times are UTC timestamps without zone. Every table carries user_id (the tenant).

create table if not exists episodes (
    id              varchar not null,
    user_id         varchar not null,
    kind            varchar not null default 'turn',        -- turn | thought | event
    role            varchar,
    session_id      varchar,
    content         varchar not null,
    created_at      timestamp not null,                     -- event time
    ingested_at     timestamp not null default current_timestamp,
    origin          varchar not null default 'human',       -- human | tool | model
    visibility      varchar not null default 'project',     -- private | project | global
    is_private      boolean not null default false,
    tags            varchar[] not null default [],
    content_hash    varchar not null,
    embedding       float[],
    embedding_model varchar,
    embedding_dim   integer,
    status          varchar not null default 'pending_embed', -- pending_embed | active | removal | archived
    is_summary      boolean not null default false,
    summary_of      varchar[],
    pipeline        varchar,
    metadata        json,
    consolidated_run_id varchar,                            -- the extract run that consumed it
    primary key (user_id, id)
);

create table if not exists facts (
    id                 varchar not null,
    user_id            varchar not null,
    text               varchar not null,
    claim_type         varchar not null default 'fact',     -- fact | preference | assumption | goal | instruction
    category           varchar not null default 'general',
    confidence         double not null,
    confidence_at      timestamp not null default current_timestamp, -- decay clock: see effective_confidence
    evidence_count     integer not null default 1,
    status             varchar not null default 'active',
    merged_into_id     varchar,
    asserted_at        timestamp not null,
    valid_from         timestamp,
    valid_to           timestamp,
    created_at         timestamp not null,
    last_updated       timestamp not null,
    last_reinforced_at timestamp not null,
    embedding          float[],
    embedding_model    varchar,
    embedding_dim      integer,
    content_hash       varchar not null,
    tags               varchar[] not null default [],
    visibility         varchar not null default 'project',
    is_private         boolean not null default false,
    scope              varchar not null default 'project',  -- project | global
    run_id             varchar,
    primary key (user_id, id)
);

create table if not exists fact_sources (
    user_id    varchar not null,
    fact_id    varchar not null,
    episode_id varchar not null,
    relation   varchar not null,     -- extracted_from | supports | contradicts
    similarity double,
    run_id     varchar,
    created_at timestamp not null default current_timestamp,
    primary key (user_id, fact_id, episode_id, relation)
);

-- Events are ordered by seq (many share one logical created_at: the run's as_of).
create sequence if not exists fact_event_seq;

create table if not exists fact_events (
    id                varchar not null primary key,
    seq               bigint not null default nextval('fact_event_seq'),
    user_id           varchar not null,
    fact_id           varchar not null,
    run_id            varchar not null,
    action            varchar not null,  -- created | reinforced | decayed | contradicted | merged | deprecated | superseded | archived | resolved | restored
    confidence_before double,
    confidence_after  double,
    status_before     varchar,
    status_after      varchar,
    related_fact_id   varchar,
    reason            varchar,
    created_at        timestamp not null
);

create table if not exists nodes (
    id          varchar not null,
    user_id     varchar not null,
    node_type   varchar not null,   -- Decision | Action | Summary
    title       varchar not null,
    body        varchar,
    status      varchar not null default 'active',
    asserted_at timestamp not null,
    valid_from  timestamp,
    valid_to    timestamp,
    visibility  varchar not null default 'project',
    scope       varchar not null default 'project',
    source_refs varchar[] not null default [],
    created_at  timestamp not null default current_timestamp,
    primary key (user_id, id)
);

create table if not exists edges (
    id          varchar not null,
    user_id     varchar not null,
    edge_type   varchar not null,   -- depends_on | supports | contradicts | derived_from | mentions | supersedes | same_as
    from_id     varchar not null,
    to_id       varchar not null,
    status      varchar not null default 'active',
    source_refs varchar[] not null default [],
    created_at  timestamp not null default current_timestamp,
    primary key (user_id, id)
);

create table if not exists kg_entities (
    id          varchar not null,
    user_id     varchar not null,
    name        varchar not null,
    norm_name   varchar not null,
    entity_type varchar,
    confidence  double,
    status      varchar not null default 'active',
    source_refs varchar[] not null default [],
    embedding       float[],
    embedding_model varchar,
    embedding_dim   integer,
    created_at  timestamp not null default current_timestamp,
    primary key (user_id, id)
);

create table if not exists kg_edges (
    id            varchar not null,
    user_id       varchar not null,
    src_entity_id varchar not null,
    relation      varchar not null,
    dst_entity_id varchar not null,
    confidence    double,
    status        varchar not null default 'active',
    source_refs   varchar[] not null default [],
    created_at    timestamp not null default current_timestamp,
    primary key (user_id, id)
);

create table if not exists kg_entity_candidates (
    id                varchar not null,
    user_id           varchar not null,
    name              varchar not null,
    norm_name         varchar not null,
    entity_type       varchar,
    confidence        double not null,
    source_thought_id varchar not null,
    status            varchar not null default 'pending',  -- pending | approved | rejected
    created_at        timestamp not null default current_timestamp,
    decided_at        timestamp,
    primary key (user_id, id)
);

create table if not exists kg_edge_candidates (
    id                varchar not null,
    user_id           varchar not null,
    src_name          varchar not null,
    relation          varchar not null,
    dst_name          varchar not null,
    confidence        double not null,
    source_thought_id varchar not null,
    status            varchar not null default 'pending',
    created_at        timestamp not null default current_timestamp,
    decided_at        timestamp,
    primary key (user_id, id)
);

create table if not exists llm_reviews (
    id            varchar not null,
    user_id       varchar not null,
    kind          varchar not null,     -- contradiction | merge | extraction
    status        varchar not null default 'pending',  -- pending | decided | applied | failed
    subject_ids   varchar[] not null,   -- fact ids (or episode ids for extraction)
    reason        varchar,              -- why it was queued
    decision      json,
    decided_by    varchar,              -- model name or 'human'
    model         varchar,
    prompt_hash   varchar,
    input_tokens  integer,
    output_tokens integer,
    latency_ms    double,
    cost_usd      double,
    attempts      integer not null default 0,
    error         varchar,
    run_id        varchar,
    created_at    timestamp not null,
    decided_at    timestamp,
    applied_at    timestamp,
    primary key (user_id, id)
);

create table if not exists runs (
    run_id        varchar not null,
    user_id       varchar not null,
    stage         varchar not null,
    status        varchar not null,     -- running | completed | failed | skipped
    as_of         timestamp not null,
    started_at    timestamp not null,
    finished_at   timestamp,
    watermark     timestamp,            -- extract: max ingested_at consumed
    counts        json,
    duration_ms   double,
    llm_calls     integer not null default 0,
    input_tokens  integer not null default 0,
    output_tokens integer not null default 0,
    cost_usd      double not null default 0,
    error         varchar,
    primary key (run_id, user_id, stage)
);

-- One consolidation run per tenant at a time: a lease row, taken and released in short transactions.
create table if not exists run_leases (
    user_id     varchar not null primary key,
    run_id      varchar not null,
    holder      varchar not null,
    acquired_at timestamp not null,
    expires_at  timestamp not null
);

-- Confidence decays lazily: the stored value is exact at confidence_at, and the value at time t is
-- confidence * exp(-rate * days since confidence_at). Nightly work stays proportional to what changed.
create or replace macro effective_confidence(confidence, confidence_at, as_of, rate) as
    confidence * exp(-rate * greatest(date_diff('second', confidence_at, as_of), 0) / 86400.0);

-- Similar fact pairs found by a run's confidence stage (changed facts vs all active facts), reused by
-- its merge stage so the store is searched once per run. Only the latest run's pairs are kept.
create table if not exists run_fact_pairs (
    user_id    varchar not null,
    run_id     varchar not null,
    fact_a     varchar not null,
    fact_b     varchar not null,
    similarity double not null,
    conflict   varchar,             -- negation | antonym | different value, or null when they agree
    primary key (user_id, run_id, fact_a, fact_b)
);
