-- Releases the tenant's lease if this holder has it. Params: $user_id, $holder.
delete from run_leases
where user_id = $user_id
    and holder = $holder
