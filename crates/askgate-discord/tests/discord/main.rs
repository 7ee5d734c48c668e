//! The discord adapter's tests, one binary (a test binary each had linked
//! everything again): each module was a test file of its own.

mod config;
mod conformance;
mod decode;
mod message_content;
mod samples;
