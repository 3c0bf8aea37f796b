-- The views of a read snapshot, over the parquet files beside this DuckDB file and over the archive
-- (`archive/` mirrors the archive's files, private rows left out unless include_private). Paths are relative: open the file from its directory (as
-- `engram sql` does, or `cd DIR && duckdb -readonly snapshot.duckdb`). No params.

create view facts as
select * from read_parquet('facts/*.parquet');

create view current_facts as
select * from facts where status = 'active';

create view fact_sources as
select * from read_parquet('fact_sources/*.parquet');

create view episodes as
select * from read_parquet('episodes/*.parquet');

create view runs as
select * from read_parquet('runs/*.parquet');

-- One row per run and tenant: when it ran, how long, which stages failed, what it spent.
create view run_summary as
select
    r.run_id,
    r.user_id,
    min(r.as_of) as as_of,
    min(r.started_at) as started_at,
    max(r.finished_at) as finished_at,
    sum(r.duration_ms) as duration_ms,
    count(*) filter (where r.status = 'completed') as stages_completed,
    count(*) filter (where r.status = 'failed') as stages_failed,
    sum(r.llm_calls) as llm_calls,
    sum(r.cost_usd) as cost_usd
from runs as r
group by all;

-- The stage counts of every run, one row per count (e.g. confidence / contradictions / 0).
create view run_stage_counts as
select
    r.run_id,
    r.user_id,
    r.stage,
    r.as_of,
    c.key as count_name,
    try_cast(c.value as double) as n
from runs as r,
    json_each(r.counts) as c
where json_type(c.value) in ('UBIGINT', 'BIGINT', 'DOUBLE');

-- LLM spend per run, tenant and stage (the runs rows are the record of what a run spent).
create view llm_usage as
select
    r.user_id,
    r.run_id,
    r.stage,
    r.as_of,
    date_trunc('week', r.as_of)::date as week,
    r.llm_calls,
    r.input_tokens,
    r.output_tokens,
    r.cost_usd
from runs as r
where r.llm_calls > 0;

create view llm_reviews as
select * from read_parquet('llm_reviews/*.parquet');

create view review_queue as
select * from llm_reviews where status in ('pending', 'failed');

-- Every tenant in the snapshot with its counts.
create view tenants as
select
    t.user_id,
    (select count(*) from episodes as e where e.user_id = t.user_id) as episodes,
    (select count(*) from current_facts as f where f.user_id = t.user_id) as current_facts,
    (select max(r.as_of) from runs as r where r.user_id = t.user_id) as last_run_as_of
from (
    select user_id from episodes
    union
    select user_id from facts
    union
    select user_id from runs
) as t;

create view archive_exports as
select * from read_parquet('archive_manifest/*.parquet');

create view archive_restored as
select * from read_parquet('archive_restored/*.parquet');

-- Archived rows: only files of finalized exports (their rows left the live tables), minus rows a
-- restore brought back. Before any archive exists these are empty (typed stubs in archive_stub/).
create view archived_facts as
select
    a.user_id,
    a.id as fact_id,
    a.text,
    a.status,
    a.confidence,
    a.valid_from,
    a.valid_to,
    a.is_private,
    x.partition_date as archived_on,
    x.run_id as archive_run_id
from read_parquet(['archive/table=facts/**/*.parquet', 'archive_stub/facts.parquet'],
                  union_by_name = true, filename = true, allow_empty = true, hive_partitioning = false) as a
join archive_exports as x
    on x.table_name = 'facts'
    and x.status = 'finalized'
    and ends_with(a.filename, '/' || x.path)
where ((select i.include_private from snapshot_info as i) or not a.is_private)
    and not exists (
        select 1 from archive_restored as r
        where r.user_id = a.user_id and r.table_name = 'facts' and r.row_id = a.id
    );

create view archived_episodes as
select
    a.user_id,
    a.id as episode_id,
    a.content,
    a.created_at,
    a.status,
    a.is_private,
    x.partition_date as archived_on,
    x.run_id as archive_run_id
from read_parquet(['archive/table=episodes/**/*.parquet', 'archive_stub/episodes.parquet'],
                  union_by_name = true, filename = true, allow_empty = true, hive_partitioning = false) as a
join archive_exports as x
    on x.table_name = 'episodes'
    and x.status = 'finalized'
    and ends_with(a.filename, '/' || x.path)
where ((select i.include_private from snapshot_info as i) or not a.is_private)
    and not exists (
        select 1 from archive_restored as r
        where r.user_id = a.user_id and r.table_name = 'episodes' and r.row_id = a.id
    );

create view archived_fact_sources as
select
    a.user_id,
    a.fact_id,
    a.episode_id,
    a.relation,
    a.similarity,
    x.partition_date as archived_on,
    x.run_id as archive_run_id
from read_parquet(['archive/table=fact_sources/**/*.parquet', 'archive_stub/fact_sources.parquet'],
                  union_by_name = true, filename = true, allow_empty = true, hive_partitioning = false) as a
join archive_exports as x
    on x.table_name = 'fact_sources'
    and x.status = 'finalized'
    and ends_with(a.filename, '/' || x.path)
where not exists (
    select 1 from archive_restored as r
    where r.user_id = a.user_id
        and r.table_name = 'fact_sources'
        and r.row_id = a.fact_id || chr(31) || a.episode_id || chr(31) || a.relation
);

-- Every fact event with the fact's text: the live fact's, else the archived fact's (a fact the archive
-- took keeps its history and its words).
create view fact_history as
select h.* replace (coalesce(h.fact_text, a.text) as fact_text)
from read_parquet('fact_history/*.parquet') as h
left join (
    select af.user_id, af.fact_id, any_value(af.text) as text
    from archived_facts as af
    group by af.user_id, af.fact_id
) as a
    on a.user_id = h.user_id
    and a.fact_id = h.fact_id
order by h.user_id, h.fact_id, h.seq;
