"""The analysis engine: names → IR of events in control flow → roles → typed events → dataflow."""
