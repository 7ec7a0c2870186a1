//! Functions deployed from a directory of manifests (`node serve --deploy
//! DIR`): one TOML file per function naming its module and what it is
//! given beyond it, read and checked before the node starts, so that a
//! bad manifest stops the node with its file and field named rather than
//! leave it serving without the function.

use super::live::Host;
use anyhow::{Context, Result, bail};
use faasched_live::node::manifest::{Manifest, Settings};
use std::path::{Path, PathBuf};

/// The largest module a manifest may name: what `POST /register` takes.
const MAX_MODULE_BYTES: u64 = faasched_live::node::ingress::DEFAULT_MAX_MODULE_BYTES as u64;

/// Manifests a directory may hold: what a node registers at most by
/// default.
const MAX_MANIFESTS: usize = faasched_wasm::DEFAULT_MAX_MODULES;

/// A function read from its manifest, ready to register.
#[derive(Debug, Clone)]
pub struct Deployed {
    /// Its name.
    pub name: String,
    /// The manifest it came from.
    pub manifest: PathBuf,
    /// The module's bytes.
    pub module: Vec<u8>,
    /// Its limits, environment, outbound hosts and deadline.
    pub settings: Settings,
}

/// Every `*.toml` in `dir`, in name order, read and checked: errors name
/// the file and, where TOML's reader can, its line and field.
pub fn read_dir(dir: &Path) -> Result<Vec<Deployed>> {
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("--deploy {}", dir.display()))? {
        let path = entry
            .with_context(|| format!("--deploy {}", dir.display()))?
            .path();
        if path.extension().is_some_and(|e| e == "toml") {
            paths.push(path);
        }
    }
    paths.sort();
    if paths.len() > MAX_MANIFESTS {
        bail!(
            "--deploy {}: {} manifests, more than the {MAX_MANIFESTS} a node registers",
            dir.display(),
            paths.len()
        );
    }
    let mut deployed: Vec<Deployed> = Vec::new();
    for path in paths {
        let function = read(&path)?;
        if let Some(other) = deployed.iter().find(|d| d.name == function.name) {
            bail!(
                "{}: the name `{}` is {}'s too",
                path.display(),
                function.name,
                other.manifest.display()
            );
        }
        deployed.push(function);
    }
    Ok(deployed)
}

/// The functions `dir`'s manifests describe (none without a `dir`), and,
/// where `host` keeps a disk cache, each compiled into it here, once, so
/// that the nodes started after load their code from it in milliseconds
/// rather than each compile it (a Go function's compile takes seconds);
/// says on stderr what it compiled. Errors name the option.
pub fn read_compiled(dir: Option<&Path>, host: &Host) -> Result<Vec<Deployed>> {
    let deployed = match dir {
        Some(dir) => read_dir(dir)?,
        None => Vec::new(),
    };
    if let Some(cache) = host.cache.as_deref().filter(|_| !deployed.is_empty()) {
        precompile(host, cache, &deployed).context("--cache-dir")?;
    }
    Ok(deployed)
}

