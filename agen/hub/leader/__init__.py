"""The Hub leader's loop and what it runs each tick: ``loop`` (hold the leadership lease, tick),
``scheduler`` (assignments, desired counts, lease expiry, holds), ``autoscaler`` (the pure scaling
decision), ``fleet_tick`` (triggers, budget thresholds, provider holds, pruning: the fleet leader only)
and ``warning_events`` (GetActivity's warnings recorded as events). The leadership lease and its epoch
fence are ``agen.hub.leadership``, below the modules whose writes it fences."""
