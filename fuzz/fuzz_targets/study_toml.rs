//! The study file reader (`httplab_study::spec::parse`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(study) = httplab_study::spec::parse(text, "fuzz.toml") {
        // A valid study has servers and workloads with distinct server names.
        assert!(!study.servers.is_empty() && !study.workloads.is_empty());
        let names: Vec<String> = httplab_study::spec::expand_servers(&study)
            .into_iter()
            .map(|s| s.name)
            .collect();
        let mut uniq = names.clone();
        uniq.sort();
        uniq.dedup();
        assert_eq!(uniq.len(), names.len(), "duplicate server names accepted");
    }
});
