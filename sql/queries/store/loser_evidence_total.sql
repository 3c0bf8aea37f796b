-- Returns the summed evidence_count of the facts in the registered table `merge_losers`.
-- Params: $user_id.
select
    sum(f.evidence_count) as total
from facts as f
join merge_losers as l
    on l.loser_id = f.id
where f.user_id = $user_id
