//! Agent text and a person's words made inert for Matrix. askgate sends
//! plain text only (`body`, never `formatted_body`), so no markup is ever
//! read from it; and every event carries `m.mentions`, so that homeservers
//! and clients that follow the spec's intentional mentions (v1.7) notify
//! only whom it names. For clients that still match names in the text,
//! `@room` and `@user:server` are defused as well.

/// `text` with a word joiner after every `@` that starts a name, so that
/// it reads the same and mentions no one (the adapters' shared
/// [`askgate_adapter::mention::defuse`]).
pub use askgate_adapter::mention::defuse;
