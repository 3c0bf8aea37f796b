-- Returns the facts merged into one fact. Params: $user_id, $fact_id.
select
    f.id, f.text, f.confidence
from facts as f
where f.user_id = $user_id
    and f.merged_into_id = $fact_id
order by f.id
