//! Object-store backend (S3, GCS, Azure through the `object_store` crate) and the
//! read-ahead file handle that lets the synchronous Lucene reader scan remote blobs with
//! few, large requests.
//!
//! The store owns a small tokio runtime for its requests. Every synchronous call spawns
//! the request on that runtime and waits on a channel, so it works from any thread —
//! a blocking thread of the caller's runtime, a plain thread, even an async task (where
//! it blocks that task's worker for the duration of the request).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex};

use bytes::{Bytes, BytesMut};
use futures::TryStreamExt;
use lucene::{DirectoryError, FileHandle};
use object_store::path::Path as ObjPath;
use object_store::ObjectStore;

use crate::blob::{BlobMeta, BlobStore};
use crate::error::{chain, BlobError, Result};

/// Default read-ahead window for sequential scans of remote files.
pub const DEFAULT_WINDOW: u64 = 8 << 20;
/// Default number of windows the whole store keeps (fetched or in flight), whatever the
/// number of open files: with the default window, 64 MB.
pub const DEFAULT_WINDOWS: usize = 8;

/// Owns a tokio runtime and shuts it down without blocking when dropped (dropping a
/// runtime normally blocks, which panics inside async code).
struct Runtime(Option<tokio::runtime::Runtime>);

impl Runtime {
    fn new(url: &str) -> Result<Self> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("rfs-blob-io")
            .enable_all()
            .build()
            .map_err(|e| {
                BlobError::config_caused(url, "cannot start the object-store runtime", e)
            })?;
        Ok(Runtime(Some(rt)))
    }

    fn handle(&self) -> &tokio::runtime::Handle {
        self.0
            .as_ref()
            .expect("runtime present until drop")
            .handle()
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

struct Inner {
    store: Arc<dyn ObjectStore>,
    /// `scheme://bucket/base` for messages.
    url: String,
    /// Key prefix of the repository inside the bucket (no leading/trailing `/`).
    base: String,
    rt: Runtime,
    window: u64,
    /// Windows kept by the whole store, in least-recently-used order of eviction.
    max_windows: usize,
    windows: Mutex<Windows>,
    next_file: std::sync::atomic::AtomicU64,
    /// The AWS credentials S3 requests are signed with, named when S3 refuses them.
    aws_credentials: Option<sigv4::CredentialsProvider>,
}

/// The server refused the credentials (401/403). object_store reports a refused listing
/// as a generic error, so the status is read from its text too.
fn refused(e: &object_store::Error) -> bool {
    if matches!(
        e,
        object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. }
    ) {
        return true;
    }
    let text = chain(e);
    text.contains("403 Forbidden") || text.contains("401 Unauthorized")
}

impl Inner {
    /// The object key of blob `name`, exactly as written: `ObjPath::from` would
    /// percent-encode characters such as `%`, `~` or `#` and name another object. Only a
    /// name that is no valid key as it is (a control character, an empty or `..` segment)
    /// goes through that encoding.
    fn key(&self, name: &str) -> ObjPath {
        let full = if self.base.is_empty() {
            name.to_string()
        } else {
            format!("{}/{}", self.base, name)
        };
        ObjPath::parse(&full).unwrap_or_else(|_| ObjPath::from(full))
    }

    fn display(&self, name: &str) -> String {
        format!("{}/{}", self.url.trim_end_matches('/'), name)
    }

    fn error(&self, name: &str, action: &'static str, e: object_store::Error) -> BlobError {
        match e {
            object_store::Error::NotFound { .. } => BlobError::NotFound {
                blob: self.display(name),
            },
            e if self.aws_credentials.is_some() && refused(&e) => BlobError::Refused {
                blob: self.display(name),
                action,
                credentials: self
                    .aws_credentials
                    .as_ref()
                    .map(|p| p.source())
                    .unwrap_or_default(),
                source: Box::new(e),
            },
            other => BlobError::Backend {
                blob: self.display(name),
                action,
                source: Box::new(other),
            },
        }
    }

