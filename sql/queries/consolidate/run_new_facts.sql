-- Returns ids of the tenant's active facts created by run $run_id. Params: $user_id, $run_id.
select
    f.id
from facts as f
where f.user_id = $user_id
    and f.run_id = $run_id
    and f.status = 'active'
