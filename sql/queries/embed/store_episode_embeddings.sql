-- Stores embeddings from the registered table `incoming_embeddings` (user_id, id, embedding,
-- embedding_model, embedding_dim) and marks those episodes active. Only touches rows still pending.
-- No params.
update episodes as e
set
    embedding = i.embedding,
    embedding_model = i.embedding_model,
    embedding_dim = i.embedding_dim,
    status = 'active',
    changed_at = now() at time zone 'UTC'
from incoming_embeddings as i
where e.user_id = i.user_id
    and e.id = i.id
    and e.status = 'pending_embed'
