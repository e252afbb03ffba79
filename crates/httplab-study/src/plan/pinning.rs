//! Where servers and the load generator run: the study's cores, restricted
//! to those this machine lets the study use.

use crate::spec::StudyFile;

/// Online CPUs this process may use.
pub fn allowed_cores() -> Vec<usize> {
    httplab_sys::cpu::allowed_cores().unwrap_or_else(|_| {
        (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect()
    })
}

/// Server cores, client cores, and notes on what was changed or shared.
pub fn resolve_pinning(s: &StudyFile) -> (Vec<usize>, Vec<usize>, Vec<String>) {
    let allowed = allowed_cores();
    let mut notes = Vec::new();
    let mut pick = |want: &[u32], who: &str| -> Vec<usize> {
        let v: Vec<usize> = want
            .iter()
            .map(|&c| c as usize)
            .filter(|c| allowed.contains(c))
            .collect();
        if v.len() < want.len() {
            notes.push(format!("{who} cores {want:?} include cores this machine does not offer (have {allowed:?}); using {v:?}"));
        }
        v
    };
    let sc = pick(&s.pinning.server_cores, "server");
    let cc = pick(&s.pinning.client_cores, "client");
    if !sc.is_empty() && sc.iter().any(|c| cc.contains(c)) {
        notes.push(
            "server and client share cores: client-side limits may show up as server limits".into(),
        );
    }
    (sc, cc, notes)
}
