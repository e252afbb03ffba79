//! The result-document reader behind `httplab report` and `merge`
//! (`httplab_report::read_document` is `Document::from_json` on the file's
//! text), then what the report does with a document: embedded histograms
//! decoded, the tables rendered.
#![no_main]
use httplab_model::{Document, Latency};
use libfuzzer_sys::fuzz_target;

/// Decodes every embedded histogram (objects with an `hdr` string).
fn histograms(v: &serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            if m.get("hdr").is_some_and(|h| h.is_string()) {
                if let Ok(l) = serde_json::from_value::<Latency>(v.clone()) {
                    if let Ok(Some(h)) = l.histogram() {
                        let _ = h.value_at_quantile(0.99);
                    }
                }
            }
            m.values().for_each(histograms);
        }
        serde_json::Value::Array(a) => a.iter().for_each(histograms),
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(doc) = Document::from_json(text) else {
        return;
    };
    // What was read can be written and read again.
    let again = match &doc {
        Document::Run(r) => serde_json::to_string(r),
        Document::Sweep(s) => serde_json::to_string(s),
        Document::Study(s) => serde_json::to_string(s),
    }
    .expect("a document that was read serialises");
    if let Err(e) = Document::from_json(&again) {
        panic!("written document does not read back: {e}");
    }
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
        histograms(&v);
    }
    let docs = [doc];
    let collected = httplab_report::data::collect(&docs);
    for t in httplab_report::text::all_tables(&collected) {
        let _ = format!("{t:?}");
    }
});
