-- Puts the tenant's submitted reviews listed in the registered table `review_ids` (id) back in the
-- queue after their batch job was lost: pending again, or failed with $reason once they were
-- re-submitted $max_resubmits times. Params: $user_id, $reason, $max_resubmits.
update llm_reviews as r
set
    resubmits = coalesce(r.resubmits, 0) + 1,
    status = case when coalesce(r.resubmits, 0) + 1 > $max_resubmits then 'failed' else 'pending' end,
    error = case
        when coalesce(r.resubmits, 0) + 1 > $max_resubmits
            then $reason || ' (re-submitted ' || $max_resubmits || ' time(s); decide it by hand)'
        else $reason
    end
from review_ids as w
where r.user_id = $user_id
    and r.id = w.id
    and r.status = 'submitted'
