//! Time as memd stores it: RFC 3339 UTC text with milliseconds, the format
//! SQLite's `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')` produces, so that text
//! comparison in SQL is time comparison.

use std::time::Duration;

use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{OffsetDateTime, UtcOffset};

/// The stored format: `2026-06-07T18:00:00.000Z`.
const STORED: &[time::format_description::BorrowedFormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

/// Formats a time in the stored format (UTC, milliseconds).
pub fn format(t: OffsetDateTime) -> String {
    t.to_offset(UtcOffset::UTC)
        .format(STORED)
        .unwrap_or_else(|_| "1970-01-01T00:00:00.000Z".to_string())
}

/// A Unix time in seconds, in the stored format (the epoch when out of
/// range).
pub fn format_unix(secs: u64) -> String {
    let t = i64::try_from(secs)
        .ok()
        .and_then(|s| OffsetDateTime::from_unix_timestamp(s).ok())
        .unwrap_or(OffsetDateTime::UNIX_EPOCH);
    format(t)
}

/// Now, in the stored format.
pub fn now() -> String {
    format(OffsetDateTime::now_utc())
}

/// Parses a duration like `90s`, `15m`, `2h`, `7d` or `1w`.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let unit = s.chars().last()?;
    let n: u64 = s[..s.len() - unit.len_utf8()].parse().ok()?;
    let secs = match unit {
        's' => n,
        'm' => n.checked_mul(60)?,
        'h' => n.checked_mul(3_600)?,
        'd' => n.checked_mul(86_400)?,
        'w' => n.checked_mul(7 * 86_400)?,
        _ => return None,
    };
    Some(Duration::from_secs(secs))
}

/// Parses an RFC 3339 time (any offset) into the stored format.
pub fn parse_time(s: &str) -> Option<String> {
    OffsetDateTime::parse(s.trim(), &Rfc3339).ok().map(format)
}

/// An event time: RFC 3339 (any offset), or a date or date and time without
/// an offset, taken as UTC (`2023-05-08`, `2023-05-08T13:56`,
/// `2023-05-08 13:56:07`), in the stored format.
///
/// # Errors
/// A message naming the accepted forms.
pub fn parse_event(s: &str) -> Result<String, String> {
    use time::{Date, PrimitiveDateTime, Time};
    let t = s.trim();
    if let Some(at) = parse_time(t) {
        return Ok(at);
    }
    let (date, clock) = match t.split_once(['T', ' ']) {
        Some((d, c)) => (d, Some(c)),
        None => (t, None),
    };
    let day = Date::parse(date, format_description!("[year]-[month]-[day]")).ok();
    let time = match clock {
        None => Some(Time::MIDNIGHT),
        Some(c) => Time::parse(c, format_description!("[hour]:[minute]:[second]"))
            .or_else(|_| Time::parse(c, format_description!("[hour]:[minute]")))
            .ok(),
    };
    match (day, time) {
        (Some(d), Some(t)) => Ok(format(PrimitiveDateTime::new(d, t).assume_utc())),
        _ => Err(format!(
            "`{s}` is neither an RFC 3339 time nor a date (2023-05-08, 2023-05-08T13:56)"
        )),
    }
}

/// A time given as a duration from now (`7d` = in 7 days) or RFC 3339; used
/// for expiry.
///
/// # Errors
/// A message naming the accepted forms.
pub fn parse_future(s: &str, now: OffsetDateTime) -> Result<String, String> {
    if let Some(d) = parse_duration(s) {
        let d = time::Duration::try_from(d).map_err(|_| format!("duration `{s}` is too long"))?;
        return now
            .checked_add(d)
            .map(format)
            .ok_or_else(|| format!("duration `{s}` is too long"));
    }
    parse_time(s).ok_or_else(|| {
        format!("`{s}` is neither a duration (30s, 15m, 2h, 7d, 1w) nor an RFC 3339 time")
    })
}

/// A time given as a duration before now (`7d` = 7 days ago) or RFC 3339;
/// used for `--since` and `--until`.
///
/// # Errors
/// A message naming the accepted forms.
pub fn parse_past(s: &str, now: OffsetDateTime) -> Result<String, String> {
    if let Some(d) = parse_duration(s) {
        let d = time::Duration::try_from(d).map_err(|_| format!("duration `{s}` is too long"))?;
        return now
            .checked_sub(d)
            .map(format)
            .ok_or_else(|| format!("duration `{s}` is too long"));
    }
    parse_time(s).ok_or_else(|| {
        format!("`{s}` is neither a duration (30s, 15m, 2h, 7d, 1w) nor an RFC 3339 time")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("2h"), Some(Duration::from_secs(7200)));
        assert_eq!(parse_duration("1w"), Some(Duration::from_secs(604_800)));
        assert_eq!(parse_duration("7"), None);
        assert_eq!(parse_duration("d"), None);
        assert_eq!(parse_duration("-3d"), None);
        assert_eq!(parse_duration("3y"), None);
        assert_eq!(parse_duration("99999999999999999999d"), None);
    }

    #[test]
    fn event_times_take_dates_and_times_without_an_offset_as_utc() {
        let ok = |s: &str| parse_event(s).unwrap();
        assert_eq!(ok("2023-05-08"), "2023-05-08T00:00:00.000Z");
        assert_eq!(ok("2023-05-08T13:56"), "2023-05-08T13:56:00.000Z");
        assert_eq!(ok("2023-05-08 13:56:07"), "2023-05-08T13:56:07.000Z");
        assert_eq!(ok("2023-05-08T13:56:07+02:00"), "2023-05-08T11:56:07.000Z");
        for bad in ["8 May 2023", "2023-13-01", "2023-05-08T25:00", ""] {
            assert!(parse_event(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn times_are_normalized_to_utc_millis() {
        assert_eq!(
            parse_time("2026-06-07T20:00:00+02:00").as_deref(),
            Some("2026-06-07T18:00:00.000Z")
        );
        assert_eq!(
            parse_time("2026-06-07T18:00:00.1234Z").as_deref(),
            Some("2026-06-07T18:00:00.123Z")
        );
        assert_eq!(parse_time("yesterday"), None);
    }

    #[test]
    fn future_and_past() {
        let now = datetime!(2026-01-01 00:00:00 UTC);
        assert_eq!(parse_future("7d", now).unwrap(), "2026-01-08T00:00:00.000Z");
        assert_eq!(parse_past("1h", now).unwrap(), "2025-12-31T23:00:00.000Z");
        assert!(parse_future("soon", now).is_err());
    }
}
