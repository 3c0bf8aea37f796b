"""Erasing a tenant for good (`engram forget`): its rows, files, archive, snapshots and log lines."""
