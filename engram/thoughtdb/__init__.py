"""Thought DB: claims (facts with a claim_type), Decision/Action/Summary nodes, typed edges, why-tracing, KG moderation."""