    /// Runs `fut` on the store's runtime and waits for it from this (any) thread.
    fn block<F>(&self, name: &str, action: &'static str, fut: F) -> Result<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.rt.handle().spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv().map_err(|_| BlobError::Backend {
            blob: self.display(name),
            action,
            source: "the request task ended without an answer (runtime shut down)".into(),
        })
    }

    fn get_range(self: &Arc<Self>, name: &str, range: Range<u64>) -> Result<Bytes> {
        let store = self.store.clone();
        let key = self.key(name);
        let r = range.clone();
        let bytes = self
            .block(name, "read", async move { store.get_range(&key, r).await })?
            .map_err(|e| self.error(name, "read", e))?;
        if bytes.len() as u64 != range.end - range.start {
            return Err(BlobError::corrupt(
                self.display(name),
                format!(
                    "ranged read {}..{} returned {} bytes",
                    range.start,
                    range.end,
                    bytes.len()
                ),
            ));
        }
        Ok(bytes)
    }
}

/// A repository in an object store: `s3://bucket/base_path`, `gs://…`, `az://…`.
#[derive(Clone)]
pub struct ObjectStoreBlobs {
    inner: Arc<Inner>,
}

impl fmt::Debug for ObjectStoreBlobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectStoreBlobs({})", self.inner.url)
    }
}

impl ObjectStoreBlobs {
    /// Wraps `store`; `url` is used in messages, `base` is the key prefix of the
    /// repository inside the bucket.
    pub fn new(store: Arc<dyn ObjectStore>, url: impl Into<String>, base: &str) -> Result<Self> {
        let url = url.into();
        Ok(ObjectStoreBlobs {
            inner: Arc::new(Inner {
                store,
                rt: Runtime::new(&url)?,
                url,
                base: base.trim_matches('/').to_string(),
                window: DEFAULT_WINDOW,
                max_windows: DEFAULT_WINDOWS,
                windows: Mutex::new(Windows::default()),
                next_file: std::sync::atomic::AtomicU64::new(0),
                aws_credentials: None,
            }),
        })
    }

    /// Names `provider`'s source in the errors of refused requests.
    pub fn with_aws_credentials(self, provider: sigv4::CredentialsProvider) -> Self {
        match Arc::try_unwrap(self.inner) {
            Ok(inner) => ObjectStoreBlobs {
                inner: Arc::new(Inner {
                    aws_credentials: Some(provider),
                    ..inner
                }),
            },
            Err(shared) => ObjectStoreBlobs { inner: shared },
        }
    }

    /// Sets the read-ahead window and how many windows the store keeps in all (at least
    /// two: the one being read and the next one being fetched).
    pub fn with_read_ahead(self, window: u64, max_windows: usize) -> Self {
        let inner = match Arc::try_unwrap(self.inner) {
            Ok(inner) => inner,
            Err(shared) => {
                tracing::warn!("read-ahead not changed: the store is already shared");
                return ObjectStoreBlobs { inner: shared };
            }
        };
        ObjectStoreBlobs {
            inner: Arc::new(Inner {
                window: window.max(64 << 10),
                max_windows: max_windows.max(2),
                ..inner
            }),
        }
    }

    /// The underlying object store.
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.inner.store
    }
}

impl ObjectStoreBlobs {
    /// One level of `dir` (`""`: the base path): its objects and its common prefixes.
    fn listing(&self, dir: &str) -> Result<object_store::ListResult> {
        let inner = &self.inner;
        let store = inner.store.clone();
        let prefix = if dir.is_empty() && inner.base.is_empty() {
            None
        } else if dir.is_empty() {
            Some(ObjPath::parse(&inner.base).unwrap_or_else(|_| ObjPath::from(inner.base.as_str())))
        } else {
            Some(inner.key(dir))
        };
        inner
            .block(dir, "list", async move {
                store.list_with_delimiter(prefix.as_ref()).await
            })?
            .map_err(|e| inner.error(dir, "list", e))
    }
}

impl BlobStore for ObjectStoreBlobs {
    fn location(&self) -> String {
        self.inner.url.clone()
    }

    fn base_path(&self) -> &str {
        &self.inner.base
    }

    fn bucket_root(&self) -> Result<Arc<dyn BlobStore>> {
        let inner = &self.inner;
        if inner.base.is_empty() {
            return Ok(Arc::new(self.clone()));
        }
        let url = inner.url.trim_end_matches('/');
        let url = url.strip_suffix(inner.base.as_str()).unwrap_or(url);
        let mut root = ObjectStoreBlobs::new(inner.store.clone(), url, "")?
            .with_read_ahead(inner.window, inner.max_windows);
        if let Some(p) = &inner.aws_credentials {
            root = root.with_aws_credentials(p.clone());
        }
        Ok(Arc::new(root))
    }

