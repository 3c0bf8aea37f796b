"""Quality on real data: retrieval, dedupe, contradiction, knowledge update, extraction, LoCoMo."""
