//! A client shard's place among its run's shards.

use serde::{Deserialize, Serialize};

/// Shard I of N of a run split over N clients (`RunFacts::client_shard`),
/// 0 <= I < N.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ClientShard {
    /// I, from 0.
    pub index: u32,
    /// N.
    pub count: u32,
}

impl ClientShard {
    /// Reads `I/N` (0 <= I < N); None otherwise.
    pub fn parse(s: &str) -> Option<ClientShard> {
        let (i, n) = s.trim().split_once('/')?;
        let index: u32 = i.trim().parse().ok()?;
        let count: u32 = n.trim().parse().ok()?;
        (count > 0 && index < count).then_some(ClientShard { index, count })
    }
}

impl std::fmt::Display for ClientShard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}
