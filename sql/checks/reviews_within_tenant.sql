-- Returns llm_reviews naming a fact (contradiction / merge) that is not a fact of the review's tenant,
-- live or archived (a review may outlive the facts it names: the archive keeps them, restorable).
-- Extraction reviews name episodes and are checked against episodes the same way. Empty = pass.
select
    r.user_id,
    r.id as review_id,
    s.subject_id
from llm_reviews as r,
    unnest(r.subject_ids) as s(subject_id)
where (
        r.kind in ('contradiction', 'merge')
        and not exists (select 1 from facts as f where f.user_id = r.user_id and f.id = s.subject_id)
        and not exists (
            select 1 from archive_rows as a
            where a.user_id = r.user_id and a.table_name = 'facts' and a.row_id = s.subject_id
        )
    )
    or (
        r.kind = 'extraction'
        and not exists (select 1 from episodes as e where e.user_id = r.user_id and e.id = s.subject_id)
        and not exists (
            select 1 from archive_rows as a
            where a.user_id = r.user_id and a.table_name = 'episodes' and a.row_id = s.subject_id
        )
    )
