//! `[log]`: how askgate writes its logs (`format`, `level`).

use askgate_adapter::config::ConfigCheck;
use serde::Deserialize;

/// The filter when neither `[log] level` nor `RUST_LOG` says otherwise:
/// askgate's own events, without the SQL and MCP libraries' chatter.
pub(crate) const DEFAULT_LEVEL: &str = "info,sqlx=warn,rmcp=warn";

/// `[log]` as written.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawLog {
    format: Option<String>,
    level: Option<String>,
}

/// One event per line: readable text, or a JSON object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum LogFormat {
    /// `2026-12-05T03:14:54Z  INFO question accepted question=… channel=web`.
    #[default]
    Text,
    /// `{"timestamp":…,"level":"INFO","message":"question accepted","question":…,"channel":"web"}`.
    Json,
}

/// `[log]`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogConfig {
    pub(crate) format: LogFormat,
    /// A `tracing` filter (`info`, `warn,askgate_engine=debug`); `RUST_LOG`,
    /// when set, wins over it.
    pub(crate) level: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            format: LogFormat::Text,
            level: DEFAULT_LEVEL.to_owned(),
        }
    }
}

/// Reads `[log]`: an unknown format or a filter `tracing` cannot read is a
/// problem with its key, never a silent fallback.
pub(super) fn log(raw: &RawLog, check: &mut ConfigCheck<'_>) -> LogConfig {
    let format = match raw.format.as_deref() {
        None | Some("text") => LogFormat::Text,
        Some("json") => LogFormat::Json,
        Some(other) => {
            check.problem(
                "log.format",
                format!(
                    "\"{}\" is not a log format askgate has.",
                    askgate_core::text::excerpt(other)
                ),
                "use \"text\" (the default) or \"json\" (one JSON object per line).",
            );
            LogFormat::Text
        }
    };
    let level = match raw.level.as_deref() {
        None => DEFAULT_LEVEL.to_owned(),
        Some(level) => match tracing_subscriber::EnvFilter::try_new(level) {
            Ok(_) => level.to_owned(),
            Err(error) => {
                check.problem(
                    "log.level",
                    format!(
                        "\"{}\" is not a log filter: {error}.",
                        askgate_core::text::excerpt(level)
                    ),
                    "use a level (\"error\", \"warn\", \"info\", \"debug\", \"trace\"), optionally with \
                     per-crate levels: \"info,askgate_engine=debug\".",
                );
                DEFAULT_LEVEL.to_owned()
            }
        },
    };
    LogConfig { format, level }
}
