//! Time as a person lives it: time zones, quiet hours, the durations and
//! reminder points of the configuration, and a deadline written in a
//! person's local time.
//!
//! Pure, like the rest of the crate: every function takes the instants it
//! needs (milliseconds since the Unix epoch, as the store keeps them) and
//! reads no clock. The IANA time zone database is the one bundled into the
//! binary by `jiff` (`tzdb-bundle-always`, and [`Zone::parse`] asks that
//! bundle, never `jiff`'s global database): the container image is debian
//! slim, which has no `/usr/share/zoneinfo`, and the same configuration must
//! mean the same instants on every host.

use std::fmt;
use std::str::FromStr;
use std::sync::LazyLock;

use jiff::Timestamp;
use jiff::civil::{Date, DateTime};
use jiff::tz::{AmbiguousOffset, TimeZone, TimeZoneDatabase};

use crate::chrome::Locale;

/// The bundled IANA database, opened once: its data is compiled into the
/// binary, so opening it reads no file.
static BUNDLED: LazyLock<TimeZoneDatabase> = LazyLock::new(TimeZoneDatabase::bundled);

/// A configuration value this module could not read. Each message names the
/// text and says how to write it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WhenError {
    /// A time zone name that is not in the IANA database.
    #[error(
        "unknown time zone \"{name}\": use an IANA name such as \"Europe/Berlin\", \"America/New_York\" or \"UTC\""
    )]
    UnknownZone {
        /// The name as written.
        name: String,
    },
    /// Quiet hours that are not `HH:MM-HH:MM`, or that are empty.
    #[error("quiet hours \"{text}\": {reason}")]
    QuietHours {
        /// The text as written.
        text: String,
        /// What is wrong and how to write it.
        reason: String,
    },
    /// A duration that is not like `10m`, `1h30m`, `2d`.
    #[error("duration \"{text}\": {reason}")]
    Duration {
        /// The text as written.
        text: String,
        /// What is wrong and how to write it.
        reason: String,
    },
    /// A reminder point that is not like `50%`, `2m before`, `10m`.
    #[error("reminder point \"{text}\": {reason}")]
    Point {
        /// The text as written.
        text: String,
        /// What is wrong and how to write it.
        reason: String,
    },
}

/// An IANA time zone, like `Europe/Berlin`.
#[derive(Clone)]
pub struct Zone {
    /// The database's spelling of the name, shown back to the admin.
    name: String,
    tz: TimeZone,
}

impl Zone {
    /// Looks `name` up in the bundled IANA database. Names are matched
    /// without regard to case (as the database does) and kept in its
    /// spelling: `europe/berlin` is `Europe/Berlin`.
    pub fn parse(name: &str) -> Result<Self, WhenError> {
        let unknown = || WhenError::UnknownZone { name: name.to_owned() };
        let trimmed = name.trim();
        if trimmed.is_empty() {
            return Err(unknown());
        }
        let tz = BUNDLED.get(trimmed).map_err(|_| unknown())?;
        let name = tz.iana_name().unwrap_or(trimmed).to_owned();
        Ok(Self { name, tz })
    }

    /// UTC, the zone of a recipient who set none.
    pub fn utc() -> Self {
        Self {
            name: "UTC".to_owned(),
            tz: TimeZone::UTC,
        }
    }

    /// The zone's IANA name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The wall-clock date and time in this zone at `at_ms`.
    fn local(&self, at_ms: i64) -> DateTime {
        self.tz.to_datetime(instant(at_ms))
    }
}

impl Default for Zone {
    fn default() -> Self {
        Self::utc()
    }
}

impl fmt::Debug for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Zone").field(&self.name).finish()
    }
}

/// Two zones are the same when the database gave them the same name.
impl PartialEq for Zone {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for Zone {}

impl fmt::Display for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl FromStr for Zone {
    type Err = WhenError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::parse(name)
    }
}

/// Milliseconds since the epoch as a `jiff` instant, clamped to the years
/// jiff can represent (±9999): askgate's instants are never near them.
fn instant(at_ms: i64) -> Timestamp {
    Timestamp::from_millisecond(at_ms).unwrap_or(if at_ms < 0 { Timestamp::MIN } else { Timestamp::MAX })
}

