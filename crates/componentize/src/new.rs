//! `new`: a core module into a wasi:http/proxy component.

use crate::output::write_atomically;
use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use wasi_preview1_component_adapter_provider::{
    WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME, WASI_SNAPSHOT_PREVIEW1_PROXY_ADAPTER,
};
use wit_component::ComponentEncoder;

/// Turn a core module into a component and validate it.
///
/// CORE is a WASI preview 1 reactor (clang --target=wasm32-wasi
/// -mexec-model=reactor) linked with the bindings from `bindings`; their
/// component-type custom section says which world it targets. Its WASI
/// preview 1 imports are adapted to preview 2 by the proxy adapter (from
/// wasmtime 48), which needs nothing beyond wasi:http/proxy. The component
/// is validated, then written to FILE atomically.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The core module.
    #[arg(value_name = "CORE.wasm")]
    core: PathBuf,
    /// Where the component goes.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

impl Args {
    /// Encodes, validates and writes the component.
    pub fn execute(self) -> Result<()> {
        let module = std::fs::read(&self.core)
            .with_context(|| format!("cannot read {}", self.core.display()))?;
        let component = encode(&module)
            .with_context(|| format!("cannot make a component of {}", self.core.display()))?;
        write_atomically(&self.out, &component)
    }
}

/// The component of a core module, adapted with the proxy adapter and
/// validated.
fn encode(module: &[u8]) -> Result<Vec<u8>> {
    // Without the section the encoder would make a component of no world,
    // exporting nothing: valid, and of no use.
    let (with_world, _) = wit_component::metadata::decode(module)?;
    if with_world.is_none() {
        bail!(
            "it has no component-type custom section: link it with the \
             WORLD_component_type.o that `faasched-componentize bindings` writes"
        );
    }
    ComponentEncoder::default()
        .validate(true)
        .module(module)?
        .adapter(
            WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME,
            WASI_SNAPSHOT_PREVIEW1_PROXY_ADAPTER,
        )?
        .encode()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_no_module_is_named_in_the_error() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let core = dir.path().join("not-wasm.core.wasm");
        std::fs::write(&core, b"not wasm")?;
        let out = dir.path().join("out.wasm");
        let args = Args {
            core: core.clone(),
            out: out.clone(),
        };
        let message = format!("{:#}", args.execute().expect_err("not a module"));
        assert!(message.contains(&*core.to_string_lossy()), "{message}");
        assert!(!out.exists());
        Ok(())
    }

    #[test]
    fn a_module_without_a_world_is_refused() {
        // The smallest core module: the preamble alone.
        let module = b"\0asm\x01\0\0\0";
        let message = format!("{:#}", encode(module).expect_err("no world"));
        assert!(message.contains("component-type"), "{message}");
    }
}
