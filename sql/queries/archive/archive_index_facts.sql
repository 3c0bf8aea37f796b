-- Indexes as archived the tenant's live facts that are in the verified files of a batch (registered
-- table `archive_file_facts`) and unchanged since export, whose every live fact_sources row is in the
-- batch too (registered `archive_file_fact_sources`), and that no live fact outside the batch points
-- to through merged_into_id. Params: $user_id, $now.
insert into archive_rows (user_id, table_name, row_id, export_id, parent_id, archived_at)
select f.user_id, 'facts', f.id, a.export_id, null, $now
from archive_file_facts as a
join facts as f
    on f.user_id = a.user_id
    and f.id = a.id
where f.user_id = $user_id
    and f.status is not distinct from a.status
    and f.last_updated is not distinct from a.last_updated
    and f.confidence is not distinct from a.confidence
    and f.confidence_at is not distinct from a.confidence_at
    and f.merged_into_id is not distinct from a.merged_into_id
    and f.evidence_count is not distinct from a.evidence_count
    and f.content_hash is not distinct from a.content_hash
    and not exists (
        select 1
        from fact_sources as s
        where s.user_id = f.user_id
            and s.fact_id = f.id
            and not exists (
                select 1
                from archive_file_fact_sources as b
                where b.user_id = s.user_id
                    and b.fact_id = s.fact_id
                    and b.episode_id = s.episode_id
                    and b.relation = s.relation
            )
    )
    and not exists (
        select 1
        from facts as g
        where g.user_id = f.user_id
            and g.merged_into_id = f.id
            and not exists (select 1 from archive_file_facts as c where c.user_id = g.user_id and c.id = g.id)
    )
on conflict do nothing
