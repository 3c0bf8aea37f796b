-- Creates an empty ask session for the tenant unless it exists. Params: $user_id, $session_id, $now.
insert into ask_sessions (id, user_id, created_at, updated_at)
values ($session_id, $user_id, $now, $now)
on conflict do nothing
