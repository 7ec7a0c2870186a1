//! Compiled code kept on disk ([`Config::cache`](crate::Config::cache)),
//! so that a module compiles once per machine and engine, not once per
//! registration or cold start: a Go command takes seconds to compile and
//! tens of ms to load compiled.
//!
//! An entry is named by the SHA-256 of the engine's compatibility hash
//! (wasmtime's version, target and settings) and the module's bytes, so a
//! changed engine or module is a miss, never a wrong hit. It holds a magic,
//! the SHA-256 of the compiled artifact, then the artifact; the digest is
//! checked before the artifact is loaded, so a torn or corrupted entry is
//! a miss (and is overwritten) rather than code run. Entries are written to
//! a temporary file and renamed into place; the directory is bounded in
//! bytes, the entries least recently used removed first.

// Loading compiled code is `unsafe` in wasmtime (it trusts the code it
// maps): this module is where that trust is earned, see `load`.
#![allow(unsafe_code)]

use std::fs;
use std::hash::Hasher;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{Engine, Module};

use crate::{Fault, Result};

/// Bytes the cache directory may hold, by default: 1 GiB (a few hundred Go
/// commands, thousands of C ones).
pub const DEFAULT_CACHE_MAX_BYTES: u64 = 1 << 30;

/// The first bytes of every entry: what wrote it and in which layout.
const MAGIC: &[u8; 8] = b"faasch\x01\x00";

/// What an entry's file name ends with.
const SUFFIX: &str = ".cwasm";

/// What the cache has done since the runtime started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Modules loaded compiled from the cache.
    pub hits: u64,
    /// Modules compiled because the cache had no entry for them.
    pub misses: u64,
    /// Entries found but not used: unreadable, torn, corrupted or refused
    /// by the engine (each then compiled and written again).
    pub rejected: u64,
    /// Entries that could not be written (the module was compiled and is
    /// used all the same).
    pub write_errors: u64,
}

/// What the cache keeps: a core module or a component, compiled. Each
/// serializes itself; loading one back is `unsafe` (see `load`).
pub(crate) trait Compiled: Sized {
    /// The artifact to keep.
    fn serialize(&self) -> wasmtime::Result<Vec<u8>>;

    /// The compiled code `artifact` holds.
    ///
    /// # Safety
    ///
    /// `artifact` must be what [`Compiled::serialize`] wrote for `engine`'s
    /// settings, unaltered.
    unsafe fn deserialize(engine: &Engine, artifact: &[u8]) -> wasmtime::Result<Self>;
}

impl Compiled for Module {
    fn serialize(&self) -> wasmtime::Result<Vec<u8>> {
        Module::serialize(self)
    }

    unsafe fn deserialize(engine: &Engine, artifact: &[u8]) -> wasmtime::Result<Self> {
        // SAFETY: passed on from the caller's.
        unsafe { Module::deserialize(engine, artifact) }
    }
}

impl Compiled for Component {
    fn serialize(&self) -> wasmtime::Result<Vec<u8>> {
        Component::serialize(self)
    }

    unsafe fn deserialize(engine: &Engine, artifact: &[u8]) -> wasmtime::Result<Self> {
        // SAFETY: passed on from the caller's.
        unsafe { Component::deserialize(engine, artifact) }
    }
}

/// The on-disk cache of one runtime.
#[derive(Debug)]
pub(crate) struct Cache {
    dir: PathBuf,
    max_bytes: u64,
    hits: AtomicU64,
    misses: AtomicU64,
    rejected: AtomicU64,
    write_errors: AtomicU64,
}

