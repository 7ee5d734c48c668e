//! A write to one of a question's surfaces, the same in both stores: each
//! store reads the question's `surfaces` list under its lock (SQLite's one
//! writer, PostgreSQL's `FOR UPDATE`), applies the write here, and stores
//! the list back with the `finished` column it implies.

use askgate_core::QuestionId;
use askgate_core::channel::Delivery;

use crate::{StoreError, Surface, SurfaceState};

/// What happened on one of a question's surfaces ([`crate::Store::write_surface`]).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum SurfaceWrite<'a> {
    /// Delivered, in full or in part.
    Delivered(&'a Delivery),
    /// Given up on, for this reason.
    Failed(&'a str),
    /// Its messages show the summary now.
    Finished,
}

/// Applies `write` to the surface named `channel` ([`Surface::key`]).
pub(crate) fn apply(
    id: &QuestionId,
    surfaces: &mut [Surface],
    channel: &str,
    write: &SurfaceWrite<'_>,
) -> Result<(), StoreError> {
    let Some(surface) = surfaces.iter_mut().find(|surface| surface.key() == channel) else {
        return Err(StoreError::Corrupt(format!(
            "question {id} has no surface on channel \"{channel}\""
        )));
    };
    match write {
        SurfaceWrite::Delivered(delivery) => {
            // Taps and replies come from where it was delivered (a direct
            // message has an id of its own).
            if let Some(conversation) = delivery.conversation() {
                conversation.clone_into(&mut surface.conversation);
            }
            surface.state = if delivery.complete {
                SurfaceState::Delivered
            } else {
                SurfaceState::Sending
            };
            surface.delivery = Some((*delivery).clone());
        }
        SurfaceWrite::Failed(reason) => {
            surface.state = SurfaceState::Failed;
            surface.reason = Some((*reason).to_owned());
        }
        SurfaceWrite::Finished => surface.finished = true,
    }
    Ok(())
}

/// The question's `finished` column: no surface has messages left to edit.
pub(crate) fn all_finished(surfaces: &[Surface]) -> bool {
    !surfaces.iter().any(Surface::to_edit)
}
