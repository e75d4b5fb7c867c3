"""Slow, obviously correct float64 NumPy references written from the specs."""