/// A time of day to the minute, as minutes after midnight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Clock(u16);

impl Clock {
    fn hour(self) -> i8 {
        // At most 23: `Clock::parse` refuses more.
        i8::try_from(self.0 / 60).unwrap_or(0)
    }

    fn minute(self) -> i8 {
        i8::try_from(self.0 % 60).unwrap_or(0)
    }

    /// `H:MM` or `HH:MM`, 24-hour.
    fn parse(text: &str) -> Option<Self> {
        let (hours, minutes) = text.trim().split_once(':')?;
        let digits = |s: &str, len: std::ops::RangeInclusive<usize>| {
            (len.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse::<u16>().ok())
                .flatten()
        };
        let hours = digits(hours, 1..=2)?;
        let minutes = digits(minutes, 2..=2)?;
        (hours < 24 && minutes < 60).then_some(Self(hours * 60 + minutes))
    }

    /// The minute of the day `local` falls in.
    fn of(local: DateTime) -> Self {
        // hour and minute are within 0..24 and 0..60.
        Self(u16::try_from(i16::from(local.hour()) * 60 + i16::from(local.minute())).unwrap_or(0))
    }
}

impl fmt::Display for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02}:{:02}", self.0 / 60, self.0 % 60)
    }
}

/// A daily period in a person's local time when askgate does not nudge
/// them: `22:00-07:00` (over midnight) or `12:00-13:30`. The start is
/// inside, the end is not.
///
/// Whether an instant is quiet is read off the wall clock in the person's
/// zone, as they would read it: on the night clocks go back, a repeated
/// hour that falls in the period is quiet both times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuietHours {
    start: Clock,
    end: Clock,
}

impl QuietHours {
    /// Reads `HH:MM-HH:MM` (24-hour local time; the hour may have one digit).
    pub fn parse(text: &str) -> Result<Self, WhenError> {
        let problem = |reason: &str| WhenError::QuietHours {
            text: text.to_owned(),
            reason: reason.to_owned(),
        };
        let (start, end) = text
            .split_once('-')
            .ok_or_else(|| problem("write them as \"22:00-07:00\": a start and an end in 24-hour local time"))?;
        let time = |part: &str| {
            Clock::parse(part).ok_or_else(|| {
                problem(&format!(
                    "\"{}\" is not a time of day; write times as \"07:00\" (00:00 to 23:59)",
                    part.trim()
                ))
            })
        };
        let (start, end) = (time(start)?, time(end)?);
        if start == end {
            return Err(problem(
                "the start and the end are the same time, so the period would be empty (or the whole day); give two different times",
            ));
        }
        Ok(Self { start, end })
    }

    /// Whether the period runs past midnight (`22:00-07:00`).
    fn over_midnight(self) -> bool {
        self.start.0 > self.end.0
    }

    /// Whether the wall-clock minute `clock` is quiet.
    fn covers(self, clock: Clock) -> bool {
        if self.over_midnight() {
            clock.0 >= self.start.0 || clock.0 < self.end.0
        } else {
            self.start.0 <= clock.0 && clock.0 < self.end.0
        }
    }

    /// Whether `at_ms` falls inside the quiet hours in `zone`'s local time.
    pub fn contains(&self, at_ms: i64, zone: &Zone) -> bool {
        self.covers(Clock::of(zone.local(at_ms)))
    }
}

impl fmt::Display for QuietHours {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.start, self.end)
    }
}

