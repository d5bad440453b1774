"""What happened, as written down: ``log`` (the event log: filters, pages, the tail, pruning),
``counters`` (the /metrics totals kept by following ``run.finished``), ``notify`` (notification
targets, and delivering the log to them) and ``deployment_log`` (the lines `agen logs` shows)."""