impl Cache {
    /// Opens (creating, mode 0700) the cache at `dir`, which holds at most
    /// `max_bytes` of entries.
    ///
    /// # Errors
    ///
    /// [`Fault::Config`] if `dir` cannot be created, is not a directory
    /// (a link to one is refused too), is not owned by this process's
    /// effective user, or may be written by its group or others: whoever
    /// can write there can choose the code every sandbox runs.
    pub fn open(dir: &Path, max_bytes: u64) -> Result<Self> {
        let refuse = |why: String| Fault::Config(format!("cache {}: {why}", dir.display()));
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| refuse(format!("cannot create it: {e}")))?;
        let meta = fs::symlink_metadata(dir).map_err(|e| refuse(e.to_string()))?;
        if !meta.is_dir() {
            return Err(refuse("not a directory".into()));
        }
        let me = rustix::process::geteuid().as_raw();
        if meta.uid() != me {
            return Err(refuse(format!(
                "owned by uid {}, not by this process's uid {me}",
                meta.uid()
            )));
        }
        if meta.mode() & 0o022 != 0 {
            return Err(refuse(format!(
                "mode {:o} lets others write it; chmod go-w it",
                meta.mode() & 0o777
            )));
        }
        Ok(Self {
            dir: dir.to_owned(),
            max_bytes,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            write_errors: AtomicU64::new(0),
        })
    }

    /// `wasm` compiled for `engine`: from the cache if it holds it, else
    /// compiled by `compile` and written to the cache.
    ///
    /// # Errors
    ///
    /// What `compile` returns; a cache that cannot be read or written is
    /// counted ([`CacheStats`]), not an error.
    pub fn compiled<T: Compiled>(
        &self,
        engine: &Engine,
        wasm: &[u8],
        compile: impl FnOnce() -> wasmtime::Result<T>,
    ) -> wasmtime::Result<T> {
        let path = self.dir.join(format!("{}{SUFFIX}", key(engine, wasm)));
        match load(engine, &path) {
            Loaded::Hit(module) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                // Used now: the last entry to go.
                let _ = fs::File::options()
                    .append(true)
                    .open(&path)
                    .and_then(|f| f.set_modified(SystemTime::now()));
                return Ok(module);
            }
            Loaded::Absent => self.misses.fetch_add(1, Ordering::Relaxed),
            Loaded::Rejected => self.rejected.fetch_add(1, Ordering::Relaxed),
        };
        let module = compile()?;
        if self.store(&module, &path).is_err() {
            self.write_errors.fetch_add(1, Ordering::Relaxed);
        }
        Ok(module)
    }

    /// Writes `module`'s entry at `path`, then trims the directory.
    fn store(&self, module: &impl Compiled, path: &Path) -> std::io::Result<()> {
        let artifact = module.serialize().map_err(std::io::Error::other)?;
        let mut file = tempfile::NamedTempFile::new_in(&self.dir)?;
        file.write_all(MAGIC)?;
        file.write_all(&Sha256::digest(&artifact))?;
        file.write_all(&artifact)?;
        file.as_file().sync_data()?;
        file.persist(path).map_err(|e| e.error)?;
        self.trim()
    }

    /// Removes the least recently used entries until the rest fit
    /// [`Self::max_bytes`](Cache).
    fn trim(&self) -> std::io::Result<()> {
        let mut entries = Vec::new();
        let mut total = 0u64;
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            if !entry.file_name().to_string_lossy().ends_with(SUFFIX) {
                continue;
            }
            let meta = entry.metadata()?;
            if meta.is_file() {
                total += meta.len();
                entries.push((meta.modified()?, meta.len(), entry.path()));
            }
        }
        entries.sort();
        for (_, len, path) in entries {
            if total <= self.max_bytes {
                break;
            }
            fs::remove_file(path)?;
            total -= len;
        }
        Ok(())
    }

    /// Its counters now.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
            write_errors: self.write_errors.load(Ordering::Relaxed),
        }
    }
}

/// What reading one entry found.
enum Loaded<T> {
    Hit(T),
    Absent,
    Rejected,
}

/// The entry at `path`, checked and loaded.
fn load<T: Compiled>(engine: &Engine, path: &Path) -> Loaded<T> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Loaded::Absent,
        Err(_) => return Loaded::Rejected,
    };
    let Some(rest) = bytes.strip_prefix(MAGIC) else {
        return Loaded::Rejected;
    };
    let Some((digest, artifact)) = rest.split_at_checked(32) else {
        return Loaded::Rejected;
    };
    if Sha256::digest(artifact)[..] != digest[..] {
        return Loaded::Rejected;
    }
    // SAFETY: `deserialize` requires bytes that `serialize` produced (for
    // a module or a component, as the caller asks; the other kind's
    // artifact is refused by wasmtime, a miss). These are: the directory is this user's and no one else's
    // to write (checked in `open`), entries are only ever written whole by
    // `store` from `serialize` and renamed into place, and the digest just
    // checked rules out a torn or corrupted file. A different wasmtime or
    // engine setting has a different key, and wasmtime itself refuses an
    // artifact of another version or configuration (a miss, then).
    match unsafe { T::deserialize(engine, artifact) } {
        Ok(compiled) => Loaded::Hit(compiled),
        Err(_) => Loaded::Rejected,
    }
}

/// The entry name of `wasm` compiled by `engine`: hex SHA-256 of the
/// engine's compatibility hash and the module.
fn key(engine: &Engine, wasm: &[u8]) -> String {
    let mut hasher = Sha256::new();
    std::hash::Hash::hash(
        &engine.precompile_compatibility_hash(),
        &mut Feed(&mut hasher),
    );
    hasher.update(wasm);
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Feeds what a [`Hash`](std::hash::Hash) writes into a SHA-256, so that
/// the engine's compatibility hash (only `Hash`) keys a file that outlives
/// the process: `std`'s hashers may change between Rust releases.
struct Feed<'a>(&'a mut Sha256);

