//! Client-side response parsing (owned by the load-generator work).
