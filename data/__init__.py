"""The demo's sample data, shipped as engram.data (the default store is written here only in a checkout)."""
