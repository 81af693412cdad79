//! UTC calendar formatting for request signing and log records (no time-zone database needed).

use std::time::{SystemTime, UNIX_EPOCH};

/// A UTC instant broken into calendar fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcTime {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub millis: u32,
}

impl UtcTime {
    pub fn from_system(t: SystemTime) -> UtcTime {
        let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
        let secs = d.as_secs() as i64;
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        UtcTime {
            year,
            month,
            day,
            hour: (rem / 3600) as u32,
            minute: (rem % 3600 / 60) as u32,
            second: (rem % 60) as u32,
            millis: d.subsec_millis(),
        }
    }

    /// `20150830T123600Z`, the `x-amz-date` form.
    pub fn amz_date(&self) -> String {
        format!(
            "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }

    /// `2015-08-30T12:36:00.000Z`.
    pub fn rfc3339(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.millis
        )
    }
}

/// Days since 1970-01-01 to a proleptic Gregorian date, by counting 400-year eras
/// (146 097 days each) and shifting the year to start in March so leap days fall last.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u32;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats_known_instants() {
        let t = UtcTime::from_system(UNIX_EPOCH + Duration::from_secs(1_440_938_160));
        assert_eq!(t.amz_date(), "20150830T123600Z");
        let t = UtcTime::from_system(UNIX_EPOCH + Duration::from_millis(951_782_400_123));
        assert_eq!(t.rfc3339(), "2000-02-29T00:00:00.123Z");
        let t = UtcTime::from_system(UNIX_EPOCH);
        assert_eq!(t.rfc3339(), "1970-01-01T00:00:00.000Z");
        let t = UtcTime::from_system(UNIX_EPOCH + Duration::from_secs(4_102_444_799));
        assert_eq!(t.amz_date(), "20991231T235959Z");
    }

    #[test]
    fn agrees_with_http_dates_over_many_days() {
        for day in (0..40_000u64).step_by(37) {
            let t = UNIX_EPOCH + Duration::from_secs(day * 86_400 + 3_723);
            let http = httpdate::fmt_http_date(t); // "Sun, 06 Nov 1994 08:49:37 GMT"
            let u = UtcTime::from_system(t);
            let months = [
                "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
            ];
            let expected = format!(
                "{:02} {} {:04} 01:02:03",
                u.day,
                months[u.month as usize - 1],
                u.year
            );
            assert_eq!(&http[5..25], expected, "day {day}");
        }
    }
}
