//! Task timestamps on the wire: RFC 3339 / ISO 8601 in UTC with milliseconds
//! (`2026-07-28T10:30:00.000Z`), as `createdAt` and `lastUpdatedAt` need.
//!
//! Only formatting of a `SystemTime` the caller read (no clock is read here); timing
//! decisions (TTL, expiry) use tokio's `Instant` in the server and the client, so they
//! follow a paused clock in tests. One formatter for both sides of a task.
//! Invariant: the output always matches `YYYY-MM-DDThh:mm:ss.mmmZ`.

use std::time::{SystemTime, UNIX_EPOCH};

/// Formats `time` as `YYYY-MM-DDThh:mm:ss.mmmZ` (times before 1970 print as the epoch).
pub fn iso8601(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::iso8601;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn formats_known_instants() {
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        // 2026-07-28T10:30:00.250Z
        let t = UNIX_EPOCH + Duration::from_millis(1_785_234_600_250);
        assert_eq!(iso8601(t), "2026-07-28T10:30:00.250Z");
        // A leap day.
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(iso8601(t), "2000-02-29T00:00:00.000Z");
    }
}
