//! Lookup in the file sink's directory: every `*.jsonl` file (one
//! `{"_index","_id","_source"}` object a line, `{"_op":"delete",…}` removing) and every
//! `*.bulk` file (action and source lines, as `_bulk` reads them) is read once; the last
//! line of an (`_index`, `_id`) wins (documents written again after a restart are the same
//! document), a delete removes it. An index's count is its documents there.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::value::RawValue;
use serde_json::Value;

use crate::lookup::{Held, Keeps, Lookup, LookupError, LookupFuture, Wanted};
use engine::lookup::exact::Exact;
use engine::lookup::ids::IdRuns;

/// The documents of a directory the file sink wrote.
pub struct FileLookup {
    /// `_index` → `_id` → `_source` as its JSON text (read exactly when compared: never
    /// through a `serde_json::Value`, whose numbers are floats).
    docs: HashMap<String, HashMap<String, Box<RawValue>>>,
    dir: PathBuf,
}

impl FileLookup {
    /// Reads every `*.jsonl` and `*.bulk` file of `dir` (blocking).
    pub fn load(dir: &Path) -> Result<FileLookup, LookupError> {
        let io = |path: &Path, e| LookupError::Io {
            path: path.display().to_string(),
            source: e,
        };
        let mut files: Vec<PathBuf> = Vec::new();
        for e in std::fs::read_dir(dir).map_err(|e| io(dir, e))? {
            let path = e.map_err(|e| io(dir, e))?.path();
            if path
                .extension()
                .is_some_and(|x| x == "jsonl" || x == "bulk")
            {
                files.push(path);
            }
        }
        files.sort();
        let mut docs: HashMap<String, HashMap<String, Box<RawValue>>> = HashMap::new();
        for path in files {
            let text = std::fs::read_to_string(&path).map_err(|e| io(&path, e))?;
            let bulk = path.extension().is_some_and(|x| x == "bulk");
            read_lines(&path, &text, bulk, &mut docs)?;
        }
        Ok(FileLookup {
            docs,
            dir: dir.to_path_buf(),
        })
    }
}

/// A JSON-lines line: its `_source` kept as text.
#[derive(serde::Deserialize)]
struct Line {
    #[serde(rename = "_index")]
    index: Option<String>,
    #[serde(rename = "_id")]
    id: Option<String>,
    #[serde(rename = "_op")]
    op: Option<String>,
    #[serde(rename = "_source")]
    source: Option<Box<RawValue>>,
}

/// One file's lines into `docs`.
fn read_lines(
    path: &Path,
    text: &str,
    bulk: bool,
    docs: &mut HashMap<String, HashMap<String, Box<RawValue>>>,
) -> Result<(), LookupError> {
    let bad = |line: usize, why: String| LookupError::File {
        path: path.display().to_string(),
        line,
        why,
    };
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    while let Some((n, line)) = lines.next() {
        let field = |v: &Value, name: &str| {
            v.get(name)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| bad(n + 1, format!("no {name}")))
        };
        if bulk {
            let v: Value = serde_json::from_str(line).map_err(|e| bad(n + 1, e.to_string()))?;
            let Some((action, meta)) = v.as_object().and_then(|o| o.iter().next()) else {
                return Err(bad(n + 1, "not a _bulk action line".into()));
            };
            let (index, id) = (field(meta, "_index")?, field(meta, "_id")?);
            if action == "delete" {
                docs.entry(index).or_default().remove(&id);
                continue;
            }
            let Some((m, source)) = lines.next() else {
                return Err(bad(n + 1, format!("{action} without its source line")));
            };
            let source: Box<RawValue> =
                serde_json::from_str(source).map_err(|e| bad(m + 1, e.to_string()))?;
            docs.entry(index).or_default().insert(id, source);
        } else {
            let l: Line = serde_json::from_str(line).map_err(|e| bad(n + 1, e.to_string()))?;
            let index = l.index.ok_or_else(|| bad(n + 1, "no _index".into()))?;
            let id = l.id.ok_or_else(|| bad(n + 1, "no _id".into()))?;
            if l.op.as_deref() == Some("delete") {
                docs.entry(index).or_default().remove(&id);
                continue;
            }
            let source = match l.source {
                Some(s) => s,
                None => {
                    RawValue::from_string("null".into()).map_err(|e| bad(n + 1, e.to_string()))?
                }
            };
            docs.entry(index).or_default().insert(id, source);
        }
    }
    Ok(())
}

