//! Result callbacks: when a question ends, askgate sends its result to the
//! agent's URL, signed by the Standard Webhooks specification
//! (<https://www.standardwebhooks.com/>), so that a receiver checks it with
//! any Standard Webhooks library.

mod send;
mod sign;

pub(crate) use send::HttpSender;
pub(crate) use sign::WebhookSecret;
