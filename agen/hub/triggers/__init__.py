"""Triggers owned by the Hub leader: cron, random, webhook and event triggers (seed 000 §5).

Planning (which windows are due, missed, jittered) is pure and clock-injected; firing is a
Tx function that records the trigger event and queues the task in one epoch-checked transaction.
"""