impl Lookup for FileLookup {
    fn prepare<'a>(&'a self, index: &'a str) -> LookupFuture<'a, Option<Keeps>> {
        Box::pin(async move { Ok(self.docs.get(index).map(|_| Keeps::default())) })
    }

    fn fetch<'a>(
        &'a self,
        index: &'a str,
        docs: &'a [Wanted],
        content: bool,
    ) -> LookupFuture<'a, Vec<Held>> {
        Box::pin(async move {
            let held = self.docs.get(index);
            Ok(docs
                .iter()
                .map(|d| match held.and_then(|h| h.get(&d.id)) {
                    None => Held::Absent,
                    Some(v) if content => match Exact::from_raw(v) {
                        Ok(v) => Held::Holds(v),
                        Err(e) => Held::Differs(format!("the target's JSON: {e}")),
                    },
                    Some(_) => Held::Present,
                })
                .collect())
        })
    }

    fn list_ids<'a>(&'a self, index: &'a str, into: &'a mut IdRuns) -> LookupFuture<'a, bool> {
        Box::pin(async move {
            for id in self.docs.get(index).into_iter().flat_map(HashMap::keys) {
                into.push(id.clone()).map_err(LookupError::Spill)?;
            }
            Ok(true)
        })
    }

    fn count<'a>(&'a self, index: &'a str) -> LookupFuture<'a, Option<u64>> {
        Box::pin(async move { Ok(Some(self.docs.get(index).map_or(0, |h| h.len() as u64))) })
    }

    fn describe(&self) -> String {
        self.dir.display().to_string()
    }
}

/// Documents per index in the directory (for messages and tests).
impl FileLookup {
    pub fn counts(&self) -> BTreeMap<&str, usize> {
        self.docs
            .iter()
            .map(|(i, d)| (i.as_str(), d.len()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonl_and_bulk_files_read_with_the_last_line_winning() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.jsonl"),
            "{\"_index\":\"a\",\"_id\":\"1\",\"_source\":{\"x\":1}}\n\
             {\"_index\":\"a\",\"_id\":\"2\",\"_source\":{\"x\":2}}\n\
             {\"_index\":\"a\",\"_id\":\"1\",\"_source\":{\"x\":3}}\n\
             {\"_op\":\"delete\",\"_index\":\"a\",\"_id\":\"2\"}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("b.bulk"),
            "{\"index\":{\"_index\":\"b\",\"_id\":\"7\"}}\n{\"y\":\"z\"}\n\
             {\"delete\":{\"_index\":\"b\",\"_id\":\"8\"}}\n",
        )
        .unwrap();
        let l = FileLookup::load(dir.path()).unwrap();
        assert_eq!(l.counts(), BTreeMap::from([("a", 1), ("b", 1)]));
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let want = |id: &str| Wanted {
            id: id.into(),
            routing: None,
            source: bytes::Bytes::new(),
        };
        let docs = [want("1"), want("2")];
        let held = rt.block_on(l.fetch("a", &docs, true)).unwrap();
        assert_eq!(
            held,
            vec![
                Held::Holds(Exact::parse(b"{\"x\": 3}").unwrap()),
                Held::Absent
            ]
        );
        let docs = [want("7")];
        let held = rt.block_on(l.fetch("b", &docs, false)).unwrap();
        assert_eq!(held, vec![Held::Present]);
        std::fs::write(
            dir.path().join("c.bulk"),
            "{\"index\":{\"_index\":\"c\",\"_id\":\"1\"}}\n",
        )
        .unwrap();
        let e = FileLookup::load(dir.path()).err().unwrap().to_string();
        assert!(
            e.contains("c.bulk line 1") && e.contains("without its source line"),
            "{e}"
        );
    }
}
