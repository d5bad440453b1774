"""The Nest: a Manager that pulls assignments from the Hub and runs instances (seed 000 §5)."""
