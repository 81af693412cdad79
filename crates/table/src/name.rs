//! Table and column names. Names come from the command line and from the catalog; they
//! reach SQL only through [`quote_ident`], and are looked up in the catalog as parameters.

/// Why a table name does not parse; each names the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableNameError {
    #[error("table {0:?}: unclosed quote")]
    UnclosedQuote(String),
    #[error("table {0:?}: a quote inside an unquoted name")]
    QuoteInName(String),
    #[error("table {0:?}: empty name part")]
    EmptyPart(String),
    #[error("table {input:?}: unexpected {found:?} after a quoted name")]
    AfterQuote { input: String, found: char },
    #[error("table {0:?}: expected TABLE or SCHEMA.TABLE")]
    TooManyParts(String),
}

/// A table, optionally schema-qualified (`room_events`, `app.room_events`,
/// `"My Schema"."Events"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableName {
    pub schema: Option<String>,
    pub name: String,
}

impl TableName {
    /// Parses `name`, `schema.name`, with `"…"` quoting for parts that hold dots, capitals
    /// or anything else (`""` inside quotes is a quote). Unquoted parts are taken as
    /// written (PostgreSQL would fold them to lower case; we do too).
    pub fn parse(s: &str) -> Result<TableName, TableNameError> {
        let mut parts = Vec::new();
        let mut chars = s.chars().peekable();
        loop {
            let mut part = String::new();
            if chars.peek() == Some(&'"') {
                chars.next();
                loop {
                    match chars.next() {
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            part.push('"');
                        }
                        Some('"') => break,
                        Some(c) => part.push(c),
                        None => return Err(TableNameError::UnclosedQuote(s.to_string())),
                    }
                }
            } else {
                while let Some(&c) = chars.peek() {
                    if c == '.' {
                        break;
                    }
                    if c == '"' {
                        return Err(TableNameError::QuoteInName(s.to_string()));
                    }
                    part.push(c.to_ascii_lowercase());
                    chars.next();
                }
            }
            if part.is_empty() {
                return Err(TableNameError::EmptyPart(s.to_string()));
            }
            parts.push(part);
            match chars.next() {
                None => break,
                Some('.') => continue,
                Some(found) => {
                    return Err(TableNameError::AfterQuote {
                        input: s.to_string(),
                        found,
                    })
                }
            }
        }
        match parts.len() {
            1 => Ok(TableName {
                schema: None,
                name: parts.remove(0),
            }),
            2 => {
                let name = parts.remove(1);
                Ok(TableName {
                    schema: Some(parts.remove(0)),
                    name,
                })
            }
            _ => Err(TableNameError::TooManyParts(s.to_string())),
        }
    }

    /// The name as SQL (every part quoted).
    pub fn sql(&self) -> String {
        match &self.schema {
            Some(s) => format!("{}.{}", quote_ident(s), quote_ident(&self.name)),
            None => quote_ident(&self.name),
        }
    }
}

impl std::fmt::Display for TableName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.schema {
            Some(s) => write!(f, "{s}.{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// `name` as a quoted SQL identifier: in double quotes, quotes doubled. NUL cannot be in
/// an identifier; it is dropped (the catalog lookup then fails with the name shown).
pub fn quote_ident(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    out.push('"');
    for c in name.chars() {
        match c {
            '"' => out.push_str("\"\""),
            '\0' => {}
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_quote() {
        let t = TableName::parse("Room_Events").unwrap();
        assert_eq!(
            (t.schema.as_deref(), t.name.as_str()),
            (None, "room_events")
        );
        assert_eq!(t.sql(), "\"room_events\"");
        let t = TableName::parse("app.events").unwrap();
        assert_eq!(t.sql(), "\"app\".\"events\"");
        assert_eq!(t.to_string(), "app.events");
        let t = TableName::parse("\"My.Schema\".\"Ev\"\"il\"").unwrap();
        assert_eq!(t.schema.as_deref(), Some("My.Schema"));
        assert_eq!(t.name, "Ev\"il");
        assert_eq!(t.sql(), "\"My.Schema\".\"Ev\"\"il\"");
        for bad in ["", "a..b", "a.b.c", "\"open", "a\"b", "\"a\"x"] {
            assert!(TableName::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            quote_ident("x\"; DROP TABLE y; --"),
            "\"x\"\"; DROP TABLE y; --\""
        );
    }
}
