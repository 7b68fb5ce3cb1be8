"""Benchmarks behind ``rbc bench`` (measured as ratios against a peer in the same process)."""
