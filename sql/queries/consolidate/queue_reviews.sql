-- Queues reviews from the registered table `incoming_reviews`; an existing review id is kept.
-- No params.
insert into llm_reviews (id, user_id, kind, status, subject_ids, reason, run_id, created_at)
select
    i.id,
    i.user_id,
    i.kind,
    'pending',
    i.subject_ids,
    i.reason,
    i.run_id,
    i.created_at
from incoming_reviews as i
on conflict do nothing
