//! `bindings`: the C bindings of a WIT world.

use crate::output::write_atomically;
use anyhow::{Context, Result};
use std::path::PathBuf;
use wit_bindgen_core::Files;
use wit_parser::Resolve;

/// Generate the C bindings of a WIT world: WORLD.h, WORLD.c and
/// WORLD_component_type.o (an object file whose custom section tells `new`
/// which world the module targets).
///
/// The files are written into OUT, each atomically. For wasi:http/proxy
/// they are proxy.h, proxy.c and proxy_component_type.o; a function
/// includes proxy.h, defines the exported handler
/// (exports_wasi_http_incoming_handler_handle) and is compiled together
/// with proxy.c and proxy_component_type.o.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The WIT package: a folder of .wit files with its dependencies in
    /// deps/ (functions/wit).
    #[arg(long, value_name = "DIR")]
    wit: PathBuf,
    /// The world: in full, as `wasi:http/proxy` (the version may be left
    /// out where DIR holds one), or by name when it is in DIR's own package.
    #[arg(long)]
    world: String,
    /// Where the files go; created if missing.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

impl Args {
    /// Generates the bindings and writes them into `out`.
    pub fn execute(self) -> Result<()> {
        let files = generate(&self)?;
        std::fs::create_dir_all(&self.out)
            .with_context(|| format!("cannot create {}", self.out.display()))?;
        for (name, contents) in files.iter() {
            write_atomically(&self.out.join(name), contents)?;
        }
        Ok(())
    }
}

/// Parses the WIT package, selects the world and generates its C bindings.
fn generate(args: &Args) -> Result<Files> {
    let mut resolve = Resolve::default();
    let (package, _sources) = resolve
        .push_dir(&args.wit)
        .with_context(|| format!("cannot read the WIT package in {}", args.wit.display()))?;
    let world = resolve
        .select_world(&[package], Some(&args.world))
        .with_context(|| format!("no world {} in {}", args.world, args.wit.display()))?;
    let mut files = Files::default();
    wit_bindgen_c::Opts::default()
        .build()
        .generate(&mut resolve, world, &mut files)
        .with_context(|| format!("cannot generate C bindings of {}", args.world))?;
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The suite's WIT files, where scripts/build-functions takes them from.
    fn wit() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../functions/wit")
    }

    #[test]
    fn proxy_bindings_declare_the_incoming_handler() -> Result<()> {
        let out = tempfile::tempdir()?;
        Args {
            wit: wit(),
            world: "wasi:http/proxy".into(),
            out: out.path().into(),
        }
        .execute()?;
        let header = std::fs::read_to_string(out.path().join("proxy.h"))?;
        assert!(header.contains("exports_wasi_http_incoming_handler_handle("));
        assert!(out.path().join("proxy.c").is_file());
        assert!(out.path().join("proxy_component_type.o").is_file());
        Ok(())
    }

    #[test]
    fn an_unknown_world_names_itself_and_the_package() {
        let args = Args {
            wit: wit(),
            world: "no-such-world".into(),
            out: PathBuf::new(),
        };
        let message = format!("{:#}", generate(&args).err().expect("no such world"));
        assert!(message.contains("no-such-world"), "{message}");
        assert!(message.contains("functions/wit"), "{message}");
    }
}
