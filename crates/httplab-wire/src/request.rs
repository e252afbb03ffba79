//! Server-side request parsing (owned by the server work).
