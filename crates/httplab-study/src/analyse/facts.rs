//! Facts about the whole study read from its runs (written into the
//! results' environment).

use std::collections::BTreeMap;

use httplab_model as m;

/// `TLSv1_3 ×1200, TLS13_AES_256_GCM_SHA384 ×1200` over every run's
/// handshakes (`RunResult.tls`).
pub fn tls_seen(runs: &[m::StudyRun]) -> String {
    let mut versions: BTreeMap<String, u64> = BTreeMap::new();
    let mut suites: BTreeMap<String, u64> = BTreeMap::new();
    for t in runs.iter().filter_map(|r| r.run.as_ref()?.tls.as_ref()) {
        for (k, v) in &t.versions {
            *versions.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &t.cipher_suites {
            *suites.entry(k.clone()).or_default() += v;
        }
    }
    let all: Vec<String> = versions
        .iter()
        .chain(suites.iter())
        .map(|(k, v)| format!("{k} ×{v}"))
        .collect();
    if all.is_empty() {
        "no handshake completed".into()
    } else {
        format!("handshakes: {}", all.join(", "))
    }
}
