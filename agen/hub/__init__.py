"""The Hub: desired state, the task queue, scheduling, approvals and identity (seed 000 §3-5).

Its folders are layers, each importing only from those below it (the ``hub-layers`` contract in
pyproject.toml): ``rpc`` (the handlers the API registry names) over ``leader`` (the leader's loop and
tick) over ``observe`` (reads over runs, activity and feedback) over ``fleet`` (Nests, instances,
enrolment) and ``triggers`` over ``queue`` (the durable queue and leasing) over ``service`` (the state
every handler shares) over ``auth`` (who is calling) and ``platform_secrets``, then the pieces below
them: ``events`` (the event log, its followers, the deployment log), ``leadership`` (the leader lease
and its epoch fence), ``definitions``, ``call_keys``, ``nest_certs``, ``tls`` and ``sealing``. The Hub
never runs agents: the Nest does.
"""
