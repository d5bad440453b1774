"""The Hub: desired state, the task queue, scheduling, approvals and identity (seed 000 §3-5).

Grouped by concept: ``queue`` (the durable queue and leasing), ``leader`` (leadership and the leader's
loop: scheduler, autoscaler, upkeep), ``observe`` (reads over what happened), ``rpc`` (the handlers the
API registry names), ``fleet`` (definitions, Nests, instances), ``triggers``; ``service`` holds the state
every handler shares and ``auth`` who is calling. The Hub never runs agents: the Nest does.
"""
