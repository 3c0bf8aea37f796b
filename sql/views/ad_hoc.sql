-- Views for ad hoc analysis (duckdb data/engram.duckdb). Idempotent: create or replace.

create or replace view active_facts as
select
    f.user_id,
    f.id,
    f.text,
    f.claim_type,
    f.category,
    round(f.confidence, 4) as confidence,
    f.evidence_count,
    f.last_reinforced_at,
    f.valid_from,
    f.valid_to,
    f.visibility,
    f.is_private
from facts as f
where f.status = 'active';

create or replace view fact_lineage as
select
    f.user_id,
    f.id as fact_id,
    f.status as fact_status,
    f.merged_into_id,
    s.relation,
    s.similarity,
    s.run_id,
    e.id as episode_id,
    e.session_id,
    e.role,
    e.created_at as episode_created_at,
    e.content as episode_content
from facts as f
join fact_sources as s
    on s.user_id = f.user_id
    and s.fact_id = f.id
left join episodes as e
    on e.user_id = s.user_id
    and e.id = s.episode_id;

create or replace view review_queue as
select
    r.user_id,
    r.id,
    r.kind,
    r.status,
    r.subject_ids,
    r.reason,
    r.attempts,
    r.error,
    r.created_at
from llm_reviews as r
where r.status in ('pending', 'failed');
