-- Returns every fact of the tenant with the columns query_fact_candidates reads, and when it was
-- last updated: an on-disk index generation keeps them, so a search filters and shows its candidates
-- without reading the store; a fact updated later (changed_at) is read again from the store.
-- Params: $user_id.
select
    f.rowid as row_id,
    f.id,
    f.claim_type,
    f.category,
    f.confidence,
    f.confidence_at,
    f.status,
    f.created_at,
    f.asserted_at,
    f.valid_from,
    f.valid_to,
    f.tags,
    f.visibility,
    f.is_private,
    f.changed_at
from facts as f
where f.user_id = $user_id
