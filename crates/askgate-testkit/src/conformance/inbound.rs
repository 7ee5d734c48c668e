//! The inbound half of the conformance suite (being written).
