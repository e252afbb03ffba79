//! Whole documents: all runs, or all sweeps, by their kind.

use httplab_model::{Document, RunResult, SweepResult};

use crate::run::merge_runs;
use crate::sweep::{merge_sweeps, Analyze};
use crate::{MergeError, Merged, Options};

/// Merges whole documents: all runs, or all sweeps. `analyze` recomputes a
/// merged sweep target's saturation from its merged steps and SLO (the
/// binary passes `httplab_report::analysis::analyze`); without it the merged
/// saturation is left empty with method `"merged (not analysed)"`.
pub fn merge_documents(
    inputs: Vec<(String, Document)>,
    opts: &Options,
    analyze: Option<Analyze>,
) -> Result<Merged<Document>, MergeError> {
    let Some((first_name, first)) = inputs.first() else {
        return Err(MergeError::Empty);
    };
    let kind = |d: &Document| match d {
        Document::Run(r) => r.schema.clone(),
        Document::Sweep(s) => s.schema.clone(),
        Document::Study(s) => s.schema.clone(),
    };
    for (name, d) in &inputs {
        if let Document::Study(_) = d {
            return Err(MergeError::Unsupported {
                source_name: name.clone(),
                what: "a study cannot be merged; merge the runs or sweeps of its shards".into(),
            });
        }
        if std::mem::discriminant(d) != std::mem::discriminant(first) {
            return Err(MergeError::MixedSchemas {
                first: first_name.clone(),
                first_schema: kind(first),
                other: name.clone(),
                other_schema: kind(d),
            });
        }
    }
    match first {
        Document::Run(_) => {
            let runs: Vec<(String, RunResult)> = inputs
                .into_iter()
                .filter_map(|(n, d)| match d {
                    Document::Run(r) => Some((n, *r)),
                    _ => None,
                })
                .collect();
            let m = merge_runs(&runs, opts)?;
            Ok(Merged {
                result: Document::Run(Box::new(m.result)),
                warnings: m.warnings,
            })
        }
        Document::Sweep(_) => {
            let sweeps: Vec<(String, SweepResult)> = inputs
                .into_iter()
                .filter_map(|(n, d)| match d {
                    Document::Sweep(s) => Some((n, *s)),
                    _ => None,
                })
                .collect();
            let m = merge_sweeps(&sweeps, opts, analyze)?;
            Ok(Merged {
                result: Document::Sweep(Box::new(m.result)),
                warnings: m.warnings,
            })
        }
        Document::Study(_) => Err(MergeError::Unsupported {
            source_name: first_name.clone(),
            what: "a study cannot be merged".into(),
        }),
    }
}
