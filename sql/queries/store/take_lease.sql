-- Takes the tenant's consolidation lease unless another live holder has it; returns one row (the
-- holder) when taken, none when another live holder keeps it. Params: $user_id, $run_id, $holder,
-- $now, $expires_at.
insert into run_leases (user_id, run_id, holder, acquired_at, expires_at)
values ($user_id, $run_id, $holder, $now, $expires_at)
on conflict (user_id) do update
set
    run_id = excluded.run_id,
    holder = excluded.holder,
    acquired_at = excluded.acquired_at,
    expires_at = excluded.expires_at
where run_leases.expires_at < $now
    or run_leases.holder = excluded.holder
returning holder
