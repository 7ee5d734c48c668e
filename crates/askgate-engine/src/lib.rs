//! The life of a question, decided in one place (spec §6, §8).
//!
//! | module | owns |
//! | --- | --- |
//! | [`engine`] | accepting, waiting, cancelling, expiring and resolving questions |
//! | `delivery` | delivering to each surface of the recipient, and editing every copy into its summary ([`Engine::summary_of`]), naming a platform as its channel declares it |
//! | [`inbound`] | taps and typed replies from chat adapters ([`askgate_core::InboundSink`]) |
//! | `page` | askgate's page: whose link it is, which questions that person answers there, an answer given there, and the steps saved there as the person goes ([`PageProgress`]) |
//! | [`recipient`] | who a question goes to, on which surfaces, and who may answer it |
//! | [`plan`] | a question's reminders and escalations, made when it is asked, held out of quiet hours |
//! | `elsewhere` | following what other processes on a shared store changed: timers, waits ended, live views told, in batches |
//! | `steps` | taking the plan's steps as they fall due (reminders, escalations), and the failure notice to an admin |
//! | [`retention`] | deleting ended questions and remembered events past the retention |
//! | [`callbacks`] | sending a question's result to its agent's URL when it ends, retried until [`CALLBACK_WINDOW`] |
//! | [`clock`] | the injected clock (paused time in tests) |
//!
//! The engine talks to the [`askgate_store::Store`] and [`askgate_core::Channel`]
//! traits only: it knows no database, no HTTP and no platform. Every rule that
//! must hold across replicas (first answer wins, one pending question per
//! session) is a single store operation; what another replica changed
//! reaches the engine through the store's change feed
//! ([`askgate_store::Store::changes`]).

pub mod callbacks;
pub mod clock;
mod delivery;
mod elsewhere;
pub mod engine;
pub mod inbound;
mod page;
pub mod plan;
pub mod recipient;
pub mod retention;
mod steps;

pub use callbacks::{CALLBACK_WINDOW, CallbackSender};
pub use clock::Clock;
pub use delivery::ENDED_BEFORE_DELIVERY;
pub use engine::{
    Accepted, DirectAnswer, DirectItem, Engine, EngineError, Limits, NewQuestion, NoObserver, Observer,
    REDELIVER_AFTER, SWEEP_EVERY, SessionKind, Submitted, Update, WEB,
};
pub use inbound::cursor_key;
pub use page::PageProgress;
pub use plan::{Escalation, Nudges, Waiting};
pub use recipient::{Recipient, RecipientSurface};
