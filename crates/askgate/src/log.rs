//! Logging: `tracing` events to stderr, one per line, as text or JSON
//! (`[log] format`), filtered by `RUST_LOG` when it is set, else by
//! `[log] level`.
//!
//! One event is one line in both formats, whatever its fields hold (a
//! platform's error text, a TOML snippet for the admin): a log shipper that
//! splits on newlines never cuts an event in two, and text written into a
//! field cannot forge a line of its own.

use std::io::{self, Write};

use tracing_subscriber::fmt::MakeWriter;

use crate::config::{LogConfig, LogFormat};

/// Installs the subscriber; a second call does nothing.
pub(crate) fn init(config: &LogConfig) {
    // RUST_LOG wins, as it does for every Rust program: an admin debugging
    // one process needs no edit of the shared configuration file.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(&config.level))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(crate::config::DEFAULT_LOG_LEVEL));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(OneLine(io::stderr));
    let _ = match config.format {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&io::stderr()))
            .try_init(),
        // Fields at the top level beside `message` (`question`, `channel`),
        // where log pipelines look for them; the span's fields too.
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
}

/// A writer that keeps each event on one line: tracing-subscriber formats
/// an event whole and writes it with one `write_all`, so every line break
/// but the last is inside a field, and is written as the two characters
/// `\n` (`\r` likewise). JSON already escapes them; text needs this.
#[derive(Debug, Clone, Copy)]
struct OneLine<M>(M);

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for OneLine<M> {
    type Writer = OneLineWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        OneLineWriter(self.0.make_writer())
    }
}

struct OneLineWriter<W>(W);

impl<W: Write> Write for OneLineWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let (body, end) = match buf.strip_suffix(b"\n") {
            Some(body) => (body, &b"\n"[..]),
            None => (buf, &b""[..]),
        };
        if !body.iter().any(|byte| matches!(byte, b'\n' | b'\r')) {
            self.0.write_all(buf)?;
            return Ok(buf.len());
        }
        let mut line = Vec::with_capacity(buf.len() + 16);
        for &byte in body {
            match byte {
                b'\n' => line.extend_from_slice(b"\\n"),
                b'\r' => line.extend_from_slice(b"\\r"),
                byte => line.push(byte),
            }
        }
        line.extend_from_slice(end);
        self.0.write_all(&line)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn through(text: &str) -> String {
        let mut out = Vec::new();
        OneLineWriter(&mut out).write_all(text.as_bytes()).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn line_breaks_inside_an_event_are_escaped_and_the_last_kept() {
        assert_eq!(
            through("INFO snippet=[recipients.x]\nchannel = \"tg\"\r\n\n"),
            "INFO snippet=[recipients.x]\\nchannel = \"tg\"\\r\\n\n"
        );
        assert_eq!(through("INFO one line\n"), "INFO one line\n");
        assert_eq!(through("no end"), "no end");
    }
}
