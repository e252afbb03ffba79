//! Stateless TLS session tickets that every process of the server can
//! decrypt, the fork model's children included.
//!
//! Written here rather than using rustls' `Ticketer` because that one keeps
//! per-process state that forked children do not share: it rejects a
//! ticket longer than the longest one *this process* has encrypted (a fresh
//! child has encrypted none, so it rejects every ticket made by a sibling),
//! and a child that rotates keys makes new random ones no sibling knows.
//! Here the key of each period is derived (HKDF-SHA256) from one random
//! master secret made at start-up, before any fork, and from the period
//! number, so every process computes the same keys with no shared state.
//! Tickets are ChaCha20-Poly1305 sealed with a random nonce; a ticket is
//! accepted during its own period and the next one.

use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};
use ring::hkdf::{Prk, Salt, HKDF_SHA256};
use ring::rand::{SecureRandom, SystemRandom};
use rustls::server::ProducesTickets;

/// Length of one key period (a ticket lives one to two periods).
const PERIOD_SECS: u64 = 6 * 60 * 60;
/// Tickets longer than this are refused without decrypting (rustls'
/// session values are a few hundred bytes).
const MAX_TICKET: usize = 4096;
const TAG_LEN: usize = 16;
const HEADER: usize = 8 + NONCE_LEN;

/// The ticket producer: a master secret and the system RNG (the kernel's
/// getrandom, so nothing to re-seed after fork).
pub struct Tickets {
    prk: Prk,
    rng: SystemRandom,
}

impl std::fmt::Debug for Tickets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tickets").finish_non_exhaustive()
    }
}

impl Tickets {
    /// A producer with a fresh random master secret.
    pub fn new() -> Result<Tickets, ring::error::Unspecified> {
        let rng = SystemRandom::new();
        let mut master = [0u8; 32];
        rng.fill(&mut master)?;
        let prk = Salt::new(HKDF_SHA256, b"httplab session tickets").extract(&master);
        Ok(Tickets { prk, rng })
    }

    fn key(&self, period: u64) -> Option<LessSafeKey> {
        let info = period.to_be_bytes();
        let info = [&info[..]];
        let okm = self.prk.expand(&info, &CHACHA20_POLY1305).ok()?;
        Some(LessSafeKey::new(UnboundKey::from(okm)))
    }

    fn period_now() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() / PERIOD_SECS)
    }
}

impl ProducesTickets for Tickets {
    fn enabled(&self) -> bool {
        true
    }

    fn lifetime(&self) -> u32 {
        PERIOD_SECS as u32
    }

    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        let period = Self::period_now();
        let key = self.key(period)?;
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce).ok()?;
        let mut out = Vec::with_capacity(HEADER + plain.len() + TAG_LEN);
        out.extend_from_slice(&period.to_be_bytes());
        out.extend_from_slice(&nonce);
        let mut body = plain.to_vec();
        key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(&out[..8]),
            &mut body,
        )
        .ok()?;
        out.extend_from_slice(&body);
        Some(out)
    }

    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        if cipher.len() < HEADER + TAG_LEN || cipher.len() > MAX_TICKET {
            return None;
        }
        let period = u64::from_be_bytes(cipher[..8].try_into().ok()?);
        let now = Self::period_now();
        if period != now && period.checked_add(1) != Some(now) {
            return None;
        }
        let key = self.key(period)?;
        let nonce = Nonce::try_assume_unique_for_key(&cipher[8..HEADER]).ok()?;
        let mut body = cipher[HEADER..].to_vec();
        let plain = key
            .open_in_place(nonce, Aad::from(&cipher[..8]), &mut body)
            .ok()?;
        let n = plain.len();
        body.truncate(n);
        Some(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_tamper() {
        let t = Tickets::new().unwrap();
        let c = t.encrypt(b"session state").unwrap();
        assert_eq!(t.decrypt(&c).unwrap(), b"session state");
        let mut bad = c.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(t.decrypt(&bad).is_none());
        // Another server's tickets are not accepted.
        assert!(Tickets::new().unwrap().decrypt(&c).is_none());
        // Garbage of any length: refused, no panic.
        for n in [0, 1, 8, 20, 36, 5000] {
            assert!(t.decrypt(&vec![7u8; n]).is_none());
        }
        // A ticket from two periods ago is refused.
        let mut old = c.clone();
        old[..8].copy_from_slice(&(Tickets::period_now() - 2).to_be_bytes());
        assert!(t.decrypt(&old).is_none());
    }
}
