-- Returns the frame key (engram.consolidate.fact_keys; null: not keyed yet) of the tenant's facts listed
-- in the registered table `framed_facts` (id). Params: $user_id.
select
    f.id,
    f.frame_key
from facts as f
inner join framed_facts as w on f.id = w.id
where f.user_id = $user_id
