-- Returns the LLM review cases of the snapshot (every status) with their tokens and cost; cases about
-- a private fact only when $include_private. No prompt text is stored, only its hash.
-- Params: $user_id (null = every tenant), $include_private.
select
    r.user_id,
    r.id as review_id,
    r.kind,
    r.status,
    r.subject_ids,
    r.reason,
    r.decision::varchar as decision,
    r.decided_by,
    r.model,
    r.input_tokens,
    r.output_tokens,
    r.latency_ms,
    r.cost_usd,
    r.attempts,
    r.error,
    r.run_id,
    r.created_at,
    r.decided_at,
    r.applied_at
from llm_reviews as r
where ($user_id is null or r.user_id = $user_id)
    and (
        $include_private
        or not exists (
            select 1
            from facts as f
            where f.user_id = r.user_id
                and f.is_private
                and list_contains(r.subject_ids, f.id)
        )
    )
order by r.user_id, r.created_at, r.id
