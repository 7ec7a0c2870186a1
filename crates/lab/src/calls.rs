//! What a workload's requests are sent as (`--function`, `--body`,
//! `--calls`): `spin` of their work, or, for the workload functions given,
//! a real function with a body. `node load`'s, `node replay`'s and the
//! live cluster's.
//!
//! A calls file says it for several functions at once: a TOML table per
//! label, its `call` and optionally its `body`, a file whose path is
//! relative to the calls file's directory (`functions/functionbench.toml`
//! maps a live cluster's FunctionBench table onto the function suite):
//!
//! ```toml
//! [json-parsing]
//! call = "json?n=4"
//! body = "inputs/records.json"
//! ```

use anyhow::{Context, Result};
use bytes::Bytes;
use faasched_live::node::load::{BodyFile, Calls, Mapping, read_body};
use faasched_model::Functions;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The largest calls file read, bytes: far more than a table of every
/// function a workload has needs.
const MAX_CALLS_FILE: u64 = 1 << 20;

/// What a workload's requests are sent as: `spin` of their work, or, for
/// the functions given here, a real function.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct CallOptions {
    /// Send the requests of workload function LABEL to a real function
    /// instead of `spin` of their work: `POST /invoke/CALL`, CALL being
    /// NAME or NAME?QUERY, each request still labelled LABEL and carrying
    /// its own deadline; functions not given stay `spin`. A LABEL that
    /// names no function but the copies of one (a live cluster's
    /// `aes-encryption-0` to `-9`) maps every copy. Repeat it per
    /// function. For running the paper's workloads on real functions: the
    /// colocated workload's short and long streams as `--function
    /// short=hello-http --function long=primes-http?n=300000` against a
    /// node that serves both (`node serve --deploy DIR`). In `node replay`,
    /// whose node runs in this process, CALL is one of its built-ins (the
    /// paper's Fig. 1 is `--function short=fib?n=1 --function
    /// long=fib?n=32`) or a function its --deploy registers.
    #[arg(long = "function", value_name = "LABEL=CALL")]
    pub functions: Vec<Mapping>,
    /// Send FILE's bytes as the body of LABEL's requests, LABEL given a
    /// --function (a WASI command or component reads it). FILE is read once
    /// at the start, a regular file of 1 MiB at most (a node's default
    /// --max-body-kib). Repeat it per function.
    #[arg(long = "body", value_name = "LABEL=FILE")]
    pub bodies: Vec<BodyFile>,
    /// The --function and --body of several functions in one TOML file: a
    /// table per LABEL with its `call` and optionally its `body` (a path
    /// relative to FILE's directory). `functions/functionbench.toml` sends
    /// a live cluster's FunctionBench functions to the function suite
    /// (`scripts/build-functions`). --function and --body add to it; a
    /// label given twice is refused.
    #[arg(long = "calls", value_name = "FILE")]
    pub file: Option<PathBuf>,
}

/// One label's table in a calls file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    call: String,
    body: Option<PathBuf>,
}

/// What a calls file gives, in label order.
#[derive(Debug, Default)]
pub struct CallsFile {
    /// Each label's call.
    pub mappings: Vec<Mapping>,
    /// The bodies read, by label.
    pub bodies: Vec<(String, Bytes)>,
}

/// A calls file's mappings, and its bodies read; errors name the file
/// and, where TOML's reader can, its line and field, or the label's
/// field.
pub fn read_file(path: &Path) -> Result<CallsFile> {
    let at = || format!("--calls {}", path.display());
    let meta = std::fs::metadata(path).with_context(at)?;
    if !meta.is_file() || meta.len() > MAX_CALLS_FILE {
        anyhow::bail!(
            "{}: give a regular file of at most {MAX_CALLS_FILE} bytes",
            at()
        );
    }
    let text = std::fs::read_to_string(path).with_context(at)?;
    let entries: BTreeMap<String, Entry> = toml::from_str(&text).with_context(at)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let (mut mappings, mut bodies) = (Vec::new(), Vec::new());
    for (label, entry) in entries {
        let call = entry
            .call
            .parse()
            .with_context(|| format!("{}: [{label}] call", at()))?;
        mappings.push(Mapping {
            label: label.clone(),
            call,
        });
        if let Some(body) = entry.body {
            let body =
                read_body(&dir.join(body)).with_context(|| format!("{}: [{label}] body", at()))?;
            bodies.push((label, body));
        }
    }
    Ok(CallsFile { mappings, bodies })
}

/// summary.json's record of `calls`: each label as given, its `call` and
/// `body_bytes`.
pub fn describe(calls: &Calls) -> serde_json::Map<String, serde_json::Value> {
    calls
        .iter()
        .map(|(label, call)| {
            let entry =
                serde_json::json!({"call": call.to_string(), "body_bytes": call.body().len()});
            (label.to_string(), entry)
        })
        .collect()
}

impl CallOptions {
    /// Whether every request is `spin`: no call is given.
    pub fn is_empty(&self) -> bool {
        self.functions.is_empty() && self.file.is_none()
    }