    fn list(&self, dir: &str, name_prefix: &str) -> Result<Vec<BlobMeta>> {
        let listing = self.listing(dir)?;
        let mut out: Vec<BlobMeta> = listing
            .objects
            .into_iter()
            .filter_map(|o| {
                let name = o.location.filename()?.to_string();
                name.starts_with(name_prefix)
                    .then_some(BlobMeta { name, len: o.size })
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn list_dirs(&self, dir: &str) -> Result<Vec<String>> {
        let listing = self.listing(dir)?;
        let mut out: Vec<String> = listing
            .common_prefixes
            .into_iter()
            .filter_map(|p| p.filename().map(str::to_string))
            .collect();
        out.sort();
        Ok(out)
    }

    fn len(&self, name: &str) -> Result<u64> {
        let inner = &self.inner;
        let store = inner.store.clone();
        let key = inner.key(name);
        let meta = inner
            .block(name, "length", async move { store.head(&key).await })?
            .map_err(|e| inner.error(name, "length", e))?;
        Ok(meta.size)
    }

    fn put(&self, name: &str, bytes: Bytes) -> Result<()> {
        let store = self.inner.store.clone();
        let key = self.inner.key(name);
        self.inner
            .block(name, "write", async move {
                store.put(&key, object_store::PutPayload::from(bytes)).await
            })?
            .map_err(|e| self.inner.error(name, "write", e))?;
        Ok(())
    }

    fn read(&self, name: &str) -> Result<Bytes> {
        let inner = &self.inner;
        let store = inner.store.clone();
        let key = inner.key(name);
        inner
            .block(name, "read", async move {
                let r = store.get(&key).await?;
                let mut buf = BytesMut::new();
                let mut stream = r.into_stream();
                while let Some(chunk) = stream.try_next().await? {
                    buf.extend_from_slice(&chunk);
                }
                Ok::<_, object_store::Error>(buf.freeze())
            })?
            .map_err(|e| inner.error(name, "read", e))
    }

    fn read_range(&self, name: &str, range: Range<u64>) -> Result<Bytes> {
        if range.start >= range.end {
            return Ok(Bytes::new());
        }
        self.inner.get_range(name, range)
    }

    fn open(&self, name: &str, len: u64) -> Result<Arc<dyn FileHandle>> {
        let id = self
            .inner
            .next_file
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(Arc::new(ReadAheadFile {
            inner: self.inner.clone(),
            last_end: std::sync::atomic::AtomicU64::new(u64::MAX),
            id,
            blob: name.to_string(),
            display: self.inner.display(name),
            len,
        }))
    }
}

/// Why a read-ahead window could not be filled. Shared by every read waiting on the
/// window, so it is `Clone`.
#[derive(Debug, Clone, thiserror::Error)]
enum WindowError {
    /// The store answered with fewer (or more) bytes than the window asked for.
    #[error("{blob}: ranged read {start}..{end} returned {got} bytes")]
    Short {
        blob: String,
        start: u64,
        end: u64,
        got: usize,
    },
    /// The request failed.
    #[error(transparent)]
    Read(Arc<BlobError>),
}

/// The bytes of one read-ahead window, filled by a request in flight.
#[derive(Default)]
struct WindowSlot {
    value: Mutex<Option<std::result::Result<Bytes, WindowError>>>,
    ready: Condvar,
}

impl WindowSlot {
    fn fill(&self, v: std::result::Result<Bytes, WindowError>) {
        *self.value.lock().unwrap_or_else(|p| p.into_inner()) = Some(v);
        self.ready.notify_all();
    }

    fn wait(&self) -> std::result::Result<Bytes, WindowError> {
        let mut g = self.value.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(v) = g.as_ref() {
                return v.clone();
            }
            g = self.ready.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// The windows of every open file of a store, bounded in number so that memory does not
/// grow with the number of files (a shard may have hundreds) or their size.
#[derive(Default)]
struct Windows {
    /// (file, start) → (end, slot, last use)
    map: HashMap<(u64, u64), (u64, Arc<WindowSlot>, u64)>,
    tick: u64,
}

/// A remote blob read through large windows: a read that continues the previous one and
/// lies outside every cached window fetches a window starting at its offset; a read in
/// the second half of a window prefetches the next one in the background. Sequential
/// stored-field scans therefore make one request per window and rarely wait. A read that
/// does not continue the previous one (a delta reading scattered documents) fetches just
/// its bytes. Reads are copied out of the window, so no returned buffer keeps a whole
/// window alive after it is evicted.
struct ReadAheadFile {
    inner: Arc<Inner>,
    /// Where the previous read of this file ended (`u64::MAX`: none yet).
    last_end: std::sync::atomic::AtomicU64,
    /// Key of this file in the store's window cache.
    id: u64,
    blob: String,
    display: String,
    len: u64,
}

impl fmt::Debug for ReadAheadFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ReadAheadFile({}, {} bytes)", self.display, self.len)
    }
}

impl ReadAheadFile {
    /// Starts fetching `start..end` unless a window already starts there; returns its slot.
    fn start_window(&self, w: &mut Windows, start: u64, end: u64) -> Arc<WindowSlot> {
        w.tick += 1;
        let tick = w.tick;
        if let Some(e) = w.map.get_mut(&(self.id, start)) {
            if e.0 >= end {
                e.2 = tick;
                return e.1.clone();
            }
        }
        while w.map.len() >= self.inner.max_windows {
            let oldest = w.map.iter().min_by_key(|(_, v)| v.2).map(|(k, _)| *k);
            match oldest {
                Some(k) => {
                    w.map.remove(&k);
                }
                None => break,
            }
        }
        let slot = Arc::new(WindowSlot::default());
        w.map.insert((self.id, start), (end, slot.clone(), tick));
        let store = self.inner.store.clone();
        let key = self.inner.key(&self.blob);
        let s = slot.clone();
        let display = self.display.clone();
        self.inner.rt.handle().spawn(async move {
            let r = store.get_range(&key, start..end).await;
            s.fill(match r {
                Ok(b) if b.len() as u64 == end - start => Ok(b),
                Ok(b) => Err(WindowError::Short {
                    blob: display,
                    start,
                    end,
                    got: b.len(),
                }),
                Err(e) => Err(WindowError::Read(Arc::new(BlobError::Backend {
                    blob: display,
                    action: "read",
                    source: Box::new(e),
                }))),
            });
        });
        slot
    }
}

impl FileHandle for ReadAheadFile {
    fn name(&self) -> &str {
        &self.display
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn read_bytes(&self, range: Range<u64>) -> std::result::Result<Bytes, DirectoryError> {
        // Before any request or buffer: a range past the end (or reversed, or near
        // u64::MAX) is an error naming the blob.
        lucene::directory::check_range(&self.display, self.len, &range)?;
        if range.start == range.end {
            return Ok(Bytes::new());
        }
        let window = self.inner.window;
        let backend = |message: String| DirectoryError::Backend {
            file: self.display.clone(),
            message,
        };
        // Reads larger than a window go straight to the store.
        if range.end - range.start >= window {
            return self
                .inner
                .get_range(&self.blob, range)
                .map_err(|e| backend(chain(&e)));
        }
        let continues = self
            .last_end
            .swap(range.end, std::sync::atomic::Ordering::Relaxed)
            == range.start;
        let (start, slot) = {
            let mut w = self.inner.windows.lock().unwrap_or_else(|p| p.into_inner());
            w.tick += 1;
            let tick = w.tick;
            let hit = w
                .map
                .iter_mut()
                .find(|((f, s), v)| *f == self.id && *s <= range.start && range.end <= v.0)
                .map(|((_, s), v)| {
                    v.2 = tick;
                    (*s, v.0, v.1.clone())
                });
            let (start, end, slot) = match hit {
                Some(h) => h,
                None if !continues => {
                    // A random read: its bytes only, no window.
                    drop(w);
                    return self
                        .inner
                        .get_range(&self.blob, range)
                        .map_err(|e| backend(chain(&e)));
                }
                None => {
                    let end = (range.start + window).min(self.len);
                    let slot = self.start_window(&mut w, range.start, end);
                    (range.start, end, slot)
                }
            };
            // Past the middle of this window: fetch the next one in the background.
            let prefetch = range.end > start + (end - start) / 2
                && end < self.len
                && !w.map.contains_key(&(self.id, end));
            if prefetch {
                let next_end = (end + window).min(self.len);
                self.start_window(&mut w, end, next_end);
            }
            (start, slot)
        };
        let data = slot.wait().map_err(|e| backend(chain(&e)))?;
        let a = (range.start - start) as usize;
        let b = (range.end - start) as usize;
        if b > data.len() {
            return Err(backend(format!(
                "window at {start} holds {} bytes, read needs {b}",
                data.len()
            )));
        }
        Ok(Bytes::copy_from_slice(&data[a..b]))
    }
}

impl Drop for ReadAheadFile {
    fn drop(&mut self) {
        let mut w = self.inner.windows.lock().unwrap_or_else(|p| p.into_inner());
        w.map.retain(|(f, _), _| *f != self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;
    use object_store::PutPayload;

    fn store_with(name: &str, data: Vec<u8>) -> ObjectStoreBlobs {
        let mem = Arc::new(InMemory::new());
        let s = ObjectStoreBlobs::new(mem.clone(), "mem://bucket/base", "base")
            .unwrap()
            .with_read_ahead(64 << 10, 2);
        let m = mem.clone();
        let key = ObjPath::from(format!("base/{name}"));
        s.inner
            .block(name, "write", async move {
                m.put(&key, PutPayload::from(data)).await
            })
            .unwrap()
            .unwrap();
        s
    }

    #[test]
    fn read_ahead_file_serves_sequential_and_random_reads() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let s = store_with("indices/x/0/__a", data.clone());
        assert_eq!(s.len("indices/x/0/__a").unwrap(), 300_000);
        let listed = s.list("indices/x/0", "__").unwrap();
        assert_eq!(
            listed,
            vec![BlobMeta {
                name: "__a".into(),
                len: 300_000
            }]
        );
        assert!(s.list("indices/x/0", "index-").unwrap().is_empty());
        let f = s.open("indices/x/0/__a", 300_000).unwrap();
        let mut pos = 0u64;
        while pos < 300_000 {
            let end = (pos + 7_777).min(300_000);
            assert_eq!(
                &f.read_bytes(pos..end).unwrap()[..],
                &data[pos as usize..end as usize]
            );
            pos = end;
        }
        for (a, b) in [(299_990, 300_000), (5, 100_000), (65_530, 65_540), (0, 1)] {
            assert_eq!(
                &f.read_bytes(a..b).unwrap()[..],
                &data[a as usize..b as usize]
            );
        }
        // Scattered reads of a fresh handle fetch their bytes only: no window is opened.
        let g = s.open("indices/x/0/__a", 300_000).unwrap();
        s.inner.windows.lock().unwrap().map.clear();
        for (a, b) in [(200_000, 200_100), (10, 50), (150_000, 150_010)] {
            assert_eq!(
                &g.read_bytes(a..b).unwrap()[..],
                &data[a as usize..b as usize]
            );
        }
        assert!(s.inner.windows.lock().unwrap().map.is_empty());
        assert!(matches!(
            s.read("indices/x/0/missing"),
            Err(BlobError::NotFound { .. })
        ));
        assert_eq!(
            &s.read_range("indices/x/0/__a", 10..20).unwrap()[..],
            &data[10..20]
        );
    }

    #[test]
    fn windows_are_bounded_for_the_whole_store() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 241) as u8).collect();
        let s = store_with("indices/x/0/__a", data.clone());
        // Many handles on the same blob stand for the many files of a large shard.
        let files: Vec<_> = (0..10)
            .map(|_| s.open("indices/x/0/__a", 200_000).unwrap())
            .collect();
        for (i, f) in files.iter().enumerate() {
            let a = (i as u64) * 10_000;
            // The second read continues the first: a sequential scan, read through windows.
            for (x, y) in [(a, a + 20_000), (a + 20_000, a + 40_000)] {
                assert_eq!(
                    &f.read_bytes(x..y).unwrap()[..],
                    &data[x as usize..y as usize]
                );
            }
            let held = s.inner.windows.lock().unwrap().map.len();
            assert!(
                (1..=2).contains(&held),
                "{held} windows held with a budget of 2"
            );
        }
        drop(files);
        assert!(s.inner.windows.lock().unwrap().map.is_empty());
    }
}
