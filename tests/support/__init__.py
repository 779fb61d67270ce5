"""What the suites share: envelopes to test with, checks, real worker processes, a cluster."""
