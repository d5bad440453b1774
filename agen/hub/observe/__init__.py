"""Reads over what happened and what happens now: runs, transcripts and traces, live activity, metrics,
the event log and deployment logs, task progress, and the notification targets events are pushed to."""
