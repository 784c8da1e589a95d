//! Modifiers for lc-agent networks.