impl FromStr for QuietHours {
    type Err = WhenError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

/// When a nudge due at `at_ms` may go to a person with these quiet hours in
/// `zone`: `at_ms` itself when it is outside them, else the instant the
/// quiet period containing it ends — its end time on the right local day
/// (the next day for `22:00-07:00` entered before midnight), whatever the
/// offset is that day.
///
/// An end time that does not exist that day (clocks jump over it) resolves
/// to the first instant after the jump; one that happens twice (clocks go
/// back) to the first of them after `at_ms`. An instant beyond the years
/// `jiff` represents is returned as it is.
pub fn hold(at_ms: i64, zone: &Zone, quiet: &QuietHours) -> i64 {
    let Ok(at) = Timestamp::from_millisecond(at_ms) else {
        return at_ms;
    };
    let local = zone.tz.to_datetime(at);
    if !quiet.covers(Clock::of(local)) {
        return at_ms;
    }
    let day = if quiet.over_midnight() && Clock::of(local).0 >= quiet.start.0 {
        local.date().tomorrow()
    } else {
        Ok(local.date())
    };
    let Ok(day) = day else { return at_ms };
    first_at_or_after(zone, day, quiet.end, at_ms)
        .map(Timestamp::as_millisecond)
        .filter(|&end| end > at_ms)
        .unwrap_or(at_ms)
}

/// The first instant after `after_ms` at which `zone`'s wall clock reads
/// `clock` on `day`, or the first instant after the jump when that time is
/// skipped.
fn first_at_or_after(zone: &Zone, day: Date, clock: Clock, after_ms: i64) -> Option<Timestamp> {
    let wall = day.at(clock.hour(), clock.minute(), 0, 0);
    match zone.tz.to_ambiguous_timestamp(wall).offset() {
        AmbiguousOffset::Unambiguous { offset } => offset.to_timestamp(wall).ok(),
        // The wall time read with the later offset is an instant before the
        // jump; the zone's next transition after it is the jump itself.
        AmbiguousOffset::Gap { after, .. } => {
            let before_jump = after.to_timestamp(wall).ok()?;
            zone.tz.following(before_jump).next().map(|t| t.timestamp())
        }
        // `before` is the offset of the first pass through the repeated hour.
        AmbiguousOffset::Fold { before, after } => [before, after]
            .into_iter()
            .filter_map(|offset| offset.to_timestamp(wall).ok())
            .find(|candidate| candidate.as_millisecond() > after_ms),
    }
}

/// The units of a duration, from the largest, with their seconds.
const UNITS: [(char, u32); 4] = [('d', 86_400), ('h', 3_600), ('m', 60), ('s', 1)];

/// Reads a duration: numbers with units `d`, `h`, `m`, `s`, largest first,
/// each at most once and without spaces: `10m`, `90s`, `1h30m`, `2d`,
/// `1d12h`. Returns seconds; zero is refused (no wait, reminder or
/// escalation is meant to take no time).
pub fn parse_duration(text: &str) -> Result<u32, WhenError> {
    let problem = |reason: String| WhenError::Duration {
        text: text.to_owned(),
        reason,
    };
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(problem(
            "it is empty; write a number and a unit, as in \"10m\" or \"1h30m\"".into(),
        ));
    }
    // A part's unit must come after the last one's in UNITS.
    let mut total: u64 = 0;
    let mut next_unit = 0;
    let mut rest = trimmed;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            let found = rest.chars().next().unwrap_or_default();
            return Err(problem(format!(
                "expected a number where \"{found}\" is; write it as \"10m\", \"90s\", \"1h30m\" or \"2d\" (no spaces)"
            )));
        }
        let (number, after) = rest.split_at(digits);
        let Some(unit) = after.chars().next() else {
            return Err(problem(format!(
                "\"{number}\" has no unit; add one of d, h, m or s, as in \"{number}s\""
            )));
        };
        if unit == '.' || unit == ',' {
            return Err(problem(
                "use whole numbers of a smaller unit, as in \"1h30m\" rather than \"1.5h\"".into(),
            ));
        }
        let Some(index) = UNITS.iter().position(|&(name, _)| name == unit) else {
            return Err(problem(format!(
                "\"{unit}\" is not a unit; use d (days), h (hours), m (minutes) or s (seconds)"
            )));
        };
        if index < next_unit {
            return Err(problem(
                "the units must go from days to seconds, each at most once, as in \"1d12h\" or \"1h30m\"".into(),
            ));
        }
        next_unit = index + 1;
        let number: u64 = number.parse().unwrap_or(u64::MAX);
        total = number
            .checked_mul(u64::from(UNITS[index].1))
            .and_then(|part| total.checked_add(part))
            .unwrap_or(u64::MAX);
        rest = &after[unit.len_utf8()..];
    }
    if total == 0 {
        return Err(problem("a duration must be longer than zero".into()));
    }
    u32::try_from(total).map_err(|_| problem(format!("it is longer than askgate counts ({} s at most)", u32::MAX)))
}

