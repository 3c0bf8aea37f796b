-- Returns the ids among $episode_ids that a fact was extracted from which a contradiction review not
-- yet applied names: episodes that state one side of a dispute.
-- Params: $user_id, $episode_ids.
select distinct
    s.episode_id
from fact_sources as s
join llm_reviews as r
    on r.user_id = s.user_id
    and list_contains(r.subject_ids, s.fact_id)
where s.user_id = $user_id
    and s.relation = 'extracted_from'
    and s.episode_id in (select unnest($episode_ids::varchar[]))
    and r.kind = 'contradiction'
    and r.status <> 'applied'
order by s.episode_id
