//! `rfs table verify` compares values exactly (issue #42): a numeric(40,20) and a 30-digit
//! integer copied to files, then one of each changed in its 20th significant digit — the
//! same 64-bit float, a different number — are named by key, exit 6; a timestamptz
//! compares as an instant (the same instant at another offset is equal, one microsecond
//! later is not).

mod table;

use table::{rfs, sqlite, text, Pg};

#[test]
fn numbers_changed_beyond_the_16th_digit_in_files_are_named_by_key() {
    let Some(pg) = Pg::start("numbers_changed_beyond_the_16th_digit_in_files_are_named_by_key")
    else {
        return;
    };
    pg.exec(
        "CREATE TABLE nums (id int8 PRIMARY KEY, d numeric(40,20), big numeric(30,0),
                            at timestamptz);
         INSERT INTO nums SELECT i, 12345678901234567890.12345678901234567890 + i,
                                123456789012345678901234567890 + i,
                                timestamptz '2024-05-01 00:00:00+00' + i * interval '1 s'
         FROM generate_series(1, 60) AS i;",
    );
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let store = sqlite(work.path(), "s.db");
    let sink = format!("file://{}", out.display());
    let args = |c: &mut std::process::Command| {
        c.args([
            "--source",
            &pg.url(),
            "--table",
            "public.nums",
            "--key",
            "id",
        ])
        .args(["--slots", "2", "--sink", &sink, "--store", &store]);
    };
    let mut c = rfs();
    c.args(["table", "run"]);
    args(&mut c);
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let verify = || {
        let mut c = rfs();
        c.args(["table", "verify", "--all"]);
        args(&mut c);
        c.output().unwrap()
    };
    let o = verify();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // In the files: row 7's decimal changed in its 21st significant digit (its first
    // fraction digit), row 9's integer in its 20th; row 12's decimal written with an
    // exponent (the same value).
    let edits = [
        (
            "12345678901234567897.12345678901234567890",
            "12345678901234567897.22345678901234567890",
        ),
        (
            "123456789012345678901234567899",
            "123456789012345678911234567899",
        ),
        (
            "12345678901234567902.12345678901234567890",
            "1.234567890123456790212345678901234567890e19",
        ),
        // Row 12's instant at another offset (equal), row 13's a microsecond later.
        ("\"2024-05-01T00:00:12Z\"", "\"2024-05-01T02:00:12+02:00\""),
        (
            "\"2024-05-01T00:00:13Z\"",
            "\"2024-05-01T00:00:13.000001Z\"",
        ),
    ];
    let mut done = 0;
    for e in std::fs::read_dir(&out).unwrap() {
        let path = e.unwrap().path();
        let mut body = std::fs::read_to_string(&path).unwrap();
        for (from, to) in edits {
            if body.contains(from) {
                body = body.replacen(from, to, 1);
                done += 1;
            }
        }
        std::fs::write(&path, body).unwrap();
    }
    assert_eq!(done, edits.len(), "every value found in {}", out.display());
    let o = verify();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(6), "{t}");
    assert!(t.contains("3 rows different in the target"), "{t}");
    assert!(
        t.contains("  7: field d: source 12345678901234567897.12345678901234567890, target 12345678901234567897.22345678901234567890"),
        "{t}"
    );
    assert!(
        t.contains("  9: field big: source 123456789012345678901234567899, target 123456789012345678911234567899"),
        "{t}"
    );
    assert!(
        t.contains(
            r#"  13: field at: source "2024-05-01T00:00:13Z", target "2024-05-01T00:00:13.000001Z""#
        ),
        "{t}"
    );
    assert!(!t.contains("  12:"), "{t}");
}
