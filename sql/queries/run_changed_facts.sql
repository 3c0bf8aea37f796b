-- Returns ids of the tenant's active facts that run $run_id created or changed. Params: $user_id, $run_id.
select distinct
    v.fact_id
from fact_events as v
join facts as f
    on f.user_id = v.user_id
    and f.id = v.fact_id
where v.user_id = $user_id
    and v.run_id = $run_id
    and f.status = 'active'