/// Compiles every function of `deployed` into `dir`, the disk cache of
/// `host`.
fn precompile(host: &Host, dir: &Path, deployed: &[Deployed]) -> Result<()> {
    let runtime = faasched_wasm::Runtime::new(&host.sandboxes())
        .with_context(|| format!("the sandboxes, to compile into {}", dir.display()))?;
    let compiler = runtime.compiler();
    let misses = || runtime.cache_stats().map_or(0, |s| s.misses);
    let (start, mut compiled) = (std::time::Instant::now(), 0);
    for d in deployed {
        let before = misses();
        compiler
            .prepare(&d.name, &d.module)
            .map_err(|f| anyhow::anyhow!("{}: {f}", d.manifest.display()))?;
        compiled += usize::from(misses() > before);
    }
    eprintln!(
        "{} function(s) in {}: {compiled} compiled, {} already there ({:.1} s)",
        deployed.len(),
        dir.display(),
        deployed.len() - compiled,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// One manifest, read and checked.
fn read(path: &Path) -> Result<Deployed> {
    let at = || path.display().to_string();
    let text = std::fs::read_to_string(path).with_context(at)?;
    let manifest: Manifest = toml::from_str(&text).with_context(at)?;
    let settings = manifest
        .settings()
        .map_err(|why| anyhow::anyhow!("{}: {why}", at()))?;
    let Some(module) = &manifest.module else {
        bail!("{}: missing field `module`", at());
    };
    let name = match manifest.name {
        Some(name) => name,
        None => path
            .file_stem()
            .and_then(|s| s.to_str())
            .with_context(|| format!("{}: the file's name is not UTF-8; give `name`", at()))?
            .to_owned(),
    };
    let module_path = path.parent().unwrap_or(Path::new(".")).join(module);
    let module_at = || format!("{}: module {}", at(), module_path.display());
    let meta = std::fs::metadata(&module_path).with_context(module_at)?;
    if !meta.is_file() {
        bail!("{}: not a regular file", module_at());
    }
    let size = meta.len();
    if size > MAX_MODULE_BYTES {
        bail!(
            "{}: {size} bytes, more than the {} MiB a module may be",
            module_at(),
            MAX_MODULE_BYTES >> 20
        );
    }
    let module = std::fs::read(&module_path).with_context(module_at)?;
    Ok(Deployed {
        name,
        manifest: path.to_owned(),
        module,
        settings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::MS;
    use faasched_wasm::Deployment;
    use faasched_workload::node::Deadline;

    fn write(dir: &Path, file: &str, text: &str) {
        std::fs::write(dir.join(file), text).unwrap();
    }

    #[test]
    fn a_directory_of_manifests_reads_in_name_order_with_their_settings() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "m.wat", "(module)");
        write(
            dir.path(),
            "b.toml",
            "module = \"m.wat\"\nmemory_limit_mib = 16\ncpu_limit_ms = 50\ndeadline = \"20ms\"\n\
             [env]\nMODE = \"fast\"\nA = \"1\"\n",
        );
        write(
            dir.path(),
            "a.toml",
            "module = \"m.wat\"\nname = \"first\"\n",
        );
        write(dir.path(), "notes.txt", "not a manifest");
        let deployed = read_dir(dir.path()).unwrap();
        let names: Vec<_> = deployed.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["first", "b"]);
        assert_eq!(deployed[0].settings, Settings::default());
        assert_eq!(deployed[0].module, b"(module)");
        let b = &deployed[1];
        assert_eq!(
            b.settings.deployment,
            Deployment {
                memory_limit: Some(16 << 20),
                cpu_limit: Some(50 * MS),
                env: vec![("A".into(), "1".into()), ("MODE".into(), "fast".into())],
                allow_outbound: Vec::new(),
            }
        );
        assert_eq!(b.settings.deadline, Some(Deadline::Absolute(20 * MS)));
    }

    #[test]
    fn a_bad_manifest_is_named_with_its_field() {
        for (text, wanted) in [
            ("module = \"m.wat\"\nmemory = 3\n", "unknown field `memory`"),
            ("module = \"m.wat\"\ncpu_limit_ms = \"x\"\n", "cpu_limit_ms"),
            ("module = \"m.wat\"\ndeadline = \"soon\"\n", "deadline"),
            ("module = \"absent.wasm\"\n", "module"),
            ("module = \".\"\n", "not a regular file"),
            ("name = \"x\"\n", "missing field `module`"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            write(dir.path(), "m.wat", "(module)");
            write(dir.path(), "f.toml", text);
            let e = format!("{:#}", read_dir(dir.path()).unwrap_err());
            assert!(e.contains("f.toml") && e.contains(wanted), "{text}: {e}");
        }
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "m.wat", "(module)");
        write(
            dir.path(),
            "a.toml",
            "module = \"m.wat\"\nname = \"same\"\n",
        );
        write(
            dir.path(),
            "b.toml",
            "module = \"m.wat\"\nname = \"same\"\n",
        );
        let e = format!("{:#}", read_dir(dir.path()).unwrap_err());
        assert!(e.contains("b.toml: the name `same` is"), "{e}");
    }
}