/// Writes `seconds` as [`parse_duration`] reads it, in the largest units
/// that divide it: `90` is `1m30s`, `86_400` is `1d`, `0` is `0s`.
pub fn format_duration(seconds: u32) -> String {
    if seconds == 0 {
        return "0s".to_owned();
    }
    let mut text = String::new();
    let mut left = seconds;
    for (unit, size) in UNITS {
        let count = left / size;
        left %= size;
        if count > 0 {
            text.push_str(&count.to_string());
            text.push(unit);
        }
    }
    text
}

/// When a reminder falls in a question's wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// `50%`: this share (1 to 99) of the wait after the question was asked.
    Share(u8),
    /// `2m before`: this many seconds before the question expires.
    BeforeExpiry(u32),
    /// `10m`: this many seconds after the question was asked.
    AfterAsk(u32),
}

impl Point {
    /// Reads `50%`, `2m before` or `10m` (durations as [`parse_duration`]).
    pub fn parse(text: &str) -> Result<Self, WhenError> {
        let problem = |reason: String| WhenError::Point {
            text: text.to_owned(),
            reason,
        };
        let trimmed = text.trim();
        if let Some(number) = trimmed.strip_suffix('%') {
            let share = number
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|share| (1..=99).contains(share) && number.trim().bytes().all(|b| b.is_ascii_digit()));
            return share
                .map(Self::Share)
                .ok_or_else(|| problem("a share of the wait is a whole number from 1% to 99%, as in \"50%\"".into()));
        }
        let mut words = trimmed.split_whitespace();
        let (duration, tail) = (words.next().unwrap_or_default(), words.next());
        let why = |error: WhenError| match error {
            WhenError::Duration { reason, .. } => problem(reason),
            other => other,
        };
        match (tail, words.next()) {
            (None, _) => parse_duration(duration).map(Self::AfterAsk).map_err(why),
            (Some("before"), None) => parse_duration(duration).map(Self::BeforeExpiry).map_err(why),
            _ => Err(problem(
                "write \"50%\" (a share of the wait), \"2m before\" (before it expires) or \"10m\" (after the question was asked)"
                    .into(),
            )),
        }
    }

    /// The instant of this point for a question asked at `created_ms` that
    /// expires at `expires_ms`; `None` when it is not strictly between them
    /// (a reminder at or after the end, or before the question, is none).
    pub fn at(&self, created_ms: i64, expires_ms: i64) -> Option<i64> {
        let at = match *self {
            Self::Share(share) => {
                let wait = i128::from(expires_ms) - i128::from(created_ms);
                i64::try_from(i128::from(created_ms) + wait * i128::from(share) / 100).ok()?
            }
            Self::BeforeExpiry(seconds) => expires_ms.checked_sub(i64::from(seconds) * 1000)?,
            Self::AfterAsk(seconds) => created_ms.checked_add(i64::from(seconds) * 1000)?,
        };
        (created_ms < at && at < expires_ms).then_some(at)
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Share(share) => write!(f, "{share}%"),
            Self::BeforeExpiry(seconds) => write!(f, "{} before", format_duration(seconds)),
            Self::AfterAsk(seconds) => f.write_str(&format_duration(seconds)),
        }
    }
}

impl FromStr for Point {
    type Err = WhenError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

/// When a question expires, for the person it is shown to: what
/// [`crate::render::render_by`] needs to head a long wait with its deadline
/// in their local time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deadline {
    /// When the question expires (its `expires_at`), in milliseconds since
    /// the epoch.
    pub at_ms: i64,
    /// Now, when the text is written: a deadline on the same local day is
    /// told by its time alone.
    pub now_ms: i64,
    /// The person's time zone.
    pub zone: Zone,
}

impl Deadline {
    /// The deadline as [`local_deadline`] writes it.
    pub fn text(&self, locale: Locale) -> String {
        local_deadline(self.at_ms, self.now_ms, &self.zone, locale)
    }
}

