"""Every SQL statement engram runs (schema/, queries/, checks/, views/), shipped as engram.sql."""