    /// The calls over the workload's `functions`, each body read; errors
    /// name the option.
    pub fn calls(&self, functions: &Functions) -> Result<Calls> {
        let CallsFile {
            mut mappings,
            bodies,
        } = match &self.file {
            Some(path) => read_file(path)?,
            None => CallsFile::default(),
        };
        let flag = if self.file.is_some() {
            "--calls or --function"
        } else {
            "--function"
        };
        mappings.extend(self.functions.iter().cloned());
        let mut calls = Calls::new(functions, mappings).context(flag)?;
        for (label, body) in bodies {
            calls
                .with_body(&label, body)
                .with_context(|| format!("--calls: [{label}] body"))?;
        }
        for file in &self.bodies {
            let body = read_body(&file.path).with_context(|| format!("--body {file}"))?;
            calls
                .with_body(&file.label, body)
                .with_context(|| format!("--body {file}"))?;
        }
        Ok(calls)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn functions(names: &[&str]) -> Functions {
        let mut f = Functions::default();
        for name in names {
            f.intern(name);
        }
        f
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A file's labels map a function and the copies of another, its
    /// bodies read relative to it; a flag adds to it.
    #[test]
    fn a_calls_file_maps_functions_and_copies_with_bodies_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "in.json", "[1, 2]");
        let file = write(
            dir.path(),
            "calls.toml",
            "[json]\ncall = \"json?n=2\"\nbody = \"in.json\"\n\n[aes]\ncall = \"aes\"\n",
        );
        let options = CallOptions {
            functions: vec!["other=hello".parse().unwrap()],
            bodies: vec![],
            file: Some(file),
        };
        let calls = options
            .calls(&functions(&["json", "aes-0", "aes-1", "other", "spun"]))
            .unwrap();
        assert_eq!(calls.of("json").unwrap().body().as_ref(), b"[1, 2]");
        assert_eq!(calls.of("json").unwrap().to_string(), "json?n=2");
        assert_eq!(calls.of("aes-1").unwrap().function(), "aes");
        assert!(calls.of("aes-0").unwrap().body().is_empty());
        assert_eq!(calls.of("other").unwrap().function(), "hello");
        assert!(calls.of("spun").is_none());
    }

    /// What is wrong is named: the file and line, the label's field, a
    /// label the file and a flag both give.
    #[test]
    fn a_bad_calls_file_is_refused_naming_its_file_line_and_label() {
        let dir = tempfile::tempdir().unwrap();
        let fs = functions(&["json"]);
        let refused = |text: &str, extra: &[&str]| {
            let options = CallOptions {
                functions: extra.iter().map(|m| m.parse().unwrap()).collect(),
                bodies: vec![],
                file: Some(write(dir.path(), "calls.toml", text)),
            };
            format!("{:#}", options.calls(&fs).unwrap_err())
        };
        let e = refused("[json]\ncall = \"json\"\nbdy = \"x\"\n", &[]);
        assert!(
            e.contains("calls.toml") && e.contains("line 3") && e.contains("bdy"),
            "{e}"
        );
        let e = refused("[json]\ncall = \"json?a b\"\n", &[]);
        assert!(e.contains("[json] call") && e.contains("spaces"), "{e}");
        let e = refused("[json]\ncall = \"json\"\n", &["json=hello"]);
        assert!(e.contains("`json` is given twice"), "{e}");
        let e = refused("[jsn]\ncall = \"json\"\n", &[]);
        assert!(e.contains("`jsn` is no function"), "{e}");
        let e = refused("[json]\ncall = \"json\"\nbody = \"missing.json\"\n", &[]);
        assert!(
            e.contains("calls.toml: [json] body") && e.contains("missing.json"),
            "{e}"
        );
        let options = CallOptions {
            file: Some(dir.path().to_path_buf()),
            ..CallOptions::default()
        };
        let e = format!("{:#}", options.calls(&fs).unwrap_err());
        assert!(e.contains("regular file"), "{e}");
    }

    /// The shipped map gives every copy of every FunctionBench function a
    /// call of the suite, each body read from the inputs beside it.
    #[test]
    fn the_functionbench_calls_map_every_copy_of_the_live_table() {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../functions/functionbench.toml");
        let options = CallOptions {
            file: Some(file),
            ..CallOptions::default()
        };
        let table = crate::cluster::live::function_table("functionbench").unwrap();
        let calls = options.calls(table.functions()).unwrap();
        assert_eq!(calls.iter().count(), 8);
        for (f, _) in table.iter() {
            let call = calls
                .of(&f.name)
                .unwrap_or_else(|| panic!("{} unmapped", f.name));
            assert!(!call.function().is_empty());
        }
        let body = |label: &str| calls.of(label).unwrap().body().len();
        assert_eq!(body("json-parsing-3"), body("aes-encryption-0"));
        assert!(body("video-encoding-9") > 0 && body("ml-inference-cnn-0") > 0);
        assert_eq!(body("matrix-multiply-5"), 0);
    }
}
