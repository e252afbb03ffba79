//! Layer 4, analysis: from what the rounds measured to the study's
//! findings, without I/O. The cell records ([`cells`]), the family of
//! comparisons and its decisions ([`decisions`]), the sequential design's
//! interim look and final verdicts over the measured steps ([`design`]) and
//! the written answers to the study's questions ([`answers`]), and where each comparison's
//! noise lives, between slices or between rounds ([`noise`]). It reads the
//! measured steps and the plan ([`crate::plan::study_plan::StudyPlan`]: each
//! workload's name, kind and metric, the baseline, the questions), never the
//! study file.

pub mod answers;
pub mod cells;
pub mod decisions;
pub mod design;
pub mod facts;
pub mod noise;
