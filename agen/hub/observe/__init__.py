"""Reads over what happened and what happens now, shared by the RPCs and the leader: the one activity
word (``activity``), unfinished runs with what they do, queues and warnings (``live``), the feedback runs
were given (``feedback``). Nothing here writes; the handlers that serve these reads are in ``rpc``."""
