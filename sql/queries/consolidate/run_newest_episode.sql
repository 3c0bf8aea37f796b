-- Returns when the newest of the tenant's episodes that run $run_id consolidated was said (null: none).
-- Params: $user_id, $run_id.
select
    max(e.created_at) as newest
from episodes as e
where e.user_id = $user_id
    and e.consolidated_run_id = $run_id