const WEEKDAYS_EN: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const WEEKDAYS_ZH: [&str; 7] = ["周一", "周二", "周三", "周四", "周五", "周六", "周日"];
const MONTHS_EN: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A deadline as a person in `zone` reads it, to the minute (rounded down,
/// like every time askgate tells a person): `09:32` when it is the same
/// local day as `now_ms`, else with the day — `Tue 8 Dec, 09:32` in
/// English, `12月8日 周二 09:32` in Chinese. No year: askgate's longest
/// wait is a week.
pub fn local_deadline(at_ms: i64, now_ms: i64, zone: &Zone, locale: Locale) -> String {
    let at = zone.local(at_ms);
    let clock = format!("{:02}:{:02}", at.hour(), at.minute());
    if at.date() == zone.local(now_ms).date() {
        return clock;
    }
    let weekday = usize::try_from(at.weekday().to_monday_zero_offset()).unwrap_or(0);
    let (month, day) = (at.month(), at.day());
    match locale {
        Locale::En => {
            let name = MONTHS_EN[usize::try_from(month - 1).unwrap_or(0)];
            format!("{} {day} {name}, {clock}", WEEKDAYS_EN[weekday])
        }
        Locale::ZhCn => format!("{month}月{day}日 {} {clock}", WEEKDAYS_ZH[weekday]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An RFC 3339 instant (with its offset) in milliseconds.
    fn ms(text: &str) -> i64 {
        text.parse::<Timestamp>().expect("an RFC 3339 instant").as_millisecond()
    }

    fn berlin() -> Zone {
        Zone::parse("Europe/Berlin").expect("in the bundled database")
    }

    fn quiet(text: &str) -> QuietHours {
        QuietHours::parse(text).expect("valid quiet hours")
    }

    #[test]
    fn zones_are_iana_names_from_the_bundle() {
        let zone = berlin();
        assert_eq!(zone.to_string(), "Europe/Berlin");
        assert_eq!(zone.name(), "Europe/Berlin");
        assert_eq!(Zone::parse("europe/berlin"), Ok(zone.clone()));
        assert_eq!(format!("{zone:?}"), "Zone(\"Europe/Berlin\")");
        assert_eq!(Zone::utc().to_string(), "UTC");
        assert_eq!(Zone::parse("UTC"), Ok(Zone::utc()));
        assert_eq!(Zone::default(), Zone::utc());
        assert_ne!(zone, Zone::utc());
        assert!(Zone::parse("Asia/Shanghai").is_ok());
    }

    #[test]
    fn an_unknown_zone_is_named_in_the_error() {
        for bad in ["Europe/Berln", "", "+02:00", "CEST-2"] {
            let error = Zone::parse(bad).expect_err(bad);
            assert_eq!(error, WhenError::UnknownZone { name: bad.to_owned() });
            let text = error.to_string();
            assert!(text.contains(&format!("\"{bad}\"")), "{text}");
            assert!(text.contains("Europe/Berlin"), "{text}");
        }
    }

    #[test]
    fn quiet_hours_parse_and_round_trip() {
        for text in ["22:00-07:00", "12:00-13:30", "00:00-06:00", "23:59-00:00"] {
            let hours = quiet(text);
            assert_eq!(hours.to_string(), text);
            assert_eq!(text.parse::<QuietHours>(), Ok(hours));
        }
        assert_eq!(quiet("7:05 - 9:00").to_string(), "07:05-09:00");
    }

    #[test]
    fn malformed_or_empty_quiet_hours_are_refused_with_a_reason() {
        for (text, says) in [
            ("22:00", "22:00-07:00"),
            ("22-07", "not a time of day"),
            ("24:00-07:00", "\"24:00\" is not a time of day"),
            ("22:60-07:00", "not a time of day"),
            ("22:00-7:0", "\"7:0\""),
            ("22:00-07:00-08:00", "not a time of day"),
            ("aa:bb-07:00", "not a time of day"),
            ("08:00-08:00", "the same time"),
            ("", "22:00-07:00"),
        ] {
            let error = QuietHours::parse(text).expect_err(text);
            let message = error.to_string();
            assert!(message.starts_with(&format!("quiet hours \"{text}\": ")), "{message}");
            assert!(message.contains(says), "{text}: {message}");
        }
    }

    #[test]
    fn outside_quiet_hours_nothing_is_held() {
        let night = quiet("22:00-07:00");
        let zone = berlin();
        // 12:00 and 21:59 CET, and 07:00 itself (the end is not quiet).
        for at in [
            "2026-01-15T12:00:00+01:00",
            "2026-01-15T21:59:59+01:00",
            "2026-01-16T07:00:00+01:00",
        ] {
            assert_eq!(hold(ms(at), &zone, &night), ms(at), "{at}");
            assert!(!night.contains(ms(at), &zone), "{at}");
        }
    }

    #[test]
    fn inside_quiet_hours_a_nudge_waits_for_their_end_on_the_right_day() {
        let night = quiet("22:00-07:00");
        let zone = berlin();
        // Before midnight: the end is the next morning.
        for at in ["2026-01-15T22:00:00+01:00", "2026-01-15T23:30:00+01:00"] {
            assert_eq!(hold(ms(at), &zone, &night), ms("2026-01-16T07:00:00+01:00"), "{at}");
            assert!(night.contains(ms(at), &zone));
        }
        // After midnight: the same morning.
        for at in ["2026-01-16T00:00:00+01:00", "2026-01-16T06:59:59.999+01:00"] {
            assert_eq!(hold(ms(at), &zone, &night), ms("2026-01-16T07:00:00+01:00"), "{at}");
        }
        // A period within one day.
        let lunch = quiet("12:00-13:30");
        assert_eq!(
            hold(ms("2026-07-01T12:45:00+02:00"), &zone, &lunch),
            ms("2026-07-01T13:30:00+02:00")
        );
        assert_eq!(
            hold(ms("2026-07-01T13:30:00+02:00"), &zone, &lunch),
            ms("2026-07-01T13:30:00+02:00")
        );
        assert_eq!(
            hold(ms("2026-07-01T11:59:00+02:00"), &zone, &lunch),
            ms("2026-07-01T11:59:00+02:00")
        );
    }

    #[test]
    fn the_hours_are_read_in_the_zone_not_in_utc() {
        let night = quiet("22:00-07:00");
        // 23:00 UTC is quiet in UTC, but midday in Shanghai…
        let at = ms("2026-01-15T23:00:00Z");
        assert_eq!(hold(at, &Zone::utc(), &night), ms("2026-01-16T07:00:00Z"));
        let shanghai = Zone::parse("Asia/Shanghai").expect("known");
        assert_eq!(hold(at, &shanghai, &night), at);
        // …and 15:00 UTC is 23:00 there, held to 07:00 Shanghai time.
        assert_eq!(
            hold(ms("2026-01-15T15:00:00Z"), &shanghai, &night),
            ms("2026-01-16T07:00:00+08:00")
        );
    }

    #[test]
    fn the_end_follows_the_offset_of_its_own_day_across_daylight_saving() {
        let night = quiet("22:00-07:00");
        let zone = berlin();
        // Clocks go forward on 2026-03-29: 23:00 CET, then 07:00 CEST —
        // eight wall-clock hours but seven real ones.
        let held = hold(ms("2026-03-28T23:00:00+01:00"), &zone, &night);
        assert_eq!(held, ms("2026-03-29T07:00:00+02:00"));
        assert_eq!(held, ms("2026-03-29T05:00:00Z"));
        // Clocks go back on 2026-10-25: 23:00 CEST, then 07:00 CET.
        let held = hold(ms("2026-10-24T23:00:00+02:00"), &zone, &night);
        assert_eq!(held, ms("2026-10-25T07:00:00+01:00"));
        assert_eq!(held, ms("2026-10-25T06:00:00Z"));
        // The same in New York (2026-03-08 and 2026-11-01).
        let new_york = Zone::parse("America/New_York").expect("known");
        assert_eq!(
            hold(ms("2026-03-07T23:00:00-05:00"), &new_york, &night),
            ms("2026-03-08T07:00:00-04:00")
        );
        assert_eq!(
            hold(ms("2026-10-31T23:00:00-04:00"), &new_york, &night),
            ms("2026-11-01T07:00:00-05:00")
        );
    }

    #[test]
    fn an_end_skipped_by_the_clocks_resolves_to_the_first_instant_after_the_jump() {
        // 02:30 does not exist in Berlin on 2026-03-29 (02:00 CET → 03:00 CEST).
        let night = quiet("22:00-02:30");
        let zone = berlin();
        let held = hold(ms("2026-03-28T23:00:00+01:00"), &zone, &night);
        assert_eq!(held, ms("2026-03-29T03:00:00+02:00"));
        assert_eq!(held, ms("2026-03-29T01:00:00Z"));
        // An end exactly at the start of the gap resolves the same way.
        let held = hold(ms("2026-03-29T01:30:00+01:00"), &zone, &quiet("01:00-02:00"));
        assert_eq!(held, ms("2026-03-29T01:00:00Z"));
    }

    #[test]
    fn an_end_the_clocks_repeat_is_the_first_after_the_nudge() {
        // 02:30 happens twice in Berlin on 2026-10-25 (03:00 CEST → 02:00 CET).
        let night = quiet("22:00-02:30");
        let zone = berlin();
        assert_eq!(
            hold(ms("2026-10-24T23:00:00+02:00"), &zone, &night),
            ms("2026-10-25T02:30:00+02:00")
        );
        // Between the two passes the wall clock reads 02:30-02:59: not quiet.
        let between = ms("2026-10-25T02:45:00+02:00");
        assert_eq!(hold(between, &zone, &night), between);
        // On the second pass 02:10 is quiet again, until the second 02:30.
        assert_eq!(
            hold(ms("2026-10-25T02:10:00+01:00"), &zone, &night),
            ms("2026-10-25T02:30:00+01:00")
        );
    }

    #[test]
    fn instants_beyond_the_calendar_are_returned_as_they_are() {
        let night = quiet("00:00-23:59");
        assert_eq!(hold(i64::MAX, &berlin(), &night), i64::MAX);
        assert_eq!(hold(i64::MIN, &berlin(), &night), i64::MIN);
    }

    #[test]
    fn durations_read_units_from_days_to_seconds() {
        for (text, seconds) in [
            ("10m", 600),
            ("90s", 90),
            ("1h30m", 5_400),
            ("2d", 172_800),
            ("1d12h", 129_600),
            ("7d", 604_800),
            ("1d2h3m4s", 93_784),
            (" 8h ", 28_800),
            ("0h5m", 300),
        ] {
            assert_eq!(parse_duration(text), Ok(seconds), "{text}");
        }
    }

    #[test]
    fn malformed_durations_say_how_to_write_them() {
        for (text, says) in [
            ("", "it is empty"),
            ("90", "\"90\" has no unit"),
            ("10x", "\"x\" is not a unit"),
            ("m", "expected a number where \"m\" is"),
            ("1h 30m", "expected a number where \" \" is"),
            ("30m1h", "from days to seconds"),
            ("1h1h", "from days to seconds"),
            ("0s", "longer than zero"),
            ("-5m", "expected a number"),
            ("1.5h", "rather than \"1.5h\""),
            ("50000d", "longer than askgate counts"),
            ("99999999999999999999999s", "longer than askgate counts"),
        ] {
            let error = parse_duration(text).expect_err(text);
            let message = error.to_string();
            assert!(message.starts_with(&format!("duration \"{text}\": ")), "{message}");
            assert!(message.contains(says), "{text}: {message}");
        }
    }

    #[test]
    fn durations_are_written_as_they_are_read() {
        for (seconds, text) in [
            (90, "1m30s"),
            (86_400, "1d"),
            (129_600, "1d12h"),
            (600, "10m"),
            (0, "0s"),
        ] {
            assert_eq!(format_duration(seconds), text);
        }
        for seconds in [1, 59, 61, 3_599, 3_600, 86_399, 93_784, 604_800, u32::MAX] {
            assert_eq!(parse_duration(&format_duration(seconds)), Ok(seconds));
        }
    }

    #[test]
    fn points_parse_and_round_trip() {
        for (text, point) in [
            ("50%", Point::Share(50)),
            ("2m before", Point::BeforeExpiry(120)),
            ("10m", Point::AfterAsk(600)),
            ("1h30m before", Point::BeforeExpiry(5_400)),
        ] {
            assert_eq!(Point::parse(text), Ok(point), "{text}");
            assert_eq!(point.to_string(), text);
            assert_eq!(point.to_string().parse::<Point>(), Ok(point));
        }
        assert_eq!(Point::parse(" 2m  before "), Ok(Point::BeforeExpiry(120)));
        assert_eq!(
            Point::AfterAsk(90).to_string().parse::<Point>(),
            Ok(Point::AfterAsk(90))
        );
    }

    #[test]
    fn malformed_points_are_refused_with_a_reason() {
        for (text, says) in [
            ("0%", "from 1% to 99%"),
            ("100%", "from 1% to 99%"),
            ("12.5%", "from 1% to 99%"),
            ("+5%", "from 1% to 99%"),
            ("2m after", "\"2m before\""),
            ("2m before expiry", "\"2m before\""),
            ("before", "expected a number"),
            ("10", "has no unit"),
            ("", "it is empty"),
        ] {
            let error = Point::parse(text).expect_err(text);
            let message = error.to_string();
            assert!(
                message.starts_with(&format!("reminder point \"{text}\": ")),
                "{message}"
            );
            assert!(message.contains(says), "{text}: {message}");
        }
    }

    #[test]
    fn a_point_falls_strictly_inside_the_wait_or_not_at_all() {
        let created = 1_000_000;
        let expires = created + 60_000;
        assert_eq!(Point::Share(50).at(created, expires), Some(created + 30_000));
        assert_eq!(Point::Share(1).at(created, expires), Some(created + 600));
        assert_eq!(Point::BeforeExpiry(20).at(created, expires), Some(expires - 20_000));
        assert_eq!(Point::AfterAsk(10).at(created, expires), Some(created + 10_000));
        // At or beyond either end: no reminder.
        assert_eq!(Point::BeforeExpiry(60).at(created, expires), None);
        assert_eq!(Point::BeforeExpiry(120).at(created, expires), None);
        assert_eq!(Point::AfterAsk(60).at(created, expires), None);
        assert_eq!(Point::AfterAsk(0).at(created, expires), None);
        assert_eq!(Point::Share(1).at(created, created + 50), None);
        assert_eq!(Point::Share(50).at(created, created), None);
        // A week-long wait in milliseconds does not overflow.
        let week = 7 * 86_400_000;
        assert_eq!(
            Point::Share(75).at(created, created + week),
            Some(created + week / 4 * 3)
        );
        assert_eq!(Point::AfterAsk(u32::MAX).at(i64::MAX - 1, i64::MAX), None);
        assert_eq!(Point::BeforeExpiry(u32::MAX).at(i64::MIN, i64::MIN + 1), None);
    }

    #[test]
    fn a_deadline_today_is_a_time_and_a_later_one_has_its_day() {
        let zone = berlin();
        let now = ms("2026-12-07T20:00:00+01:00");
        let same_day = ms("2026-12-07T23:59:59+01:00");
        assert_eq!(local_deadline(same_day, now, &zone, Locale::En), "23:59");
        assert_eq!(local_deadline(same_day, now, &zone, Locale::ZhCn), "23:59");
        // Rounded down to the minute.
        let tomorrow = ms("2026-12-08T09:32:59+01:00");
        assert_eq!(local_deadline(tomorrow, now, &zone, Locale::En), "Tue 8 Dec, 09:32");
        assert_eq!(local_deadline(tomorrow, now, &zone, Locale::ZhCn), "12月8日 周二 09:32");
        let sunday = ms("2027-01-03T07:05:00+01:00");
        assert_eq!(local_deadline(sunday, now, &zone, Locale::En), "Sun 3 Jan, 07:05");
        assert_eq!(local_deadline(sunday, now, &zone, Locale::ZhCn), "1月3日 周日 07:05");
    }

    #[test]
    fn the_day_of_a_deadline_is_the_local_day() {
        // 23:30 UTC on 7 Dec is already 8 Dec in Berlin, but not in UTC.
        let now = ms("2026-12-07T12:00:00Z");
        let at = ms("2026-12-07T23:30:00Z");
        assert_eq!(local_deadline(at, now, &Zone::utc(), Locale::En), "23:30");
        assert_eq!(local_deadline(at, now, &berlin(), Locale::En), "Tue 8 Dec, 00:30");
        // And in summer the offset is the summer one.
        let summer = ms("2026-07-01T07:00:00Z");
        assert_eq!(local_deadline(summer, summer, &berlin(), Locale::En), "09:00");
    }
}
