-- Returns one row, one boolean: whether the nightly archive step could do anything for $user_id. True
-- when the tenant has a retired row old enough to be due (a superset of archive_due_*: restores and
-- merge chains are not excluded here), an export waiting for finalize, or when an export of any
-- tenant is left in 'writing' (the archive step abandons interrupted exports of every tenant).
-- Params: $user_id, $fact_statuses (varchar[]), $episode_statuses (varchar[]), $cutoff (timestamp).
select
    exists (
        select 1
        from facts as f
        where f.user_id = $user_id
            and list_contains($fact_statuses, f.status)
            and f.last_updated <= $cutoff
    )
    or exists (
        select 1
        from episodes as e
        where e.user_id = $user_id
            and list_contains($episode_statuses, e.status)
            and coalesce(e.status_changed_at, e.ingested_at) <= $cutoff
    )
    or exists (
        select 1
        from archive_exports as x
        where x.user_id = $user_id
            and x.status = 'exported'
    )
    or exists (
        select 1
        from archive_exports as x
        where x.status = 'writing'
    ) as has_work