impl Hasher for Feed<'_> {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// Never called by `Hash::hash`: the digest is read from the SHA-256.
    fn finish(&self) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WAT: &str = r#"(module (func (export "run") (param i64) (result i64) local.get 0))"#;

    fn compile(engine: &Engine, wasm: &[u8]) -> wasmtime::Result<Module> {
        Module::new(engine, wasm)
    }

    fn entries(dir: &Path) -> Vec<PathBuf> {
        let mut paths: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        paths.sort();
        paths
    }

    #[test]
    fn a_module_compiles_once_then_loads_and_a_corrupted_entry_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(&dir.path().join("c"), DEFAULT_CACHE_MAX_BYTES).unwrap();
        let engine = Engine::default();
        let wasm = wat::parse_str(WAT).unwrap();
        cache
            .compiled(&engine, &wasm, || compile(&engine, &wasm))
            .unwrap();
        let hit = cache
            .compiled::<Module>(&engine, &wasm, || panic!("compiled again"))
            .unwrap();
        assert!(hit.get_export("run").is_some());
        assert_eq!(
            cache.stats(),
            CacheStats {
                hits: 1,
                misses: 1,
                ..CacheStats::default()
            }
        );
        let [entry] = &entries(&dir.path().join("c"))[..] else {
            panic!("not one entry");
        };
        let mut bytes = fs::read(entry).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        fs::write(entry, &bytes).unwrap();
        cache
            .compiled(&engine, &wasm, || compile(&engine, &wasm))
            .unwrap();
        fs::write(entry, &bytes[..40]).unwrap();
        cache
            .compiled(&engine, &wasm, || compile(&engine, &wasm))
            .unwrap();
        assert_eq!(cache.stats().rejected, 2);
        // Rewritten whole: a hit again.
        cache
            .compiled::<Module>(&engine, &wasm, || panic!("compiled again"))
            .unwrap();
        assert_eq!(cache.stats().hits, 2);
    }

    #[test]
    fn another_engine_setting_or_module_is_another_entry() {
        let engine = Engine::default();
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        let other = Engine::new(&config).unwrap();
        let wasm = wat::parse_str(WAT).unwrap();
        assert_ne!(key(&engine, &wasm), key(&other, &wasm));
        assert_ne!(key(&engine, &wasm), key(&engine, &wasm[..wasm.len() - 1]));
        assert_eq!(key(&engine, &wasm), key(&Engine::default(), &wasm));
    }

    #[test]
    fn the_least_recently_used_entries_go_past_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::default();
        let modules: Vec<Vec<u8>> = (0..3)
            .map(|i| {
                wat::parse_str(format!(
                    r#"(module (func (export "run") (param i64) (result i64) i64.const {i}))"#
                ))
                .unwrap()
            })
            .collect();
        let probe = Cache::open(dir.path(), u64::MAX).unwrap();
        probe
            .compiled(&engine, &modules[0], || compile(&engine, &modules[0]))
            .unwrap();
        let one = fs::metadata(&entries(dir.path())[0]).unwrap().len();
        // Room for two entries and a little.
        let cache = Cache::open(dir.path(), 2 * one + one / 2).unwrap();
        let path = |wasm: &[u8]| dir.path().join(format!("{}{SUFFIX}", key(&engine, wasm)));
        let long_ago = |wasm: &[u8], s: u64| {
            let at = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(s);
            let file = fs::File::options().append(true).open(path(wasm)).unwrap();
            file.set_modified(at).unwrap();
        };
        cache
            .compiled(&engine, &modules[1], || compile(&engine, &modules[1]))
            .unwrap();
        long_ago(&modules[0], 1000);
        long_ago(&modules[1], 1001);
        // Using the older entry makes it the newer: the third written
        // evicts the other.
        cache
            .compiled::<Module>(&engine, &modules[0], || panic!("compiled again"))
            .unwrap();
        cache
            .compiled(&engine, &modules[2], || compile(&engine, &modules[2]))
            .unwrap();
        assert_eq!(entries(dir.path()).len(), 2);
        assert!(path(&modules[0]).exists());
        assert!(!path(&modules[1]).exists());
    }

    #[test]
    fn a_directory_others_may_write_or_a_file_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let open = fs::Permissions::from_mode(0o777);
        fs::set_permissions(dir.path(), open).unwrap();
        let e = Cache::open(dir.path(), 1).unwrap_err().to_string();
        assert!(e.contains("mode 777 lets others write it"), "{e}");
        let file = dir.path().join("f");
        fs::write(&file, b"").unwrap();
        let e = Cache::open(&file, 1).unwrap_err().to_string();
        assert!(
            e.contains("cannot create it") || e.contains("not a directory"),
            "{e}"
        );
    }
}
