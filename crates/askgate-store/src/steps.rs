//! A write to a question's plan ([`Step`]s), the same in both stores: each
//! store reads the question under its lock (SQLite's one writer,
//! PostgreSQL's `FOR UPDATE`), applies the write here, and stores `steps`,
//! `next_step_at` and `surfaces` back when it was taken.

use crate::{QuestionRecord, QuestionStatus, Step, StepKind, Surface, Timestamp};

/// What to take of a question's plan ([`crate::Store::take_step`]).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum StepWrite<'a> {
    /// Its step `index`, at `at`, while the question is pending and the
    /// step still waits; `surfaces` (an escalation's) join the question's.
    Planned {
        /// The step's place in [`QuestionRecord::steps`].
        index: usize,
        /// When it is taken.
        at: Timestamp,
        /// The surfaces it adds, named apart from the question's own
        /// ([`Surface::key`]).
        surfaces: &'a [Surface],
    },
    /// A one-off step (a failure notice), recorded as taken unless the
    /// question has a step of its kind already: once per question, whether
    /// or not it has ended.
    Once(&'a Step),
}

/// Applies `write` to `record`: whether it was taken (and `record` changed).
pub(crate) fn apply(record: &mut QuestionRecord, write: &StepWrite<'_>) -> bool {
    match write {
        StepWrite::Planned { index, at, surfaces } => {
            if record.status != QuestionStatus::Pending {
                return false;
            }
            let Some(step) = record.steps.get_mut(*index) else {
                return false;
            };
            if step.done.is_some() {
                return false;
            }
            step.done = Some(*at);
            for surface in *surfaces {
                if record.surfaces.iter().all(|known| known.key() != surface.key()) {
                    record.surfaces.push(surface.clone());
                }
            }
            true
        }
        StepWrite::Once(step) => {
            let kind: StepKind = step.kind;
            if record.steps.iter().any(|known| known.kind == kind) {
                return false;
            }
            let mut step = (*step).clone();
            step.done = Some(step.done.unwrap_or(step.at));
            record.steps.push(step);
            true
        }
    }
}

/// A [`StepWrite`] that owns what it takes, to hand to another thread.
#[derive(Debug, Clone)]
pub(crate) enum OwnedStep {
    Planned {
        index: usize,
        at: Timestamp,
        surfaces: Vec<Surface>,
    },
    Once(Step),
}

impl From<StepWrite<'_>> for OwnedStep {
    fn from(write: StepWrite<'_>) -> Self {
        match write {
            StepWrite::Planned { index, at, surfaces } => Self::Planned {
                index,
                at,
                surfaces: surfaces.to_vec(),
            },
            StepWrite::Once(step) => Self::Once(step.clone()),
        }
    }
}

impl OwnedStep {
    pub(crate) fn as_write(&self) -> StepWrite<'_> {
        match self {
            Self::Planned { index, at, surfaces } => StepWrite::Planned {
                index: *index,
                at: *at,
                surfaces,
            },
            Self::Once(step) => StepWrite::Once(step),
        }
    }
}
