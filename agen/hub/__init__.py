"""The Hub: desired state, the task queue, scheduling, approvals and identity (seed 000 §3-5)."""
